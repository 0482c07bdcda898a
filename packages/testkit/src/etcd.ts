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
  /** "host:port", as etcdctl --endpoints and the etcd3 client take it. */
  endpoint: string;
  /** The address this member listens on (127.0.0.1 unless the cluster gives it one). */
  host: string;
  /** This member's own peer TLS files, replacing the cluster's (e.g. a certificate from another CA). */
  peerTls?: PeerTls;
}

/** --peer-cert-file, --peer-key-file, --peer-trusted-ca-file and --peer-client-cert-auth. */
export interface PeerTls {
  cert: string;
  key: string;
  ca: string;
  clientCertAuth?: boolean;
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
  /** Peer traffic over TLS (peer URLs become https://). */
  peerTls?: PeerTls;
  /** The address of member i (default 127.0.0.1), e.g. its own network namespace's. */
  host?: (index: number) => string;
  /** A command prefix that runs member i somewhere else, e.g. ['ip', 'netns', 'exec', ns]. */
  launcher?: (index: number) => string[];
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
      // No stdin pipe without input: a quick command may exit before a write to it.
      stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
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
    if (child.stdin) {
      // EPIPE: the command exited without reading its input; its exit code and output say why.
      child.stdin.on('error', () => {});
      child.stdin.end(opts.stdin);
    }
  });
}

/**
 * etcdctl's `-w json` output, parsed with every integer too large for a double
 * (member and cluster IDs are uint64) kept as its exact decimal string: plain
 * JSON.parse would round 14781329676850808784 to 14781329676850809000.
 */
export function parseEtcdctlJson(text: string): unknown {
  // Strings are matched first so that digits inside them are left alone.
  const quoted = text.replace(/"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g, (tok) =>
    /^-?\d+$/.test(tok) && !Number.isSafeInteger(Number(tok)) ? `"${tok}"` : tok,
  );
  return JSON.parse(quoted);
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
    for (let i = 0; i < size; i++) members.push(await newMember(i, root.path, opts.host?.(i) ?? '127.0.0.1'));
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

  /** Member i's peer URL (https:// when the cluster or the member has peer TLS). */
  peerUrl(i: number): string {
    const m = this.members[i];
    const scheme = (m.peerTls ?? this.opts.peerTls) ? 'https' : 'http';
    return `${scheme}://${m.host}:${m.peerPort}`;
  }

  /** The flags etcd takes; kubit-store takes the same. */
  memberArgs(i: number, state: 'new' | 'existing' = 'new', initialCluster?: string): string[] {
    const m = this.members[i];
    const cluster = initialCluster ?? this.members.map((x, j) => `${x.name}=${this.peerUrl(j)}`).join(',');
    const peerTls = m.peerTls ?? this.opts.peerTls;
    return [
      `--name=${m.name}`,
      `--data-dir=${m.dataDir}`,
      `--listen-client-urls=${this.scheme}://${m.host}:${m.clientPort}`,
      `--advertise-client-urls=${this.scheme}://${m.host}:${m.clientPort}`,
      ...(this.opts.tls
        ? [
            `--cert-file=${this.opts.tls.cert}`,
            `--key-file=${this.opts.tls.key}`,
            `--trusted-ca-file=${this.opts.tls.ca}`,
            '--client-cert-auth',
          ]
        : []),
      ...(peerTls
        ? [
            `--peer-cert-file=${peerTls.cert}`,
            `--peer-key-file=${peerTls.key}`,
            `--peer-trusted-ca-file=${peerTls.ca}`,
            ...(peerTls.clientCertAuth === false ? [] : ['--peer-client-cert-auth']),
          ]
        : []),
      `--listen-peer-urls=${this.peerUrl(i)}`,
      `--initial-advertise-peer-urls=${this.peerUrl(i)}`,
      `--initial-cluster=${cluster}`,
      `--initial-cluster-state=${state}`,
      `--initial-cluster-token=${this.token}`,
      `--listen-metrics-urls=http://${m.host}:${m.metricsPort}`,
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
    const prefix = this.opts.launcher?.(i) ?? [];
    const argv = [...prefix, cmd.command, ...cmd.args, ...this.memberArgs(i, state, initialCluster)];
    m.process = startProcess({
      command: argv[0],
      args: argv.slice(1),
      logFile: m.logFile,
      name: `${this.program}-${m.name}`,
      env: { KUBIT_LOG_FORMAT: 'json', ...this.opts.env },
    });
    return m.process;
  }

  /** Adds a not-yet-started member slot (for member add tests); returns its index. */
  async addMemberSlot(opts: { peerTls?: PeerTls } = {}): Promise<number> {
    const i = this.members.length;
    const m = await newMember(i, this.root.path, this.opts.host?.(i) ?? '127.0.0.1');
    if (opts.peerTls) m.peerTls = opts.peerTls;
    this.members.push(m);
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

  /** Waits until every running member answers a linearizable read (generous: starting from TS sources on a loaded machine is slow). */
  async waitReady(timeoutMs = 300_000): Promise<void> {
    for (const m of this.members) {
      if (!m.process?.running) continue;
      try {
        await waitFor(
          `${this.program} ${m.name} on ${m.endpoint} to be healthy`,
          async () => {
            if (!m.process?.running)
              throw new Error(`${m.name} exited; its log ends:\n${logTail(m.logFile)}`);
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
      } catch (err) {
        throw new Error(`${(err as Error).message}; its log ends:\n${logTail(m.logFile)}`);
      }
    }
  }

  /** Index of the member that reports itself leader, or -1. */
  async leaderIndex(): Promise<number> {
    const r = await this.etcdctl(['endpoint', 'status', '-w', 'json'], { timeoutMs: 10_000 });
    if (r.code !== 0) return -1;
    const rows = parseEtcdctlJson(r.stdout) as {
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

  /** Member i's own view (etcdctl endpoint status against it alone), or undefined if it does not answer. */
  async memberStatus(i: number, timeoutMs = 5000): Promise<MemberStatus | undefined> {
    const r = await this.etcdctl(['endpoint', 'status', '-w', 'json', `--command-timeout=${timeoutMs}ms`], {
      endpoints: [this.members[i].endpoint],
      timeoutMs: timeoutMs + 3000,
    });
    if (r.code !== 0) return undefined;
    const [row] = parseEtcdctlJson(r.stdout) as {
      Status: {
        header: { member_id: number | string; raft_term: number | string; revision: number | string };
        leader?: number | string;
        raftIndex: number | string;
        isLearner?: boolean;
      };
    }[];
    const s = row.Status;
    return {
      // Exact decimal strings (parseEtcdctlJson keeps 64-bit IDs out of doubles).
      memberId: String(s.header.member_id),
      // etcdctl leaves out a zero leader (none known).
      leader: String(s.leader ?? 0),
      isLeader: String(s.header.member_id) === String(s.leader ?? 0),
      term: Number(s.header.raft_term),
      revision: Number(s.header.revision),
      raftIndex: Number(s.raftIndex),
      isLearner: s.isLearner === true,
    };
  }

  /** The members as etcdctl member list prints them: hex ID, name, peer URLs, learner or not. */
  async memberList(
    endpoints?: string[],
  ): Promise<{ id: string; name: string; peerUrls: string; learner: boolean }[]> {
    const r = await this.etcdctl(['member', 'list'], { endpoints, timeoutMs: 15_000 });
    if (r.code !== 0) throw new Error(`etcdctl member list failed: ${r.stderr}`);
    return r.stdout
      .trim()
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => {
        const f = l.split(', ');
        return { id: f[0], name: f[2], peerUrls: f[3], learner: f[5] === 'true' };
      });
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

export interface MemberStatus {
  memberId: string;
  leader: string;
  isLeader: boolean;
  term: number;
  revision: number;
  raftIndex: number;
  isLearner: boolean;
}

async function newMember(i: number, root: string, host: string): Promise<ClusterMember> {
  const clientPort = await freePort();
  return {
    name: `m${i}`,
    clientPort,
    peerPort: await freePort(),
    metricsPort: await freePort(),
    dataDir: join(root, `m${i}`),
    logFile: join(root, `m${i}.log`),
    process: undefined,
    endpoint: `${host}:${clientPort}`,
    host,
  };
}

/** The last lines of a log file, for an error message (the file goes with the temp dir). */
function logTail(file: string, chars = 2000): string {
  try {
    return readFileSync(file, 'utf8').slice(-chars);
  } catch {
    return `(no log at ${file})`;
  }
}
