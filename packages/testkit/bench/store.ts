// pnpm bench:store — puts per second and latency of kubit-store against a
// real etcd 3.4, side by side in one run, same machine, same client (the npm
// etcd3 client), same value size, for several numbers of concurrent clients.
//
//   node packages/testkit/dist/src/bench/store.js [--clients=1,16,128,512]
//        [--seconds=5] [--value-bytes=256] [--members=1]
//
// kubit-store runs from its dist/ (run `pnpm build` first).
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Etcd3 } from 'etcd3';
import { type StoreCluster as Cluster, etcdInstalled, StoreCluster, type StoreProgram } from '../src/etcd.js';
import { daemonCommand } from '../src/process.js';

interface Options {
  clients: number[];
  seconds: number;
  valueBytes: number;
  members: number;
}

function parseArgs(argv: string[]): Options {
  const opts: Options = { clients: [1, 16, 128, 512], seconds: 5, valueBytes: 256, members: 1 };
  for (const arg of argv) {
    const [name, value] = arg.replace(/^--/, '').split('=');
    const n = Number(value);
    if (name === 'clients') opts.clients = value.split(',').map(Number);
    else if (name === 'seconds' && n > 0) opts.seconds = n;
    else if (name === 'value-bytes' && n > 0) opts.valueBytes = n;
    else if (name === 'members' && n > 0) opts.members = n;
    else throw new Error(`unknown or bad argument ${arg} (see the comment at the top of bench/store.ts)`);
  }
  if (opts.clients.some((c) => !Number.isInteger(c) || c < 1 || c > 4096))
    throw new Error('--clients takes integers in [1, 4096]');
  return opts;
}

/** kubit-store's built entry point (benchmarks run dist/, never sources). */
function storeCommand(): { command: string; args: string[] } {
  const cmd = daemonCommand('store', 'main.ts');
  if (!existsSync(cmd.args[cmd.args.length - 1])) {
    throw new Error('packages/store/dist/src/main.js is missing: run "pnpm build" first');
  }
  return cmd;
}

interface Row {
  program: StoreProgram;
  clients: number;
  ops: number;
  errors: number;
  opsPerSec: number;
  p50: number;
  p99: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** `clients` concurrent request loops for `seconds`, spread over a few connections. */
async function measure(cluster: Cluster, clients: number, opts: Options): Promise<Row> {
  const connections = Math.min(clients, 8);
  const hosts = cluster.endpoints.map((e) => `http://${e}`);
  const pool = Array.from({ length: connections }, () => new Etcd3({ hosts }));
  const value = Buffer.alloc(opts.valueBytes, 'x');
  const latencies: number[] = [];
  let errors = 0;
  // Warm up the connections.
  await Promise.all(pool.map((c, i) => c.put(`bench/warm/${i}`).value(value)));
  const end = performance.now() + opts.seconds * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, id) => {
      const client = pool[id % connections];
      for (let i = 0; performance.now() < end; i++) {
        const t0 = performance.now();
        try {
          await client.put(`bench/${id}/${i % 100}`).value(value);
          latencies.push(performance.now() - t0);
        } catch {
          errors++;
        }
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  for (const c of pool) c.close();
  latencies.sort((a, b) => a - b);
  return {
    program: cluster.program,
    clients,
    ops: latencies.length,
    errors,
    opsPerSec: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

function table(rows: Row[]): string {
  const head = ['clients', 'program', 'puts/s', 'p50 ms', 'p99 ms', 'errors'];
  const lines = rows.map((r) => [
    String(r.clients),
    r.program,
    r.opsPerSec.toFixed(0),
    r.p50.toFixed(1),
    r.p99.toFixed(1),
    String(r.errors),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [fmt(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt)].join('\n');
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  if (!etcdInstalled())
    throw new Error('etcd 3.4 is not installed (Debian packages etcd-server and etcd-client)');
  const rows: Row[] = [];
  for (const program of ['etcd', 'kubit-store'] as const) {
    const cluster = await StoreCluster.start({ program, size: opts.members, storeCommand: storeCommand() });
    try {
      for (const clients of opts.clients) {
        const row = await measure(cluster, clients, opts);
        rows.push(row);
        process.stderr.write(
          `${program} ${clients} clients: ${row.opsPerSec.toFixed(0)} puts/s, p99 ${row.p99.toFixed(1)} ms\n`,
        );
      }
    } finally {
      await cluster.destroy();
    }
  }
  rows.sort((a, b) => a.clients - b.clients || a.program.localeCompare(b.program));
  process.stdout.write(
    `kubit-store vs etcd 3.4: ${opts.members} member(s), ${opts.valueBytes}-byte values, ${opts.seconds}s per row, etcd3 client\n\n${table(rows)}\n`,
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench:store: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
