// The one-machine cluster launcher: `./scripts/up` and `./scripts/down` run src/main.ts's build.
export { type ClusterPorts, type ClusterSettings, clusterPorts, DEFAULT_SETTINGS } from './config.js';
export { type ClusterLayout, clusterLayout, type NodeLayout } from './layout.js';
export { publishRegistryHosting, REGISTRY_HOSTING, registryHostingData } from './registry-hosting.js';
