// pnpm bench:crd — what a CustomResourceDefinition's schema and CEL rules cost a
// write: creates of a custom object (a structural schema with types, a pattern,
// bounds, a default and two x-kubernetes-validations rules) against creates of a
// ConfigMap carrying the same payload, in one run. Latency: one create at a time,
// the two kinds interleaved so the host's noise falls on both alike. Rate: creates
// with `--concurrency` in flight, each kind in its own burst (the order alternates).
// Target (issue 22): the custom object at ≥ 0.8× the ConfigMap's rate.
// Then `kubectl api-resources` on a cold discovery cache (a new --cache-dir each
// time): its wall time and, from kubectl's -v=6 log, the requests it made.
//
//   node packages/testkit/dist/bench/crd.js [--creates=500] [--concurrency=8] [--payload=512]
//
// Build first: pnpm -s build
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ResourceRef } from '@kubit/client';
import { resources } from '@kubit/client';
import {
  benchClient,
  forEachConcurrent,
  machineHeader,
  ms,
  now,
  parseFlags,
  percentile,
  progress,
  runBench,
  sleep,
  sortedCopy,
  startBenchControlPlane,
  table,
} from './common.js';

const SCRIPT = 'bench:crd';
const exec = promisify(execFile);
const GROUP = 'bench.kubit.dev';
const WIDGETS: ResourceRef = {
  group: GROUP,
  version: 'v1',
  resource: 'widgets',
  kind: 'Widget',
  namespaced: true,
};
const CRDS: ResourceRef = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  resource: 'customresourcedefinitions',
  kind: 'CustomResourceDefinition',
  namespaced: false,
};

const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `widgets.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                required: ['size', 'owner'],
                'x-kubernetes-validations': [
                  { rule: 'self.size <= self.maxSize', message: 'size must not exceed maxSize' },
                  { rule: "self.owner.startsWith('team-')", message: 'owner must be a team' },
                ],
                properties: {
                  size: { type: 'integer', minimum: 0, maximum: 1000 },
                  maxSize: { type: 'integer', default: 100 },
                  owner: { type: 'string', pattern: '^[a-z0-9-]+$' },
                  payload: { type: 'string' },
                },
              },
            },
          },
        },
      },
    ],
  },
};

runBench(async (cleanup) => {
  const flags = parseFlags(SCRIPT, process.argv.slice(2), { creates: 500, concurrency: 8, payload: 512 });
  progress('starting the control plane');
  const { cp, storeTitle } = await startBenchControlPlane('kubit-store', 1);
  cleanup.add('control plane', () => cp.stop());
  const client = benchClient(cp.kubeconfigPath, Math.max(4, flags.concurrency));
  cleanup.add('client', () => client.close());
  await client.create(CRDS, crd as never);
  const payload = 'x'.repeat(flags.payload);
  const widget = (name: string) => ({
    apiVersion: `${GROUP}/v1`,
    kind: 'Widget',
    metadata: { name },
    spec: { size: 5, owner: 'team-bench', payload },
  });
  // The same payload under data, so both bodies carry about the same bytes.
  const configMap = (name: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name },
    data: { size: '5', owner: 'team-bench', payload },
  });
  const create = {
    widget: (ns: string, name: string) => client.create(WIDGETS, widget(name) as never, { namespace: ns }),
    configmap: (ns: string, name: string) =>
      client.create(resources.configmaps, configMap(name) as never, { namespace: ns }),
  };
  // The CRD is served once its kind is registered: retry the first create until it is.
  for (let i = 0; ; i++) {
    try {
      await create.widget('default', `warm-${i}`);
      if (i > 20) break;
    } catch (err) {
      if (i > 200) throw err;
      await sleep(50);
    }
  }
  for (let i = 0; i < 20; i++) await create.configmap('default', `warm-${i}`);
  // The rules do run: a widget that breaks one is refused, or the numbers would mean nothing.
  const refused = await client
    .create(WIDGETS, { ...widget('too-big'), spec: { size: 500, owner: 'team-bench' } } as never, {
      namespace: 'default',
    })
    .then(
      () => false,
      (err: Error) => /size must not exceed maxSize/.test(err.message),
    );
  if (!refused) throw new Error('a widget breaking a CEL rule was not refused: the schema is not applied');

  progress(`${flags.creates} creates of each, one at a time, interleaved`);
  const latency = { widget: [] as number[], configmap: [] as number[] };
  for (let i = 0; i < flags.creates; i++) {
    for (const kind of ['widget', 'configmap'] as const) {
      const t0 = now();
      await create[kind]('default', `seq-${i}`);
      latency[kind].push(now() - t0);
    }
  }

  progress(`${flags.creates} creates of each with ${flags.concurrency} in flight`);
  const rate = { widget: [] as number[], configmap: [] as number[] };
  for (let round = 0; round < 2; round++) {
    const order = round % 2 === 0 ? (['widget', 'configmap'] as const) : (['configmap', 'widget'] as const);
    for (const kind of order) {
      const t0 = now();
      const r = await forEachConcurrent(flags.creates, flags.concurrency, (i) =>
        create[kind]('default', `burst-${round}-${i}`).then(() => undefined),
      );
      if (r.errors > 0) throw new Error(`${kind} creates failed ${r.errors} times: ${r.firstError}`);
      rate[kind].push(flags.creates / ((now() - t0) / 1000));
    }
  }
  progress('kubectl api-resources on a cold cache, 5 times');
  const cold: { ms: number; requests: number }[] = [];
  for (let i = 0; i < 5; i++) {
    const cache = mkdtempSync(join(tmpdir(), 'kubit-bench-crd-kubectl-'));
    try {
      const t0 = now();
      const r = await exec(
        'kubectl',
        ['--kubeconfig', cp.kubeconfigPath, '--cache-dir', cache, '-v=6', 'api-resources'],
        { maxBuffer: 16 * 1024 * 1024 },
      );
      const elapsed = now() - t0;
      const requests = r.stderr
        .split('\n')
        .filter((l) => /\b(GET|POST|PUT|PATCH|DELETE) https:\/\//.test(l)).length;
      cold.push({ ms: elapsed, requests });
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  }
  const p = (xs: number[], q: number) => percentile(sortedCopy(xs), q);
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const rows = (['widget', 'configmap'] as const).map((k) => [
    k === 'widget' ? 'custom object (schema + 2 CEL rules)' : 'ConfigMap (same payload)',
    mean(rate[k]).toFixed(0),
    ms(p(latency[k], 50)),
    ms(p(latency[k], 99)),
  ]);
  process.stdout.write(
    `${machineHeader()}\nstore: ${storeTitle}; payload ${flags.payload} bytes; ${flags.creates} creates per run\n\n`,
  );
  process.stdout.write(
    `${table(['creates', `creates/s (${flags.concurrency} in flight)`, 'p50 ms (one at a time)', 'p99 ms'], rows)}\n`,
  );
  process.stdout.write(
    `\ncustom object rate / ConfigMap rate: ${(mean(rate.widget) / mean(rate.configmap)).toFixed(2)} (target ≥ 0.80)\n\n`,
  );
  const coldMs = cold.map((c) => c.ms);
  process.stdout.write(
    `${table(
      ['kubectl api-resources, cold cache (5 runs)', 'median ms', 'max ms', 'requests'],
      [
        [
          'wall time and requests made',
          ms(p(coldMs, 50)),
          ms(Math.max(...coldMs)),
          [...new Set(cold.map((c) => c.requests))].join('/'),
        ],
      ],
    )}\n`,
  );
});
