// pnpm bench:fieldmanager — what managedFields cost a write, in process: recording a
// create and a label patch (Update), and a server-side apply, for a defaulted pod as
// the apiserver stores it, side by side with what every write of that pod already
// does (a structuredClone and a JSON.stringify of it), as ratios. CPU time
// (process.cpuUsage), so the numbers hold on a busy host.
//
//   node packages/apiserver/dist/bench/fieldmanager.js [--iterations=20000]

import { cpus, loadavg } from 'node:os';
import { applyConfiguration, recordUpdate, type Writer } from '../src/fieldmanager/field-manager.js';
import { builtinKinds } from '../src/kinds/index.js';
import type { KObject } from '../src/storage.js';

const arg = process.argv.find((a) => a.startsWith('--iterations='));
const N = arg ? Number(arg.split('=')[1]) : 20_000;

const pods = builtinKinds().find((k) => k.kind === 'Pod' && k.group === '');
if (!pods) throw new Error('no Pod kind');

function pod(): KObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'p',
      namespace: 'default',
      uid: '6f1c3a52-0000-4000-8000-000000000000',
      creationTimestamp: '2026-01-01T00:00:00Z',
      labels: { app: 'bench' },
    },
    spec: {
      containers: [
        {
          name: 'c',
          image: 'busybox:latest',
          command: ['sleep', '3600'],
          imagePullPolicy: 'Always',
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          resources: {},
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler',
      securityContext: {},
      enableServiceLinks: true,
      priority: 0,
      tolerations: [
        {
          key: 'node.kubernetes.io/not-ready',
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: 300,
        },
        {
          key: 'node.kubernetes.io/unreachable',
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: 300,
        },
      ],
    },
    status: { phase: 'Pending', qosClass: 'BestEffort' },
  };
}

const T0 = '2026-01-01T00:00:00Z';
const T1 = '2026-01-01T00:00:01Z';
const who: Writer = { manager: 'bench', apiVersion: 'v1', subresource: '' };

/** CPU µs per call, after a warm-up. */
function cpuMicros(fn: (i: number) => void): number {
  for (let i = 0; i < Math.min(N, 2000); i++) fn(i);
  const c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) fn(i);
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / N;
}

const live = pod();
recordUpdate(pods, undefined, live, { ...who, manager: 'kubectl-create' }, T0);
const patched = structuredClone(live);
(patched.metadata?.labels as Record<string, string>).round = '1';

const baseline = cpuMicros(() => {
  JSON.stringify(structuredClone(live));
});
const rows: [string, number][] = [
  [
    'create: recordUpdate from the zero object',
    cpuMicros(() => recordUpdate(pods, undefined, pod(), who, T0)) - cpuMicros(() => pod()),
  ],
  [
    'label patch: recordUpdate',
    cpuMicros(() => {
      const n = { ...patched, metadata: { ...patched.metadata } };
      recordUpdate(pods, live, n, who, T1);
    }),
  ],
  [
    'server-side apply of one label: applyConfiguration',
    cpuMicros((i) =>
      applyConfiguration(
        pods,
        live,
        { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', labels: { round: String(i) } } },
        { ...who, manager: 'applier' },
        false,
        T1,
      ),
    ),
  ],
];

const la = loadavg()
  .map((x) => x.toFixed(2))
  .join(' ');
process.stdout.write(
  `${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load average ${la}; ${N} iterations; CPU µs per call\n\n`,
);
process.stdout.write(
  '| field management | µs | peer: structuredClone + JSON.stringify of the pod, µs | ratio |\n',
);
process.stdout.write('| --- | --- | --- | --- |\n');
for (const [what, us] of rows) {
  process.stdout.write(
    `| ${what} | ${us.toFixed(1)} | ${baseline.toFixed(1)} | ${(us / baseline).toFixed(2)}× |\n`,
  );
}
