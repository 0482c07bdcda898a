// What every control-plane benchmark shares: flags, the machine header, the
// store behind the apiserver (3 members of kubit-store or of etcd 3.4, over
// TLS), percentiles, a table printer and a process's resident memory.
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { type ClientConfig, HttpTransport, KubeClient, loadClientConfig } from '@kubit/client';
import {
  type ControlPlane,
  type ControlPlaneOptions,
  clusterStoreBackend,
  startControlPlane,
} from '../src/controlplane.js';
import type { StoreProgram } from '../src/etcd.js';

/** A mistake in the command line: reported as one line, without a stack trace. */
export class UsageError extends Error {}

/** Parses `--name=value` flags against defaults; unknown flags are an error naming the script. */
export function parseFlags<T extends Record<string, string | number>>(
  script: string,
  argv: string[],
  defaults: T,
): T {
  const out: Record<string, string | number> = { ...defaults };
  for (const arg of argv) {
    const m = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (!m || !(m[1] in defaults)) {
      throw new UsageError(
        `${script}: unknown or malformed argument "${arg}"; known: ${Object.keys(defaults)
          .map((k) => `--${k}=`)
          .join(' ')}`,
      );
    }
    const [, name, value] = m;
    if (typeof defaults[name] === 'number') {
      const n = Number(value);
      if (!Number.isFinite(n) || n < 0)
        throw new UsageError(`${script}: --${name} takes a number ≥ 0, not "${value}"`);
      out[name] = n;
    } else {
      out[name] = value;
    }
  }
  return out as T;
}

export function storeProgram(script: string, value: string): StoreProgram {
  if (value === 'etcd' || value === 'kubit-store') return value;
  throw new UsageError(`${script}: --store takes etcd or kubit-store, not "${value}"`);
}

/** nproc, load average and date: the machine is shared, so the load matters when reading a table. */
export function machineHeader(): string {
  const [l1, l5, l15] = loadavg().map((x) => x.toFixed(2));
  return [
    `date: ${new Date().toISOString()}`,
    `daemon log level: ${process.env.KUBIT_LOG_LEVEL ?? 'info'}`,
    `machine: ${cpus().length} cpus (${cpus()[0]?.model.trim() ?? '?'}), node ${process.version}`,
    `load average at start: ${l1} ${l5} ${l15}`,
  ].join('\n');
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function sortedCopy(xs: number[]): number[] {
  return [...xs].sort((a, b) => a - b);
}

export function ms(x: number): string {
  if (!Number.isFinite(x)) return '-';
  return x >= 100 ? x.toFixed(0) : x.toFixed(1);
}

/** A Markdown table, so it pastes into BENCHMARKS.md as it is. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(header), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...rows.map(line)].join('\n');
}

/** VmRSS of a process in MiB, from /proc (NaN once it is gone). */
export function rssMiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** The title's description of the store, e.g. "kubit-store ×3". */
export function storeLabel(program: StoreProgram, members: number): string {
  return program === 'etcd' ? `etcd 3.4 ×${members}` : `kubit-store ×${members}`;
}

/** A client with a keep-alive pool big enough for `sockets` concurrent requests or watches. */
export function benchClient(kubeconfig: string, sockets = 128): KubeClient {
  const config: ClientConfig = loadClientConfig({ kubeconfig });
  return new KubeClient(config, {
    transport: new HttpTransport(config, { maxSockets: sockets }),
    timeoutMs: 60_000,
    retry: { maxRetries: 0 },
  });
}

/** Runs `fn` for each of `count` items with at most `concurrency` in flight; returns the errors. */
export async function forEachConcurrent(
  count: number,
  concurrency: number,
  fn: (i: number) => Promise<void>,
): Promise<{ errors: number; firstError: string | undefined }> {
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      for (;;) {
        const i = next++;
        if (i >= count) return;
        try {
          await fn(i);
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
        }
      }
    }),
  );
  return { errors, firstError };
}

export const now = (): number => performance.now();

/** Stops everything registered, last first, never throwing: a benchmark must leave nothing behind. */
export class Cleanup {
  private readonly steps: { what: string; fn: () => Promise<void> | void }[] = [];

  add(what: string, fn: () => Promise<void> | void): void {
    this.steps.push({ what, fn });
  }

  async run(): Promise<void> {
    while (this.steps.length > 0) {
      const step = this.steps.pop();
      if (!step) break;
      try {
        await step.fn();
      } catch (err) {
        process.stderr.write(`cleanup: ${step.what} failed: ${(err as Error).message}\n`);
      }
    }
  }
}

/** Runs a benchmark's main, cleaning up on success, failure and Ctrl-C. */
export function runBench(main: (cleanup: Cleanup) => Promise<void>): void {
  const cleanup = new Cleanup();
  let interrupted = false;
  // Daemons inherit this: a log line per request to a file would be part of what is measured.
  process.env.KUBIT_LOG_LEVEL ??= 'warn';
  // testkit pipes a daemon's stdout and stderr into one log stream; when one pipe
  // ends first, a late write on the other throws here. Losing a log line must not
  // abort the clean-up, so that one error is reported and ignored.
  process.on('uncaughtException', (err: NodeJS.ErrnoException) => {
    if (err.code === 'ERR_STREAM_WRITE_AFTER_END') {
      process.stderr.write(`ignored: a daemon log write after its stream ended (${err.message})\n`);
      return;
    }
    process.stderr.write(`uncaught: ${err.stack ?? err.message}\n`);
    void cleanup.run().then(() => process.exit(1));
  });
  process.once('SIGINT', () => {
    interrupted = true;
    process.stderr.write('interrupted: stopping what was started\n');
    void cleanup.run().then(() => process.exit(130));
  });
  main(cleanup)
    .then(
      () => cleanup.run(),
      async (err: unknown) => {
        const text =
          err instanceof UsageError
            ? err.message
            : err instanceof Error
              ? (err.stack ?? err.message)
              : String(err);
        process.stderr.write(`benchmark failed: ${text}\n`);
        process.exitCode = 1;
        await cleanup.run();
      },
    )
    .finally(() => {
      if (!interrupted) process.exit();
    });
}

/** Progress on stderr, so stdout holds only the header and the table. */
export function progress(msg: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

/**
 * A control plane (apiserver from dist/) on a 3-member store of `program`. If
 * kubit-store does not start, falls back to etcd 3.4 and says why in `storeTitle`,
 * so a table never claims a store it did not run on.
 */
export async function startBenchControlPlane(
  program: StoreProgram,
  members: number,
  options: Omit<ControlPlaneOptions, 'store'> = {},
): Promise<{ cp: ControlPlane; storeTitle: string }> {
  try {
    const cp = await startControlPlane({ ...options, store: clusterStoreBackend(program, members) });
    return { cp, storeTitle: storeLabel(program, members) };
  } catch (err) {
    if (program !== 'kubit-store') throw err;
    const why = (err as Error).message.split('\n')[0].slice(0, 160);
    progress(`kubit-store ×${members} did not start (${why}); falling back to etcd 3.4`);
    const cp = await startControlPlane({ ...options, store: clusterStoreBackend('etcd', members) });
    return {
      cp,
      storeTitle: `${storeLabel('etcd', members)} (kubit-store ×${members} did not start: ${why})`,
    };
  }
}
export { sleep } from '../src/process.js';
