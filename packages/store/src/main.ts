#!/usr/bin/env node
// kubit-store: takes etcd's flags, so a script that starts etcd starts this
// by changing only the program name.
import { createServer, type Server } from 'node:http';
import {
  createLogger,
  createRegistry,
  Gauge,
  intArg,
  listArg,
  parseDuration,
  runMain,
  Shutdown,
  StartupError,
} from '@kubit/daemon';
import { Command, Option } from 'commander';
import { LogMismatchError } from './node/log.js';
import { startCpuProfile } from './profile.js';
import { UNLIMITED_STREAMS } from './server/grpc-server.js';
import { type MemberConfig, shutdownGraceMs, startMember, type TlsFiles } from './server/member.js';
import { WalCorruptError } from './wal/replay.js';

function parseInitialCluster(value: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const part of value.split(',')) {
    const t = part.trim();
    if (!t) continue;
    const eq = t.indexOf('=');
    if (eq <= 0) throw new StartupError(`--initial-cluster: "${t}" is not name=peer-url`);
    const name = t.slice(0, eq);
    const url = t.slice(eq + 1);
    checkUrl('--initial-cluster', url);
    out.set(name, [...(out.get(name) ?? []), url]);
  }
  return out;
}

function checkUrl(flag: string, url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new StartupError(`${flag}: "${url}" is not a URL (expected e.g. http://127.0.0.1:2379)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new StartupError(`${flag}: "${url}" must use http or https`);
  }
}

interface Flags {
  name: string;
  dataDir?: string;
  listenClientUrls: string[];
  advertiseClientUrls: string[];
  listenPeerUrls: string[];
  initialAdvertisePeerUrls: string[];
  initialCluster?: string;
  initialClusterState: string;
  initialClusterToken: string;
  snapshotCount: number;
  heartbeatInterval: number;
  electionTimeout: number;
  certFile?: string;
  keyFile?: string;
  trustedCaFile?: string;
  clientCertAuth?: boolean;
  peerCertFile?: string;
  peerKeyFile?: string;
  peerTrustedCaFile?: string;
  peerClientCertAuth?: boolean;
  listenMetricsUrls: string[];
  grpcKeepaliveMinTime: number;
  grpcKeepaliveInterval: number;
  grpcKeepaliveTimeout: number;
  maxConcurrentStreams: number;
  maxStreamBufferedBytes: number;
  logLevel: string;
}

function tls(
  cert: string | undefined,
  key: string | undefined,
  ca: string | undefined,
  auth: boolean | undefined,
  what: string,
): TlsFiles | undefined {
  if (!cert && !key) return undefined;
  if (!cert || !key) throw new StartupError(`${what}: both the certificate and the key file are needed`);
  return { certFile: cert, keyFile: key, trustedCaFile: ca, clientCertAuth: auth === true };
}

/** A Go duration as etcd's flags take it; a bare 0 too (Go's "0 to disable"). */
function goDuration(value: string): number {
  return value === '0' ? 0 : parseDuration(value);
}

/** etcd's boolean flags are written --flag or --flag=true|false. */
function boolArg(value: string | undefined): boolean {
  return value === undefined || value === 'true';
}

async function main(flags: Flags): Promise<void> {
  const logger = createLogger({ name: 'kubit-store', level: flags.logLevel });
  const name = flags.name;
  const dataDir = flags.dataDir ?? `${name}.etcd`;
  for (const [flag, urls] of [
    ['--listen-client-urls', flags.listenClientUrls],
    ['--advertise-client-urls', flags.advertiseClientUrls],
    ['--listen-peer-urls', flags.listenPeerUrls],
    ['--initial-advertise-peer-urls', flags.initialAdvertisePeerUrls],
    ['--listen-metrics-urls', flags.listenMetricsUrls],
  ] as const) {
    for (const u of urls) checkUrl(flag, u);
  }
  if (flags.initialClusterState !== 'new' && flags.initialClusterState !== 'existing') {
    throw new StartupError(
      `--initial-cluster-state must be "new" or "existing", not "${flags.initialClusterState}"`,
    );
  }
  const initialCluster = parseInitialCluster(
    flags.initialCluster ?? `${name}=${flags.initialAdvertisePeerUrls.join(`,${name}=`)}`,
  );
  const tickMs = flags.heartbeatInterval;
  const cfg: MemberConfig = {
    name,
    dataDir,
    listenClientUrls: flags.listenClientUrls,
    advertiseClientUrls: flags.advertiseClientUrls,
    listenPeerUrls: flags.listenPeerUrls,
    initialAdvertisePeerUrls: flags.initialAdvertisePeerUrls,
    initialCluster,
    initialClusterState: flags.initialClusterState,
    initialClusterToken: flags.initialClusterToken,
    snapshotCount: flags.snapshotCount,
    tickMs,
    electionTicks: Math.max(2, Math.round(flags.electionTimeout / tickMs)),
    clientTls: tls(flags.certFile, flags.keyFile, flags.trustedCaFile, flags.clientCertAuth, 'client TLS'),
    peerTls: tls(
      flags.peerCertFile,
      flags.peerKeyFile,
      flags.peerTrustedCaFile,
      flags.peerClientCertAuth,
      'peer TLS',
    ),
    grpc: {
      keepalive: {
        minTimeMs: flags.grpcKeepaliveMinTime,
        intervalMs: flags.grpcKeepaliveInterval,
        timeoutMs: flags.grpcKeepaliveTimeout,
      },
      maxConcurrentStreams: flags.maxConcurrentStreams,
      maxStreamBufferedBytes: flags.maxStreamBufferedBytes,
    },
    logger,
  };
  let member: Awaited<ReturnType<typeof startMember>>;
  try {
    member = await startMember(cfg);
  } catch (err) {
    const msg = (err as Error).message;
    if (/EADDRINUSE|No address added/.test(msg)) throw new StartupError(`cannot listen: ${msg}`);
    if (/LOCK|lock/.test(msg)) throw new StartupError(`data dir ${dataDir} is in use by another process`);
    if (err instanceof WalCorruptError || err instanceof LogMismatchError) {
      throw new StartupError(`data dir ${dataDir}: ${msg}`);
    }
    throw err;
  }
  // Room for the client calls' grace period, then for raft and level to close.
  const shutdown = new Shutdown(logger, shutdownGraceMs(cfg) + 10_000);
  shutdown.install();
  shutdown.add(() => member.stop());
  const writeProfile = startCpuProfile();

  const registry = createRegistry();
  new Gauge({
    name: 'etcd_debugging_mvcc_current_revision',
    help: 'The current revision of the store.',
    registers: [registry],
    collect() {
      this.set(member.machine.mvcc.rev);
    },
  });
  new Gauge({
    name: 'etcd_server_is_leader',
    help: 'Whether this member is the leader (1) or not (0).',
    registers: [registry],
    collect() {
      this.set(member.node.isLeader ? 1 : 0);
    },
  });
  new Gauge({
    name: 'etcd_server_has_leader',
    help: 'Whether a leader exists (1) or not (0).',
    registers: [registry],
    collect() {
      this.set(member.node.leader ? 1 : 0);
    },
  });
  for (const url of flags.listenMetricsUrls) {
    const u = new URL(url);
    const server: Server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/health' || path === '/healthz' || path === '/readyz' || path === '/livez') {
        const ok = member.node.leader !== '';
        res.writeHead(ok ? 200 : 503, {
          'content-type': path === '/health' ? 'application/json' : 'text/plain',
        });
        res.end(path === '/health' ? JSON.stringify({ health: String(ok) }) : ok ? 'ok' : 'no leader');
        return;
      }
      if (path === '/metrics') {
        registry.metrics().then(
          (body) => {
            res.writeHead(200, { 'content-type': registry.contentType });
            res.end(body);
          },
          (err: Error) => {
            res.writeHead(500);
            res.end(err.message);
          },
        );
        return;
      }
      res.writeHead(404);
      res.end('not found\n');
    });
    await new Promise<void>((res, rej) => {
      server.once('error', rej);
      server.listen(Number(u.port), u.hostname.replace(/^\[|\]$/g, ''), () => res());
    });
    shutdown.add(() => new Promise<void>((res) => server.close(() => res())));
    logger.info({ url }, 'metrics and health listening');
  }
  // Registered last, so it runs first: the profile is written before anything slow.
  if (writeProfile) shutdown.add(writeProfile);
}

const program = new Command('kubit-store')
  .description("Kubit's raft-replicated key-value store, speaking etcd's v3 API")
  .option('--name <name>', 'human-readable name for this member', 'default')
  .option('--data-dir <dir>', 'path to the data directory (default: <name>.etcd)')
  .option('--listen-client-urls <urls>', 'URLs to listen on for client traffic', listArg, [])
  .option(
    '--advertise-client-urls <urls>',
    'client URLs to advertise to the rest of the cluster',
    listArg,
    [],
  )
  .option('--listen-peer-urls <urls>', 'URLs to listen on for peer traffic', listArg, [])
  .option('--initial-advertise-peer-urls <urls>', "this member's peer URLs to advertise", listArg, [])
  .option('--initial-cluster <list>', 'initial cluster configuration: name=peer-url,...')
  .option('--initial-cluster-state <state>', 'new or existing', 'new')
  .option('--initial-cluster-token <token>', 'initial cluster token', 'etcd-cluster')
  .option('--snapshot-count <n>', 'applied entries between log compactions', intArg(1), 100000)
  .option('--heartbeat-interval <ms>', 'time of a heartbeat interval (raft tick) in ms', intArg(10), 100)
  .option('--election-timeout <ms>', 'time for an election to time out in ms', intArg(50), 1000)
  .option('--cert-file <file>', 'client server TLS cert file')
  .option('--key-file <file>', 'client server TLS key file')
  .option('--trusted-ca-file <file>', 'client server TLS trusted CA file')
  .addOption(new Option('--client-cert-auth [bool]', 'require client certificates').argParser(boolArg))
  .option('--peer-cert-file <file>', 'peer server TLS cert file')
  .option('--peer-key-file <file>', 'peer server TLS key file')
  .option('--peer-trusted-ca-file <file>', 'peer server TLS trusted CA file')
  .addOption(
    new Option('--peer-client-cert-auth [bool]', 'require peer client certificates').argParser(boolArg),
  )
  .option('--listen-metrics-urls <urls>', 'URLs serving /metrics and /health', listArg, [])
  .option(
    '--grpc-keepalive-min-time <duration>',
    'minimum duration interval that a client should wait before pinging server',
    goDuration,
    5000,
  )
  .option(
    '--grpc-keepalive-interval <duration>',
    'frequency duration of server-to-client ping to check if a connection is alive (0 to disable)',
    goDuration,
    2 * 60 * 60 * 1000,
  )
  .option(
    '--grpc-keepalive-timeout <duration>',
    'additional duration of wait before closing a non-responsive connection (0 to disable)',
    goDuration,
    20_000,
  )
  .option(
    '--max-concurrent-streams <n>',
    'maximum concurrent streams that each client can open at a time',
    intArg(1, UNLIMITED_STREAMS),
    UNLIMITED_STREAMS,
  )
  .option(
    '--max-stream-buffered-bytes <n>',
    "response bytes a stream may queue for a client that does not read them before it is reset (kubit's own)",
    intArg(1),
    64 * 1024 * 1024,
  )
  .option('--log-level <level>', 'debug, info, warn, error', 'info')
  .action(async (opts: Flags) => {
    if (opts.listenClientUrls.length === 0) opts.listenClientUrls = ['http://localhost:2379'];
    if (opts.advertiseClientUrls.length === 0) opts.advertiseClientUrls = opts.listenClientUrls;
    if (opts.listenPeerUrls.length === 0) opts.listenPeerUrls = ['http://localhost:2380'];
    if (opts.initialAdvertisePeerUrls.length === 0) opts.initialAdvertisePeerUrls = opts.listenPeerUrls;
    await main(opts);
  });

void runMain(program);
