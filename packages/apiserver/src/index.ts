// kubit-apiserver as a library: start it in-process (tests, benchmarks) or read its parts.
export { type ApiServerOptions, type RunningApiServer, startApiServer } from './apiserver.js';
export { builtinKinds, type KindDef, KindRegistry } from './kinds/index.js';
export { kubeletAddress } from './logs.js';
