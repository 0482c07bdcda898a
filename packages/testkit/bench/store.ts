// pnpm bench:store — kubit-store against a real etcd 3.4, side by side in one
// run (both clusters up, taking turns row by row), same machine, same disk,
// same client (the npm etcd3 client), same
// 256-byte values and sequential keys, for several numbers of concurrent
// clients and four workloads:
//   put           puts of sequential keys
//   put-1conn     puts by 64 clients over ONE connection to one follower (as
//                 the apiserver talks to the store), whatever --clients says
//   range-linear  linearizable single-key ranges (ReadIndex on kubit-store)
//   range-serial  serializable single-key ranges (member-local)
//   watch         put-to-event latency seen by --watchers watchers of the prefix
//                 (ops/s: puts per second until the last event reached every watcher)
// and each store's resident memory (every member, after its rows), and the
// CPU time the members spent per operation (summed over the members, beyond
// their idle rate measured just before, from /proc: a measure that survives a
// busy machine better than wall times), and the CPU time the client (this
// process) spent per operation: the client shares the machine's cores, so a
// store whose answers cost the client more CPU is slower for it too.
//
//   node packages/testkit/dist/bench/store.js [--clients=1,16,128,512]
//        [--seconds=3] [--warmup=1] [--value-bytes=256] [--members=3] [--watchers=100]
//        [--workloads=put,range-linear,range-serial,watch] [--programs=etcd,kubit-store]
//
// kubit-store runs from its dist/ (run `pnpm build` first); KUBIT_STORE_MAIN
// names another build of main.js (to compare a before and an after), and
// KUBIT_STORE_CPU_PROF=<dir> has every member write a CPU profile there
// (the members inherit the variable; see packages/store/src/profile.ts).
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Etcd3 } from 'etcd3';
import { type StoreCluster as Cluster, etcdInstalled, StoreCluster, type StoreProgram } from '../src/etcd.js';
import { daemonCommand, processCpuMs } from '../src/process.js';
import { machineHeader, ms, now, percentile, progress, rssMiB, sleep, table, UsageError } from './common.js';

const WORKLOADS = ['put', 'put-1conn', 'range-linear', 'range-serial', 'watch'] as const;
/** The put-1conn row's clients, all on one connection. */
const ONE_CONNECTION_CLIENTS = 64;
type Workload = (typeof WORKLOADS)[number];
const PROGRAMS: readonly StoreProgram[] = ['etcd', 'kubit-store'];
/** Keys the range workloads read (written once before them). */
const READ_KEYS = 1000;

interface Options {
  clients: number[];
  seconds: number;
  /** Unmeasured seconds of each row's operations before it is measured (0: none). */
  warmup: number;
  valueBytes: number;
  members: number;
  watchers: number;
  workloads: Workload[];
  programs: StoreProgram[];
}

function list(name: string, value: string): string[] {
  const items = value.split(',').filter((s) => s !== '');
  if (items.length === 0) throw new UsageError(`bench:store: --${name} needs at least one value`);
  return items;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = {
    clients: [1, 16, 128, 512],
    seconds: 3,
    warmup: 1,
    valueBytes: 256,
    members: 3,
    watchers: 100,
    workloads: [...WORKLOADS],
    programs: [...PROGRAMS],
  };
  for (const arg of argv) {
    const m = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (!m) throw new UsageError(`bench:store: malformed argument "${arg}" (expected --name=value)`);
    const [, name, value] = m;
    const n = Number(value);
    if (name === 'clients') opts.clients = list(name, value).map(Number);
    else if (name === 'seconds' && n > 0) opts.seconds = n;
    else if (name === 'warmup' && n >= 0) opts.warmup = n;
    else if (name === 'value-bytes' && n > 0) opts.valueBytes = n;
    else if (name === 'members' && Number.isInteger(n) && n > 0) opts.members = n;
    else if (name === 'watchers' && Number.isInteger(n) && n > 0) opts.watchers = n;
    else if (name === 'workloads') {
      const ws = list(name, value);
      const bad = ws.find((w) => !(WORKLOADS as readonly string[]).includes(w));
      if (bad) throw new UsageError(`bench:store: unknown workload "${bad}"; known: ${WORKLOADS.join(',')}`);
      opts.workloads = ws as Workload[];
    } else if (name === 'programs') {
      const ps = list(name, value);
      const bad = ps.find((p) => !(PROGRAMS as readonly string[]).includes(p));
      if (bad) throw new UsageError(`bench:store: unknown program "${bad}"; known: ${PROGRAMS.join(',')}`);
      opts.programs = ps as StoreProgram[];
    } else
      throw new UsageError(
        `bench:store: unknown or bad argument ${arg} (see the comment at the top of bench/store.ts)`,
      );
  }
  if (opts.clients.some((c) => !Number.isInteger(c) || c < 1 || c > 4096))
    throw new UsageError('bench:store: --clients takes integers in [1, 4096]');
  return opts;
}

/** kubit-store's built entry point (benchmarks run dist/, never sources). */
function storeCommand(): { command: string; args: string[] } {
  const cmd = daemonCommand('store', 'main.ts');
  const override = process.env.KUBIT_STORE_MAIN;
  if (override) cmd.args[cmd.args.length - 1] = override;
  const main = cmd.args[cmd.args.length - 1];
  if (!existsSync(main)) throw new UsageError(`${main} is missing: run "pnpm build" first`);
  return cmd;
}

interface Row {
  program: StoreProgram;
  workload: Workload;
  clients: number;
  ops: number;
  errors: number;
  opsPerSec: number;
  p50: number;
  p99: number;
  /** CPU ms the members spent per operation beyond their idle rate, summed over them (NaN if unknown). */
  cpuPerOp: number;
  /** CPU ms this process (the etcd3 client, shared by both stores) spent per operation. */
  clientCpuPerOp: number;
}

/** CPU ms (user + system) this process has used so far. */
function ownCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** CPU ms (user + system) a process has used so far; NaN when it cannot be read. */
function cpuMs(pid: number | undefined): number {
  return (pid === undefined ? undefined : processCpuMs(pid)?.self) ?? Number.NaN;
}

function clusterCpuMs(cluster: Cluster): number {
  return cluster.members.reduce((sum, m) => sum + cpuMs(m.process?.pid), 0);
}

interface Run {
  latencies: number[];
  errors: number;
  elapsed: number;
}

/** `clients` loops calling `op(client, i)` for `seconds`, spread over a few connections. */
async function loop(
  pool: Etcd3[],
  clients: number,
  seconds: number,
  op: (client: Etcd3, id: number, i: number) => Promise<unknown>,
): Promise<Run> {
  const latencies: number[] = [];
  let errors = 0;
  const start = now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, id) => {
      const client = pool[id % pool.length];
      for (let i = 0; now() < end; i++) {
        const t0 = now();
        try {
          await op(client, id, i);
          latencies.push(now() - t0);
        } catch {
          errors++;
          // A failing store must not turn the loop into a busy spin.
          await sleep(10);
        }
      }
    }),
  );
  return { latencies, errors, elapsed: (now() - start) / 1000 };
}

/** Watchers on one prefix; the latency of a put is measured at every watcher that sees it. */
async function watchRun(
  pool: Etcd3[],
  clients: number,
  opts: Options,
  value: Buffer,
  round: number,
): Promise<Run> {
  const prefix = `bench/watch/${round}/`;
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  let lastEventAt = 0;
  const watchers = await Promise.all(
    Array.from({ length: opts.watchers }, (_, i) => {
      const w = pool[i % pool.length].watch().prefix(prefix).create();
      return w.then((watcher) =>
        watcher.on('put', (kv) => {
          const t0 = sentAt.get(kv.key.toString());
          if (t0 === undefined) return;
          lastEventAt = now();
          latencies.push(lastEventAt - t0);
        }),
      );
    }),
  );
  const start = now();
  const run = await loop(pool, clients, opts.seconds, (client, id, i) => {
    const key = `${prefix}${id}/${i}`;
    sentAt.set(key, now());
    return client.put(key).value(value).exec();
  });
  // Events still on their way count too (but not forever).
  const expected = run.latencies.length * opts.watchers;
  for (let waited = 0; latencies.length < expected && waited < 3000; waited += 50) await sleep(50);
  await Promise.all(watchers.map((w) => w.cancel().catch(() => undefined)));
  return {
    latencies,
    errors: run.errors + (expected - Math.min(expected, latencies.length)),
    // The row's work is done when the watchers have it: a store that holds
    // events back past the last put must not look faster for it (the client
    // that decodes them shares the machine with the one that puts).
    elapsed: Math.max(run.elapsed, (lastEventAt - start) / 1000),
  };
}

async function measure(
  cluster: Cluster,
  workload: Workload,
  clients: number,
  opts: Options,
  round: number,
): Promise<Row> {
  let hosts = cluster.endpoints.map((e) => `http://${e}`);
  if (workload === 'put-1conn') {
    // One follower (the leader when there is no other): its answers wait for the leader's commit.
    const lead = await cluster.leaderIndex();
    const follower = cluster.members[(Math.max(lead, 0) + 1) % cluster.members.length];
    hosts = [`http://${follower.endpoint}`];
  }
  const connections = workload === 'put-1conn' ? 1 : Math.min(clients, 8);
  const pool = Array.from({ length: connections }, () => new Etcd3({ hosts }));
  const value = Buffer.alloc(opts.valueBytes, 'x');
  try {
    const putUnder = (prefix: string) => (c: Etcd3, id: number, i: number) =>
      c.put(`${prefix}${id}/${i}`).value(value).exec();
    const serializable = workload === 'range-serial';
    const read = (c: Etcd3, id: number, i: number) =>
      c
        .get(`bench/read/${(id * 7919 + i) % READ_KEYS}`)
        .serializable(serializable)
        .buffer();
    // Warm up, unmeasured: the row's own operations (puts for a watch row)
    // for --warmup seconds, on every connection. Otherwise whichever rows come
    // first after a quiet spell pay for V8's JIT still compiling kubit-store's
    // code and for this VM's slow wake-ups from idle, which hit both stores.
    await Promise.all(pool.map((c, i) => c.put(`bench/warm/${i}`).value(value)));
    if (opts.warmup > 0) {
      const ops =
        workload.startsWith('put') || workload === 'watch' ? putUnder(`bench/warm/${round}/`) : read;
      await loop(pool, clients, opts.warmup, ops);
    }
    const cpu0 = clusterCpuMs(cluster);
    const client0 = ownCpuMs();
    let run: Run;
    if (workload.startsWith('put'))
      run = await loop(pool, clients, opts.seconds, putUnder(`bench/${workload}/`));
    else if (workload === 'watch') run = await watchRun(pool, clients, opts, value, round);
    else run = await loop(pool, clients, opts.seconds, read);
    const busy = clusterCpuMs(cluster) - cpu0;
    const clientCpu = ownCpuMs() - client0;
    // The members' idle CPU (ticks, heartbeats), measured over a second once
    // the row's work has settled, is left out: at low rates it would
    // otherwise dominate the CPU per operation.
    await sleep(300);
    const idle0 = clusterCpuMs(cluster);
    const idleStart = now();
    await sleep(1000);
    const idleRate = (clusterCpuMs(cluster) - idle0) / (now() - idleStart);
    const cpu = busy - idleRate * run.elapsed * 1000;
    const sorted = run.latencies.sort((a, b) => a - b);
    // For watch: per put (each seen by every watcher).
    const done = workload === 'watch' ? sorted.length / opts.watchers : sorted.length;
    return {
      cpuPerOp: done > 0 ? cpu / done : Number.NaN,
      clientCpuPerOp: done > 0 ? clientCpu / done : Number.NaN,
      program: cluster.program,
      workload,
      clients,
      ops: sorted.length,
      errors: run.errors,
      // For watch: puts per second until every watcher had them.
      opsPerSec: done / run.elapsed,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
    };
  } finally {
    for (const c of pool) c.close();
  }
}

async function preloadReadKeys(cluster: Cluster, value: Buffer): Promise<void> {
  const client = new Etcd3({ hosts: cluster.endpoints.map((e) => `http://${e}`) });
  try {
    for (let i = 0; i < READ_KEYS; i += 50) {
      const batch = Array.from({ length: Math.min(50, READ_KEYS - i) }, (_, j) => i + j);
      await Promise.all(batch.map((k) => client.put(`bench/read/${k}`).value(value)));
    }
  } finally {
    client.close();
  }
}

interface Memory {
  program: StoreProgram;
  mib: number[];
}

function cpuCell(v: number): string {
  return Number.isFinite(v) ? v.toFixed(2) : '-';
}

function ratio(kubit: number | undefined, etcd: number | undefined): string {
  if (kubit === undefined || etcd === undefined || !(etcd > 0)) return '-';
  return (kubit / etcd).toFixed(2);
}

/** One line per workload and client count, both stores side by side. */
function report(rows: Row[], memory: Memory[], opts: Options): string {
  const find = (p: StoreProgram, w: Workload, c: number) =>
    rows.find((r) => r.program === p && r.workload === w && r.clients === c);
  const out: string[][] = [];
  for (const w of opts.workloads) {
    for (const c of w === 'put-1conn' ? [ONE_CONNECTION_CLIENTS] : opts.clients) {
      const e = find('etcd', w, c);
      const k = find('kubit-store', w, c);
      const cells = (r: Row | undefined) =>
        r
          ? [
              r.opsPerSec.toFixed(0),
              ms(r.p50),
              ms(r.p99),
              String(r.errors),
              cpuCell(r.cpuPerOp),
              cpuCell(r.clientCpuPerOp),
            ]
          : ['-', '-', '-', '-', '-', '-'];
      out.push([
        w,
        String(c),
        ...cells(e),
        ...cells(k),
        ratio(k?.opsPerSec, e?.opsPerSec),
        ratio(k?.p99, e?.p99),
      ]);
    }
  }
  const head = [
    'workload',
    'clients',
    'etcd ops/s',
    'etcd p50 ms',
    'etcd p99 ms',
    'etcd err',
    'etcd cpu ms/op',
    'etcd client cpu ms/op',
    'kubit ops/s',
    'kubit p50 ms',
    'kubit p99 ms',
    'kubit err',
    'kubit cpu ms/op',
    'kubit client cpu ms/op',
    'ops ratio',
    'p99 ratio',
  ];
  const mem = memory
    .map(
      (m) =>
        `${m.program}: ${m.mib.map((x) => x.toFixed(0)).join(' + ')} MiB resident (per member, after its rows)`,
    )
    .join('\n');
  return [
    `kubit-store vs etcd 3.4: ${opts.members} member(s) on loopback, ${opts.valueBytes}-byte values, ${opts.seconds}s per row after ${opts.warmup}s of unmeasured warm-up, npm etcd3 client; watch rows: ${opts.watchers} watchers, ops/s = puts per second until the last event reached every watcher, latency = put sent to event received at each watcher; ratios are kubit/etcd`,
    '',
    table(head, out),
    '',
    mem,
  ].join('\n');
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.programs.includes('etcd') && !etcdInstalled())
    throw new UsageError('etcd 3.4 is not installed (Debian packages etcd-server and etcd-client)');
  const header = machineHeader();
  const rows: Row[] = [];
  const memory: Memory[] = [];
  let round = 0;
  // Both stores run side by side and take turns row by row (which one goes
  // first alternates): this machine's speed drifts within a minute, and a
  // ratio of two rows measured a minute apart would carry that drift.
  const clusters: { program: StoreProgram; cluster: Cluster }[] = [];
  try {
    for (const program of opts.programs) {
      const cluster = await StoreCluster.start({
        program,
        size: opts.members,
        storeCommand: program === 'kubit-store' ? storeCommand() : undefined,
        args: program === 'kubit-store' ? ['--log-level=warn'] : [],
      });
      clusters.push({ program, cluster });
      if (opts.workloads.some((w) => w.startsWith('range')))
        await preloadReadKeys(cluster, Buffer.alloc(opts.valueBytes, 'x'));
    }
    let turn = 0;
    for (const workload of opts.workloads) {
      for (const clients of workload === 'put-1conn' ? [ONE_CONNECTION_CLIENTS] : opts.clients) {
        const order = turn++ % 2 === 0 ? clusters : [...clusters].reverse();
        for (const { program, cluster } of order) {
          const row = await measure(cluster, workload, clients, opts, round++);
          rows.push(row);
          progress(
            `${program} ${workload} ${clients} clients: ${row.opsPerSec.toFixed(0)} ops/s, p50 ${ms(row.p50)} ms, p99 ${ms(row.p99)} ms, ${row.errors} errors, cpu ${cpuCell(row.cpuPerOp)} ms/op (client ${cpuCell(row.clientCpuPerOp)})`,
          );
        }
      }
    }
    for (const { program, cluster } of clusters) {
      const mib = cluster.members.map((m) => (m.process ? rssMiB(m.process.pid) : Number.NaN));
      memory.push({ program, mib });
      progress(`${program} resident memory: ${mib.map((x) => x.toFixed(0)).join(' + ')} MiB`);
    }
  } finally {
    for (const { cluster } of clusters) await cluster.destroy();
  }
  const [l1, l5, l15] = loadavg().map((x) => x.toFixed(2));
  process.stdout.write(
    `${header}\nload average at end: ${l1} ${l5} ${l15}\n\n${report(rows, memory, opts)}\n`,
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench:store: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
