// Starts real etcd 3.4 and kubit-store clusters on free loopback ports, each
// member with its own data dir, for tests and benchmarks. Both programs take
// the same flags: only the program differs.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { daemonCommand, freePort, startProcess, type TestProcess, tempDir, waitFor } from './process.js';

export type StoreProgram = 'etcd' | 'kubit-store';

export const ETCD_BINARY = '/usr/bin/etcd';
export const ETCDCTL_BINARY = '/usr/bin/etcdctl';

/** True when the real etcd and etcdctl (Debian's etcd-server, etcd-client) are installed. */
export function etcdInstalled(): boolean {
  return existsSync(ETCD_BINARY) && existsSync(ETCDCTL_BINARY);
}

export interface ClusterMember {
  name: string;
  clientPort: number;
  peerPort: number;
  metricsPort: number;
  dataDir: string;
  logFile: string;
  process: TestProcess | undefined;
  /** "127.0.0.1:port", as etcdctl --endpoints and the etcd3 client take it. */
  endpoint: string;
}

export interface ClusterOptions {
  program: StoreProgram;
  size?: number;
  snapshotCount?: number;
  token?: string;
  /** Extra flags for every member. */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  /** How to run kubit-store (default: testkit's daemonCommand('store')). */
  storeCommand?: { command: string; args: string[] };
  /** Serve clients over TLS with client certificates; etcdctl calls then present clientCert. */
  tls?: { cert: string; key: string; ca: string; clientCert: string; clientKey: string };
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to completion (bounded by timeoutMs), feeding `stdin`. */
export function runCommand(
  command: string,
  args: string[],
  opts: { stdin?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<CommandResult> {
  return new Promise((res, rej) => {
    const child = spawn(command, args, {
      env: { ...process.env, ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      rej(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
    child.stdin.end(opts.stdin ?? '');
  });
}

/** The real etcdctl (v3 API) against `endpoints`. */
export function etcdctl(
  endpoints: string[],
  args: string[],
  opts: { stdin?: string; timeoutMs?: number } = {},
) {
  return runCommand(ETCDCTL_BINARY, [`--endpoints=${endpoints.join(',')}`, ...args], {
    ...opts,
    env: { ETCDCTL_API: '3' },
  });
}

export class StoreCluster {
  private constructor(
    readonly program: StoreProgram,
    readonly members: ClusterMember[],
    private readonly opts: ClusterOptions,
    private readonly token: string,
    private readonly root: { path: string; cleanup: () => Promise<void> },
  ) {}

  static async start(opts: ClusterOptions): Promise<StoreCluster> {
    const size = opts.size ?? 1;
    const root = await tempDir(`kubit-${opts.program}-`);
    const members: ClusterMember[] = [];
    for (let i = 0; i < size; i++) {
      const clientPort = await freePort();
      const peerPort = await freePort();
      const metricsPort = await freePort();
      members.push({
        name: `m${i}`,
        clientPort,
        peerPort,
        metricsPort,
        dataDir: join(root.path, `m${i}`),
        logFile: join(root.path, `m${i}.log`),
        process: undefined,
        endpoint: `127.0.0.1:${clientPort}`,
      });
    }
    const cluster = new StoreCluster(
      opts.program,
      members,
      opts,
      opts.token ?? `kubit-test-${Date.now()}`,
      root,
    );
    for (let i = 0; i < size; i++) cluster.startMember(i);
    try {
      await cluster.waitReady();
    } catch (err) {
      // Leave nothing running behind a failed start.
      await cluster.destroy();
      throw err;
    }
    return cluster;
  }

  get endpoints(): string[] {
    return this.members.filter((m) => m.process?.running).map((m) => m.endpoint);
  }

  get allEndpoints(): string[] {
    return this.members.map((m) => m.endpoint);
  }

  get dataRoot(): string {
    return this.root.path;
  }

  private get scheme(): string {
    return this.opts.tls ? 'https' : 'http';
  }

  /** etcdctl's flags for this cluster's TLS (none without TLS). */
  tlsArgs(): string[] {
    const t = this.opts.tls;
    return t ? [`--cacert=${t.ca}`, `--cert=${t.clientCert}`, `--key=${t.clientKey}`] : [];
  }

  /** The flags etcd takes; kubit-store takes the same. */
  memberArgs(i: number, state: 'new' | 'existing' = 'new', initialCluster?: string): string[] {
    const m = this.members[i];
    const cluster =
      initialCluster ?? this.members.map((x) => `${x.name}=http://127.0.0.1:${x.peerPort}`).join(',');
    return [
      `--name=${m.name}`,
      `--data-dir=${m.dataDir}`,
      `--listen-client-urls=${this.scheme}://127.0.0.1:${m.clientPort}`,
      `--advertise-client-urls=${this.scheme}://127.0.0.1:${m.clientPort}`,
      ...(this.opts.tls
        ? [
            `--cert-file=${this.opts.tls.cert}`,
            `--key-file=${this.opts.tls.key}`,
            `--trusted-ca-file=${this.opts.tls.ca}`,
            '--client-cert-auth',
          ]
        : []),
      `--listen-peer-urls=http://127.0.0.1:${m.peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${m.peerPort}`,
      `--initial-cluster=${cluster}`,
      `--initial-cluster-state=${state}`,
      `--initial-cluster-token=${this.token}`,
      `--listen-metrics-urls=http://127.0.0.1:${m.metricsPort}`,
      ...(this.opts.snapshotCount ? [`--snapshot-count=${this.opts.snapshotCount}`] : []),
      ...(this.opts.args ?? []),
    ];
  }

  /** Starts (or restarts) member i with its data dir as it is. */
  startMember(i: number, state: 'new' | 'existing' = 'new', initialCluster?: string): TestProcess {
    const m = this.members[i];
    const cmd =
      this.program === 'etcd'
        ? { command: ETCD_BINARY, args: [] }
        : (this.opts.storeCommand ?? daemonCommand('store', 'main.ts'));
    m.process = startProcess({
      command: cmd.command,
      args: [...cmd.args, ...this.memberArgs(i, state, initialCluster)],
      logFile: m.logFile,
      name: `${this.program}-${m.name}`,
      env: { KUBIT_LOG_FORMAT: 'json', ...this.opts.env },
    });
    return m.process;
  }

  /** Adds a not-yet-started member slot (for member add tests); returns its index. */
  async addMemberSlot(): Promise<number> {
    const i = this.members.length;
    const clientPort = await freePort();
    this.members.push({
      name: `m${i}`,
      clientPort,
      peerPort: await freePort(),
      metricsPort: await freePort(),
      dataDir: join(this.root.path, `m${i}`),
      logFile: join(this.root.path, `m${i}.log`),
      process: undefined,
      endpoint: `127.0.0.1:${clientPort}`,
    });
    return i;
  }

  async kill(i: number): Promise<void> {
    await this.members[i].process?.kill();
  }

  async stopMember(i: number): Promise<void> {
    await this.members[i].process?.stop();
  }

  /** etcdctl against the running members (with the cluster's TLS flags unless args bring their own). */
  etcdctl(args: string[], opts: { stdin?: string; endpoints?: string[]; timeoutMs?: number } = {}) {
    const tls = args.some((a) => a.startsWith('--cacert')) ? [] : this.tlsArgs();
    return etcdctl(opts.endpoints ?? this.endpoints, [...tls, ...args], opts);
  }

  /** Waits until every running member answers a linearizable read. */
  async waitReady(timeoutMs = 120_000): Promise<void> {
    for (const m of this.members) {
      if (!m.process?.running) continue;
      await waitFor(
        `${this.program} ${m.name} on ${m.endpoint} to be healthy`,
        async () => {
          if (!m.process?.running) throw new Error(`${m.name} exited; its log ends:\n${logTail(m.logFile)}`);
          const r = await etcdctl(
            [m.endpoint],
            [...this.tlsArgs(), 'endpoint', 'health', '--command-timeout=2s'],
            {
              timeoutMs: 5000,
            },
          );
          return r.code === 0;
        },
        timeoutMs,
        200,
      );
    }
  }

  /** Index of the member that reports itself leader, or -1. */
  async leaderIndex(): Promise<number> {
    const r = await this.etcdctl(['endpoint', 'status', '-w', 'json'], { timeoutMs: 10_000 });
    if (r.code !== 0) return -1;
    const rows = JSON.parse(r.stdout) as {
      Endpoint: string;
      Status: { header: { member_id: number | string }; leader: number | string };
    }[];
    for (const row of rows) {
      if (String(row.Status.header.member_id) === String(row.Status.leader)) {
        return this.members.findIndex(
          (m) => m.endpoint === row.Endpoint || row.Endpoint.endsWith(`:${m.clientPort}`),
        );
      }
    }
    return -1;
  }

  async stop(): Promise<void> {
    await Promise.all(this.members.map((m) => m.process?.stop(3000)));
  }

  /** Stops every member and removes the data dirs. */
  async destroy(): Promise<void> {
    await this.stop();
    await this.root.cleanup();
  }
}

/** The last lines of a log file, for an error message (the file goes with the temp dir). */
function logTail(file: string, chars = 2000): string {
  try {
    return readFileSync(file, 'utf8').slice(-chars);
  } catch {
    return `(no log at ${file})`;
  }
}
