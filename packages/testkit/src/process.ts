import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freshBundle, repoRootOf } from '@kubit/daemon';

/** The repository's root directory: the nearest ancestor with pnpm-workspace.yaml (from src/ or dist/src/). */
export const repoRoot = repoRootOf(import.meta.url);

/**
 * How to run one of Kubit's daemons: from TypeScript sources under the test
 * runner (KUBIT_SOURCE=1, so tests never run a stale build), from dist/ otherwise
 * (its bundle when fresh).
 * `entry` is the path under the package's src/, e.g. ("store", "main.ts").
 */
export function daemonCommand(pkg: string, entry = 'main.ts'): { command: string; args: string[] } {
  if (process.env.KUBIT_SOURCE === '1') {
    return {
      command: process.execPath,
      args: ['--conditions=kubit-source', '--import', 'tsx', join(repoRoot, 'packages', pkg, 'src', entry)],
    };
  }
  const built = join(repoRoot, 'packages', pkg, 'dist', 'src', entry.replace(/\.ts$/, '.js'));
  return { command: process.execPath, args: [freshBundle(built) ?? built] };
}

export interface StartOptions {
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** stdout and stderr are appended here; by default they are discarded. */
  logFile?: string;
  name?: string;
}

/** A process a test started. It is only ever stopped through its own PID. */
export class TestProcess {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;

  constructor(
    readonly child: ChildProcess,
    readonly name: string,
  ) {
    this.exited = new Promise((res) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        res(this.exitInfo);
      });
    });
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error(`${this.name} has no pid`);
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  /** SIGTERM, then SIGKILL after `graceMs`. Resolves when the process is gone. */
  async stop(graceMs = 5000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** kill -9: no chance to clean up, as a crash would be. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  signal(sig: NodeJS.Signals): void {
    this.child.kill(sig);
  }
}

/** Every process started through startProcess, so a test run can stop what it leaked. */
const started = new Set<TestProcess>();

export function startProcess(opts: StartOptions): TestProcess {
  const child = spawn(opts.command, opts.args, {
    cwd: opts.cwd ?? repoRoot,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (opts.logFile) {
    mkdirSync(dirname(opts.logFile), { recursive: true });
    const out = createWriteStream(opts.logFile, { flags: 'a' });
    // Two streams share one log file: neither may end it while the other still writes.
    child.stdout?.pipe(out, { end: false });
    child.stderr?.pipe(out, { end: false });
    child.once('close', () => out.end());
  } else {
    child.stdout?.resume();
    child.stderr?.resume();
  }
  const p = new TestProcess(child, opts.name ?? opts.command);
  started.add(p);
  void p.exited.then(() => started.delete(p));
  return p;
}

export interface DaemonProcessOptions {
  /** Names the process and its log file `<logDir>/<name>.log`. */
  name: string;
  /** The package whose daemon runs: "scheduler", "controllers", ... */
  pkg: string;
  /** Its entry point under src/ (default main.ts). */
  entry?: string;
  args: string[];
  logDir: string;
}

/** One of Kubit's daemons (daemonCommand) with JSON logs to its own file in `logDir`. */
export function startDaemon(o: DaemonProcessOptions): TestProcess {
  const cmd = daemonCommand(o.pkg, o.entry ?? 'main.ts');
  return startProcess({
    name: o.name,
    command: cmd.command,
    args: [...cmd.args, ...o.args],
    env: { KUBIT_LOG_FORMAT: 'json' },
    logFile: join(o.logDir, `${o.name}.log`),
  });
}

/** Stops, by PID, every process this test file started and has not stopped yet. */
export async function stopAllProcesses(): Promise<void> {
  await Promise.all([...started].map((p) => p.stop(2000)));
}

process.once('exit', () => {
  for (const p of started) if (p.running) p.child.kill('SIGKILL');
});

/** What this process claimed, and where every test process records its claims. */
const claimed = new Set<string>();
const CLAIMS = join(tmpdir(), 'kubit-test-claims');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Claims a machine-wide resource (a port, a pod subnet) for this test process
 * until it exits. Test files run side by side, and something free now may be
 * handed to another test's daemon before ours takes it (or while ours is down
 * for a restart), so each claim is a file naming its owner. A claim whose
 * owner has exited is taken over. False if someone else holds it.
 */
export function claimForTestProcess(key: string): boolean {
  if (claimed.has(key)) return false;
  mkdirSync(CLAIMS, { recursive: true });
  const file = join(CLAIMS, key);
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
  } catch {
    const owner = Number(readFileSync(file, 'utf8'));
    if (owner > 0 && alive(owner)) return false;
    writeFileSync(file, String(process.pid));
  }
  claimed.add(key);
  return true;
}

process.once('exit', () => {
  for (const key of claimed) rmSync(join(CLAIMS, key), { force: true });
});

/**
 * A TCP port on 127.0.0.1 that was free a moment ago, for a daemon a test starts.
 * It is drawn from below the kernel's ephemeral range (32768 and up), so that the
 * many outgoing connections of a test run cannot take it before the daemon binds it,
 * and it is never handed out twice while this process (or another test process
 * that claimed it) lives.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (claimed.has(`port-${port}`)) continue;
    if ((await canBind(port)) && claimForTestProcess(`port-${port}`)) return port;
  }
  return bindAny();
}

function canBind(port: number): Promise<boolean> {
  return new Promise((res) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => res(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
  });
}

function bindAny(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => res(port));
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((res) => setTimeout(res, ms));
}

/** Polls `fn` until it returns a value other than undefined/false, or throws after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      lastErr = err;
    }
    await sleep(intervalMs);
  }
  const why = lastErr ? `: last error: ${(lastErr as Error).message}` : '';
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
}

/** Resolves once something accepts TCP connections on host:port. */
export async function waitForPort(port: number, host = '127.0.0.1', timeoutMs = 30_000): Promise<void> {
  await waitFor(
    `${host}:${port} to accept connections`,
    () =>
      new Promise<boolean>((res) => {
        const sock = connect({ host, port }, () => {
          sock.destroy();
          res(true);
        });
        sock.on('error', () => res(false));
      }),
    timeoutMs,
  );
}

/** A temporary directory removed by the returned cleanup. */
export async function tempDir(
  prefix = 'kubit-test-',
): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}

/** Clock ticks per second of /proc/<pid>/stat's CPU times (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/**
 * CPU milliseconds (user + system) a process has used so far, from
 * /proc/<pid>/stat: its own, and its reaped children's (what the exec'd helpers
 * it waited for used); undefined once it is gone. Benchmarks measure CPU per
 * operation with it, which a busy machine disturbs far less than wall time.
 */
export function processCpuMs(pid: number): { self: number; children: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // After "pid (comm) " (comm may hold spaces): utime is field 11, stime 12, cutime 13, cstime 14.
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  const ms = (ticks: number) => (ticks * 1000) / USER_HZ;
  return { self: ms(f[11] + f[12]), children: ms(f[13] + f[14]) };
}
