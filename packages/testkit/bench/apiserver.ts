// pnpm bench:apiserver — kubit-apiserver (from dist/) on a 3-member store:
// pod creates/s and latency at 1, 16 and 64 concurrent clients and paced at
// 100/s, get latency, listing 10,000 pods from the watch cache and from the
// store, watch delivery latency with 100 and 1,000 open watchers, and the
// apiserver's resident memory. Targets (issue 4): write p99 ≤ 50 ms at 100
// creates/s; watch p99 ≤ 100 ms with 1,000 watchers.
//
//   node packages/testkit/dist/bench/apiserver.js [--store=kubit-store,etcd]
//        [--members=3] [--seconds=5] [--list-pods=10000] [--watch-writes=50]
//        [--bindings=3000] [--only=creates,patches,gets,lists,watches,bindings]
//
// The bindings row is the apiserver's side of issue 6: POST pods/<name>/binding
// from 32 clients with two pod watches open (as the scheduler and bench:scheduler
// have), reported as the apiserver's CPU ms (utime+stime from /proc) per binding,
// so it survives a busy host. --only picks measurements (e.g. --only=bindings
// while profiling with KUBIT_APISERVER_CPU_PROF=<dir>).
//
// --store takes a comma-separated list: the stores are measured one after the
// other in the same run and the table puts them side by side.
// Build first: npx tsc -b packages/testkit packages/apiserver packages/store

import type { Pod } from '@kubit/api';
import { type KubeClient, resources, type Watch } from '@kubit/client';
import type { StoreProgram } from '../src/etcd.js';
import { processCpuMs } from '../src/process.js';
import {
  benchClient,
  type Cleanup,
  forEachConcurrent,
  machineHeader,
  ms,
  now,
  parseFlags,
  percentile,
  progress,
  rssMiB,
  runBench,
  sleep,
  sortedCopy,
  startBenchControlPlane,
  storeProgram,
  table,
} from './common.js';

const SCRIPT = 'bench:apiserver';
const NS = 'default';
const WATCH_NS = 'watch-bench';
const BIND_NS = 'bind-bench';

function podBody(name: string, namespace = NS): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'bench' } },
    spec: { containers: [{ name: 'c', image: 'busybox:latest', command: ['sleep', '3600'] }] },
  };
}

let seq = 0;
const nextName = (prefix: string) => `${prefix}-${(seq++).toString(36)}`;

interface Row {
  what: string;
  rate: string;
  p50: string;
  p99: string;
  /** The p99 as a number (MiB for memory rows), for the ratio between stores. */
  p99n: number;
  target: string;
  note: string;
  /** Requests answered, for the apiserver's CPU per request. */
  ops?: number;
}

/** `clients` closed loops of creates for `seconds`. */
async function createsClosedLoop(client: KubeClient, clients: number, seconds: number): Promise<Row> {
  const lat: number[] = [];
  let errors = 0;
  let firstError = '';
  const start = now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (now() < end) {
        const t0 = now();
        try {
          await client.create(resources.pods, podBody(nextName('c')), { namespace: NS });
          lat.push(now() - t0);
        } catch (err) {
          errors++;
          firstError ||= (err as Error).message;
        }
      }
    }),
  );
  const elapsed = (now() - start) / 1000;
  const s = sortedCopy(lat);
  return {
    what: `create, ${clients} client${clients > 1 ? 's' : ''}`,
    rate: `${(lat.length / elapsed).toFixed(0)}/s`,
    p50: ms(percentile(s, 50)),
    p99: ms(percentile(s, 99)),
    p99n: percentile(s, 99),
    target: '',
    note: errors ? `${errors} errors (${firstError.slice(0, 80)})` : `${lat.length} creates`,
    ops: lat.length,
  };
}

/** Open loop: a create every 1000/rate ms whatever the answers, so a slow server is not hidden. */
async function createsPaced(client: KubeClient, rate: number, seconds: number): Promise<Row> {
  const lat: number[] = [];
  let errors = 0;
  const total = Math.round(rate * seconds);
  const start = now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - now();
    if (wait > 0) await sleep(wait);
    const t0 = now();
    inflight.push(
      client.create(resources.pods, podBody(nextName('p')), { namespace: NS }).then(
        () => {
          lat.push(now() - t0);
        },
        () => {
          errors++;
        },
      ),
    );
  }
  await Promise.all(inflight);
  const elapsed = (now() - start) / 1000;
  const s = sortedCopy(lat);
  const p99 = percentile(s, 99);
  return {
    what: `create, paced ${rate}/s (open loop)`,
    rate: `${(lat.length / elapsed).toFixed(0)}/s`,
    p50: ms(percentile(s, 50)),
    p99: ms(p99),
    p99n: p99,
    target: 'p99 ≤ 50 ms',
    note: `${p99 <= 50 ? 'MET' : 'MISSED'}${errors ? `; ${errors} errors` : ''}`,
  };
}

/**
 * `clients` closed loops of merge patches, each client relabelling its own pod (no
 * write races): the update path, managedFields included.
 */
async function patches(client: KubeClient, names: string[], clients: number, seconds: number): Promise<Row> {
  const lat: number[] = [];
  let errors = 0;
  let firstError = '';
  const start = now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, id) => {
      const name = names[id % names.length];
      for (let i = 0; now() < end; i++) {
        const t0 = now();
        try {
          await client.patch(
            resources.pods,
            name,
            { metadata: { labels: { round: String(i) } } },
            { namespace: NS },
          );
          lat.push(now() - t0);
        } catch (err) {
          errors++;
          firstError ||= (err as Error).message;
        }
      }
    }),
  );
  const elapsed = (now() - start) / 1000;
  const s = sortedCopy(lat);
  return {
    what: `merge patch, ${clients} clients`,
    rate: `${(lat.length / elapsed).toFixed(0)}/s`,
    p50: ms(percentile(s, 50)),
    p99: ms(percentile(s, 99)),
    p99n: percentile(s, 99),
    target: '',
    note: errors ? `${errors} errors (${firstError.slice(0, 80)})` : `${lat.length} patches`,
    ops: lat.length,
  };
}

async function gets(client: KubeClient, names: string[], clients: number, seconds: number): Promise<Row> {
  const lat: number[] = [];
  let errors = 0;
  const start = now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, id) => {
      for (let i = id; now() < end; i += clients) {
        const t0 = now();
        try {
          await client.get(resources.pods, names[i % names.length], { namespace: NS });
          lat.push(now() - t0);
        } catch {
          errors++;
        }
      }
    }),
  );
  const elapsed = (now() - start) / 1000;
  const s = sortedCopy(lat);
  return {
    what: `get, ${clients} clients`,
    rate: `${(lat.length / elapsed).toFixed(0)}/s`,
    p50: ms(percentile(s, 50)),
    p99: ms(percentile(s, 99)),
    p99n: percentile(s, 99),
    target: '',
    note: errors ? `${errors} errors` : '',
  };
}

/** Lists every pod of the namespace in one request (no limit), `times` times; a failure is a finding, not a stop. */
async function lists(client: KubeClient, fromCache: boolean, expect: number, times: number): Promise<Row> {
  const lat: number[] = [];
  let items = 0;
  let errors = 0;
  let firstError = '';
  for (let i = 0; i < times; i++) {
    const t0 = now();
    try {
      const list = await client.list(resources.pods, {
        namespace: NS,
        ...(fromCache ? { resourceVersion: '0' } : {}),
      });
      lat.push(now() - t0);
      items = list.items.length;
    } catch (err) {
      errors++;
      firstError ||= (err as Error).message;
    }
  }
  const s = sortedCopy(lat);
  return {
    what: `list all pods (≥ ${expect}), ${fromCache ? 'from the cache (resourceVersion=0)' : 'from the store (no resourceVersion)'}`,
    rate: `${items} items`,
    p50: ms(percentile(s, 50)),
    p99: s.length ? `${ms(s[s.length - 1])} (max of ${s.length})` : '-',
    p99n: s.length ? s[s.length - 1] : Number.NaN,
    target: '',
    note: [
      errors ? `${errors} of ${times} FAILED: ${firstError.slice(0, 140)}` : '',
      !errors && items < expect ? `only ${items} of ${expect} pods listed` : '',
    ]
      .filter(Boolean)
      .join('; '),
  };
}

/** How long after the store lists the apiserver takes to serve a write again (bounded at 60 s). */
async function availableAfter(client: KubeClient): Promise<Row> {
  const t0 = now();
  let failures = 0;
  let firstError = '';
  while (now() - t0 < 60_000) {
    try {
      await client.create(resources.pods, podBody(nextName('after')), { namespace: NS });
      break;
    } catch (err) {
      failures++;
      firstError ||= (err as Error).message;
      await sleep(250);
    }
  }
  const waited = now() - t0;
  return {
    what: 'first create after the store lists',
    rate: '',
    p50: '',
    p99: ms(waited),
    p99n: waited,
    target: '',
    note: failures ? `${failures} creates FAILED first: ${firstError.slice(0, 120)}` : '',
  };
}

/**
 * `watchers` watches on an empty namespace; a sentinel write proves every one is
 * established, then `writes` creates at 20/s, each timed to each watcher's ADDED
 * event from the write's response (an event that beats the response counts as
 * 0 ms) and from the moment the write was sent.
 */
async function watchDelivery(
  kubeconfig: string,
  watchers: number,
  writes: number,
  apiserverPid: number,
): Promise<{ rows: Row[]; rss: number }> {
  const watchClient = benchClient(kubeconfig, watchers + 16);
  const writer = benchClient(kubeconfig, 16);
  const sentAt = new Map<string, number>();
  const responseAt = new Map<string, number>();
  const fromResponse: number[] = [];
  const fromSent: number[] = [];
  const seen = new Map<string, number>();
  const beforeResponse = new Map<string, number>();
  let closedEarly = 0;
  const list = await writer.list(resources.pods, { namespace: WATCH_NS, limit: 1 });
  const open: Watch<Pod>[] = [];
  try {
    for (let i = 0; i < watchers; i++) {
      open.push(
        watchClient.watch<Pod>(resources.pods, {
          namespace: WATCH_NS,
          resourceVersion: list.metadata.resourceVersion,
          onEvent: (ev) => {
            if (ev.type !== 'ADDED') return;
            const t = now();
            const name = ev.object.metadata?.name ?? '';
            seen.set(name, (seen.get(name) ?? 0) + 1);
            const sent = sentAt.get(name);
            if (sent !== undefined) fromSent.push(t - sent);
            const resp = responseAt.get(name);
            if (resp !== undefined) fromResponse.push(t - resp);
            else if (sent !== undefined) beforeResponse.set(name, (beforeResponse.get(name) ?? 0) + 1);
          },
          onClose: (err) => {
            if (err) closedEarly++;
          },
        }),
      );
    }
    const sentinel = nextName('sentinel');
    await writer.create(resources.pods, podBody(sentinel, WATCH_NS), { namespace: WATCH_NS });
    const deadline = now() + 60_000;
    while ((seen.get(sentinel) ?? 0) < watchers && now() < deadline) await sleep(50);
    const established = seen.get(sentinel) ?? 0;
    if (established < watchers) progress(`only ${established} of ${watchers} watchers saw the sentinel`);
    const rate = 20;
    const cpuStart = cpuMs(apiserverPid);
    const start = now();
    const inflight: Promise<void>[] = [];
    for (let i = 0; i < writes; i++) {
      const wait = start + (i * 1000) / rate - now();
      if (wait > 0) await sleep(wait);
      const name = nextName('w');
      sentAt.set(name, now());
      inflight.push(
        writer.create(resources.pods, podBody(name, WATCH_NS), { namespace: WATCH_NS }).then(() => {
          responseAt.set(name, now());
          for (let k = 0; k < (beforeResponse.get(name) ?? 0); k++) fromResponse.push(0);
        }),
      );
    }
    await Promise.all(inflight);
    const expected = writes * established;
    const waitEnd = now() + 30_000;
    while (fromSent.length < expected && now() < waitEnd) await sleep(50);
    // The apiserver's CPU per write, fan-out to every watcher included (survives a busy host).
    const cpuPerWrite = (cpuMs(apiserverPid) - cpuStart) / writes;
    const rss = rssMiB(apiserverPid);
    const early = [...beforeResponse.values()].reduce((a, b) => a + b, 0);
    const r = sortedCopy(fromResponse);
    const s = sortedCopy(fromSent);
    const missing = expected - fromSent.length;
    const big = watchers >= 1000;
    const trouble = [
      established < watchers ? `${watchers - established} watchers never established` : '',
      missing > 0 ? `${missing} events missing after 30 s` : '',
      closedEarly ? `${closedEarly} watches closed with an error` : '',
    ].filter(Boolean);
    const rows: Row[] = [
      {
        what: `watch, ${watchers} watchers: write response → event`,
        rate: `${fromResponse.length} events`,
        p50: ms(percentile(r, 50)),
        p99: ms(percentile(r, 99)),
        p99n: percentile(r, 99),
        target: big ? 'p99 ≤ 100 ms' : '',
        note: [
          big ? (percentile(r, 99) <= 100 && missing === 0 ? 'MET' : 'MISSED') : '',
          `${early} events came before the response (0 ms)`,
          ...trouble,
        ]
          .filter(Boolean)
          .join('; '),
      },
      {
        what: `watch, ${watchers} watchers: write sent → event`,
        rate: `${writes} writes at ${rate}/s`,
        p50: ms(percentile(s, 50)),
        p99: ms(percentile(s, 99)),
        p99n: percentile(s, 99),
        target: big ? 'p99 ≤ 100 ms (stricter)' : '',
        note: [
          big ? (percentile(s, 99) <= 100 && missing === 0 ? 'MET' : 'MISSED') : '',
          `apiserver ${cpuPerWrite.toFixed(1)} CPU ms per write and its ${established} events`,
        ]
          .filter(Boolean)
          .join('; '),
      },
    ];
    return { rows, rss };
  } finally {
    for (const w of open) w.stop();
    watchClient.close();
    writer.close();
  }
}

/** CPU ms (user + system) a process has used so far; NaN once it is gone. */
function cpuMs(pid: number): number {
  return processCpuMs(pid)?.self ?? Number.NaN;
}

/**
 * `count` pending pods, two watches on their namespace (a scheduler's and an
 * observer's), then a binding per pod from 32 clients: the apiserver's CPU per
 * binding, from the first binding until both watches saw every pod bound.
 */
async function bindings(kubeconfig: string, count: number, apiserverPid: number): Promise<Row> {
  const writer = benchClient(kubeconfig, 64);
  const watchClient = benchClient(kubeconfig, 4);
  const open: Watch<Pod>[] = [];
  try {
    await writer.create(resources.namespaces, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: BIND_NS },
    });
    const names = Array.from({ length: count }, (_, i) => `b-${i}`);
    const uids = new Map<string, string>();
    const made = await forEachConcurrent(count, 64, async (i) => {
      const p = await writer.create<Pod>(resources.pods, podBody(names[i], BIND_NS), { namespace: BIND_NS });
      uids.set(names[i], p.metadata?.uid ?? '');
    });
    if (made.errors) throw new Error(`${made.errors} pod creates failed: ${made.firstError}`);
    const list = await writer.list(resources.pods, { namespace: BIND_NS, limit: 1 });
    const bound = [new Set<string>(), new Set<string>()];
    for (const seen of bound) {
      open.push(
        watchClient.watch<Pod>(resources.pods, {
          namespace: BIND_NS,
          resourceVersion: list.metadata.resourceVersion,
          maxBuffered: 100_000,
          onEvent: (ev) => {
            if (ev.type !== 'ERROR' && ev.object.spec?.nodeName) seen.add(ev.object.metadata?.name ?? '');
          },
        }),
      );
    }
    await sleep(1000);
    // What the apiserver spends doing nothing (timers, store keep-alives), to report beside.
    const idle0 = cpuMs(apiserverPid);
    await sleep(2000);
    const idleRate = (cpuMs(apiserverPid) - idle0) / 2;
    // The monotonic clock, in µs, as a CPU profile's timestamps: to cut this phase out of one.
    const window = () => (process.hrtime.bigint() / 1000n).toString();
    progress(`binding ${count} pods (profile window from ${window()})`);
    const cpu0 = cpuMs(apiserverPid);
    const t0 = now();
    const r = await forEachConcurrent(count, 32, async (i) => {
      await writer.create(
        resources.pods,
        {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name: names[i], namespace: BIND_NS, uid: uids.get(names[i]) },
          target: { apiVersion: 'v1', kind: 'Node', name: `node-${i % 100}` },
        } as Parameters<KubeClient['create']>[1],
        { namespace: BIND_NS, subresource: 'binding' },
      );
    });
    const deadline = now() + 60_000;
    while (bound.some((b) => b.size < count) && now() < deadline) await sleep(20);
    const cpu = cpuMs(apiserverPid) - cpu0;
    const elapsed = (now() - t0) / 1000;
    progress(`bindings done (profile window to ${window()})`);
    const perBinding = cpu / Math.max(1, count - r.errors);
    return {
      what: `pods/binding, 32 clients, 2 pod watches: apiserver CPU per binding`,
      rate: `${(count / elapsed).toFixed(0)}/s`,
      p50: '',
      p99: '',
      p99n: perBinding,
      target: '',
      note: [
        `${perBinding.toFixed(2)} CPU ms per binding (${cpu.toFixed(0)} ms for ${count} in ${elapsed.toFixed(1)} s; idle ${idleRate.toFixed(0)} ms/s)`,
        r.errors ? `${r.errors} bindings FAILED: ${(r.firstError ?? '').slice(0, 120)}` : '',
        ...bound.map((b, i) => (b.size < count ? `watch ${i} saw only ${b.size} bound` : '')),
      ]
        .filter(Boolean)
        .join('; '),
    };
  } finally {
    for (const w of open) w.stop();
    watchClient.close();
    writer.close();
  }
}

function memoryRow(what: string, mib: number): Row {
  return { what, rate: '', p50: '', p99: `${mib.toFixed(0)} MiB`, p99n: mib, target: '', note: '' };
}

interface Flags {
  members: number;
  seconds: number;
  'list-pods': number;
  'watch-writes': number;
  bindings: number;
  only: string;
}

/**
 * The row with the apiserver's CPU (utime+stime) per request in its note: unlike
 * rates and latencies, it holds on a host busy with other work.
 */
async function withCpu(pid: number, measure: () => Promise<Row>): Promise<Row> {
  const cpu0 = cpuMs(pid);
  const row = await measure();
  const cpu = cpuMs(pid) - cpu0;
  if (row.ops) row.note += `; apiserver ${(cpu / row.ops).toFixed(2)} CPU ms each`;
  return row;
}

/** Every measurement on one control plane over `program`; stops it before returning. */
async function measureOn(
  program: StoreProgram,
  flags: Flags,
  cleanup: Cleanup,
): Promise<{ title: string; rows: Row[] }> {
  progress(`starting the control plane on ${program} ×${flags.members}`);
  const { cp, storeTitle } = await startBenchControlPlane(program, flags.members);
  // Also on Ctrl-C; stopping twice is harmless.
  cleanup.add(`control plane on ${program}`, () => cp.stop());
  const apiserverPid = cp.apiserver.pid;
  const client = benchClient(cp.kubeconfigPath, 128);
  const rows: Row[] = [];
  try {
    rows.push(memoryRow('apiserver VmRSS at start', rssMiB(apiserverPid)));
    const only = new Set(flags.only.split(',').map((x) => x.trim()));
    const wants = (phase: string) => only.has('all') || only.has(phase);
    progress('warm-up');
    await forEachConcurrent(100, 8, async () => {
      await client.create(resources.pods, podBody(nextName('warm')), { namespace: NS });
    });
    if (wants('creates')) {
      for (const c of [1, 16, 64]) {
        progress(`creates with ${c} clients for ${flags.seconds} s`);
        rows.push(await withCpu(apiserverPid, () => createsClosedLoop(client, c, flags.seconds)));
      }
      const pacedSeconds = Math.max(flags.seconds, 10);
      progress(`creates paced at 100/s for ${pacedSeconds} s`);
      rows.push(await createsPaced(client, 100, pacedSeconds));
    }
    if (wants('patches')) {
      const existing = await client.list<Pod>(resources.pods, { namespace: NS, resourceVersion: '0' });
      const names = existing.items.slice(0, 16).map((p) => p.metadata?.name ?? '');
      progress(`merge patches with 16 clients for ${flags.seconds} s`);
      rows.push(await withCpu(apiserverPid, () => patches(client, names, 16, flags.seconds)));
    }
    if (wants('gets')) {
      const existing = await client.list<Pod>(resources.pods, { namespace: NS, resourceVersion: '0' });
      const names = existing.items.map((p) => p.metadata?.name ?? '');
      progress(`gets with 16 clients for ${flags.seconds} s`);
      rows.push(await gets(client, names, 16, flags.seconds));
    }
    if (wants('lists')) {
      const existing = await client.list<Pod>(resources.pods, { namespace: NS, resourceVersion: '0' });
      const missing = flags['list-pods'] - existing.items.length;
      if (missing > 0) {
        progress(`topping up to ${flags['list-pods']} pods (${missing} creates, 64 clients)`);
        const t0 = now();
        const r = await forEachConcurrent(missing, 64, async () => {
          await client.create(resources.pods, podBody(nextName('l')), { namespace: NS });
        });
        if (r.errors) progress(`${r.errors} creates failed while topping up: ${r.firstError}`);
        progress(`topped up at ${(missing / ((now() - t0) / 1000)).toFixed(0)}/s`);
      }
      progress('list from the cache');
      rows.push(await lists(client, true, flags['list-pods'], 5));
      rows.push(
        memoryRow(`apiserver VmRSS with ≥ ${flags['list-pods']} pods, after listing`, rssMiB(apiserverPid)),
      );
    }
    if (wants('watches')) {
      await client.create(resources.namespaces, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: WATCH_NS },
      });
      for (const w of [100, 1000]) {
        progress(`watch delivery with ${w} watchers`);
        const r = await watchDelivery(cp.kubeconfigPath, w, flags['watch-writes'], apiserverPid);
        rows.push(...r.rows);
        rows.push(memoryRow(`apiserver VmRSS with ${w} watchers open`, r.rss));
      }
    }
    if (wants('bindings') && flags.bindings > 0) {
      progress(`bindings of ${flags.bindings} pods`);
      rows.push(await bindings(cp.kubeconfigPath, flags.bindings, apiserverPid));
    }
    if (wants('lists')) {
      // Last: a list this big through the store has failed and left the apiserver's
      // store client refusing every request for a while, which must not spoil the rest.
      progress('list from the store');
      rows.push(await lists(client, false, flags['list-pods'], 5));
      rows.push(await availableAfter(client));
    }
    const title = cp.apiserver.running ? storeTitle : `${storeTitle}; the apiserver EXITED during the run`;
    return { title, rows };
  } finally {
    client.close();
    await cp.stop();
  }
}

runBench(async (cleanup) => {
  const flags = parseFlags(SCRIPT, process.argv.slice(2), {
    store: 'kubit-store,etcd',
    members: 3,
    seconds: 5,
    'list-pods': 10_000,
    'watch-writes': 50,
    bindings: 3000,
    only: 'all',
  });
  const programs = flags.store.split(',').map((s) => storeProgram(SCRIPT, s.trim()));
  const header = machineHeader();
  const runs: { title: string; rows: Row[] }[] = [];
  for (const p of programs) runs.push(await measureOn(p, flags, cleanup));

  // One row per measurement, the stores side by side, and the first store's p99 over the second's.
  const head = ['measurement', 'target'];
  for (const r of runs) head.push(`${r.title.split(' (')[0]}: rate`, 'p50 ms', 'p99 ms');
  if (runs.length === 2) head.push('p99 ratio');
  head.push('note');
  const body = runs[0].rows.map((row, i) => {
    const cells = [row.what, row.target];
    for (const r of runs) {
      const x = r.rows[i];
      cells.push(x?.rate ?? '', x?.p50 ?? '', x?.p99 ?? '');
    }
    if (runs.length === 2) {
      const a = row.p99n;
      const b = runs[1].rows[i]?.p99n ?? Number.NaN;
      cells.push(Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : '');
    }
    cells.push(
      runs
        .map((r) =>
          r.rows[i]?.note ? `${runs.length > 1 ? `${r.title.split(' ')[0]}: ` : ''}${r.rows[i].note}` : '',
        )
        .filter(Boolean)
        .join(' / '),
    );
    return cells;
  });
  process.stdout.write(`${header}\n\n`);
  process.stdout.write(
    `kubit-apiserver on ${runs.map((r) => r.title).join(', then on ')}; the load comes from one Node process over HTTPS keep-alive (@kubit/client); latencies in ms; ratio = ${runs.length === 2 ? `${runs[0].title.split(' (')[0]} ÷ ${runs[1].title.split(' (')[0]}` : '-'}\n\n`,
  );
  process.stdout.write(`${table(head, body)}\n`);
});
