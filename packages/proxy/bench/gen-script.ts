// Writes the full-replace script the planner plans for S Services × E endpoints, to time nft by hand:
//   node --conditions=kubit-source --import tsx packages/proxy/bench/gen-script.ts S E [affinity] > x.nft
//   ip netns add t; time ip netns exec t nft -f x.nft; ip netns del t

import type { EndpointSlice, Service } from '@kubit/api';
import { formatIPv4, SERVICE_NAME_LABEL } from '@kubit/api';
import { planRuleset } from '../src/planner.js';
import { fullScript } from '../src/ruleset.js';

const S = Number(process.argv[2] ?? 1000);
const E = Number(process.argv[3] ?? 10);
const affinity = process.argv[4] === 'affinity';
const services: Service[] = [];
const slices: EndpointSlice[] = [];
let n = 1;
for (let i = 0; i < S; i++) {
  const name = `svc-${i}`;
  services.push({
    metadata: { name, namespace: 'default' },
    spec: {
      clusterIP: formatIPv4((10 << 24) + (96 << 16) + 1000 + i),
      ports: [{ name: 'http', port: 80 }],
      ...(affinity ? { sessionAffinity: 'ClientIP' } : {}),
    },
  });
  slices.push({
    metadata: { name: `${name}-1`, namespace: 'default', labels: { [SERVICE_NAME_LABEL]: name } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: Array.from({ length: E }, () => ({
      addresses: [formatIPv4(((10 << 24) + (200 << 16) + n++) >>> 0)],
      nodeName: 'bench-node',
      conditions: { ready: true },
    })),
  });
}
const t0 = performance.now();
const r = planRuleset(services, slices, {
  nodeName: 'bench-node',
  clusterCidrs: ['10.200.0.0/13'],
  nodePortAddresses: [],
  masqueradeAll: false,
});
const s = fullScript(r);
process.stderr.write(
  `plan+script ${(performance.now() - t0).toFixed(0)} ms, ${r.chains.size} chains, ${s.length} bytes\n`,
);
process.stdout.write(s);
