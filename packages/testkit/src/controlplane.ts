// A control plane for one test file: a store (real etcd 3.4 today, kubit-store
// later) and kubit-apiserver, as real processes on free loopback ports, with a
// fresh PKI and an admin kubeconfig.
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { certKubeconfigYaml } from '@kubit/client';
import { type ApiServerFlags, apiserverArgs } from '@kubit/daemon/daemon-args';
import { Etcd3 } from 'etcd3';
import { StoreCluster, type StoreProgram } from './etcd.js';
import { generatePki, type Pki } from './pki.js';
import { daemonCommand, freePort, startProcess, type TestProcess, tempDir, waitFor } from './process.js';

/** A running store the apiserver can use: etcd v3 gRPC endpoints over TLS. */
export interface RunningStore {
  endpoints: string[];
  stop(): Promise<void>;
  /** The processes, for fault-injection tests (kill a member, ...). */
  processes: TestProcess[];
  /** The cluster, when the store is a multi-member one (etcdctl, leader, ...). */
  cluster?: StoreCluster;
}

/**
 * Starts a store speaking etcd's v3 API over TLS with the PKI's `store` cert,
 * requiring client certs signed by the CA. Implement this for kubit-store to
 * run every control-plane test on it.
 */
export type StoreBackend = (opts: { dir: string; pki: Pki; logDir: string }) => Promise<RunningStore>;

/** Both programs take etcd's flags; only the command and a few etcd-only flags differ. */
function storeBackend(program: 'etcd' | 'kubit-store'): StoreBackend {
  return async ({ dir, pki, logDir }) => {
    const clientPort = await freePort();
    const peerPort = await freePort();
    const clientUrl = `https://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const cmd = program === 'etcd' ? { command: 'etcd', args: [] } : daemonCommand('store', 'main.ts');
    const logFile = join(logDir, `${program}.log`);
    const proc = startProcess({
      name: program,
      command: cmd.command,
      args: [
        ...cmd.args,
        '--name=default',
        `--data-dir=${join(dir, `${program}-data`)}`,
        `--listen-client-urls=${clientUrl}`,
        `--advertise-client-urls=${clientUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=default=${peerUrl}`,
        `--cert-file=${pki.store.cert}`,
        `--key-file=${pki.store.key}`,
        `--trusted-ca-file=${pki.caFile}`,
        '--client-cert-auth',
        '--log-level=warn',
        ...(program === 'etcd' ? ['--logger=zap'] : []),
      ],
      logFile,
    });
    // Ready when a client with the apiserver's certificate can read through the v3 API.
    const client = new Etcd3({
      hosts: [clientUrl],
      credentials: {
        rootCertificate: readFileSync(pki.caFile),
        certChain: readFileSync(pki.apiserverEtcdClient.cert),
        privateKey: readFileSync(pki.apiserverEtcdClient.key),
      },
      dialTimeout: 2000,
    });
    try {
      await waitFor(`${program} to serve`, async () => {
        if (!proc.running) throw new Error(`${program} exited; see ${logFile}`);
        await client.get('/kubit/health-probe').string();
        return true;
      });
    } finally {
      client.close();
    }
    return { endpoints: [clientUrl], stop: () => proc.stop(), processes: [proc] };
  };
}

/** The real etcd (Debian's etcd-server 3.4), one member. */
export const etcdBackend: StoreBackend = storeBackend('etcd');

/** kubit-store, one member (from sources under the test runner). */
export const kubitStoreBackend: StoreBackend = storeBackend('kubit-store');

/**
 * A cluster of `size` members of `program` over TLS with the control plane's PKI
 * (a quorum of real processes: what a write costs in production).
 */
export function clusterStoreBackend(program: StoreProgram, size: number): StoreBackend {
  return async ({ pki }) => {
    const cluster = await StoreCluster.start({
      program,
      size,
      args: ['--log-level=warn'],
      tls: {
        cert: pki.store.cert,
        key: pki.store.key,
        ca: pki.caFile,
        clientCert: pki.apiserverEtcdClient.cert,
        clientKey: pki.apiserverEtcdClient.key,
      },
    });
    return {
      endpoints: cluster.allEndpoints.map((e) => `https://${e}`),
      processes: cluster.members.flatMap((m) => (m.process ? [m.process] : [])),
      cluster,
      stop: () => cluster.destroy(),
    };
  };
}

/**
 * Chooses the store: KUBIT_TEST_STORE=etcd (default) or kubit-store, with
 * KUBIT_TEST_STORE_MEMBERS members (default 1).
 */
export function defaultStoreBackend(): StoreBackend {
  const which = process.env.KUBIT_TEST_STORE ?? 'etcd';
  const membersText = process.env.KUBIT_TEST_STORE_MEMBERS ?? '1';
  const members = Number(membersText);
  if (!Number.isInteger(members) || members < 1 || members > 7) {
    throw new Error(`KUBIT_TEST_STORE_MEMBERS=${membersText}: expected a member count from 1 to 7`);
  }
  if (which !== 'etcd' && which !== 'kubit-store') {
    throw new Error(`KUBIT_TEST_STORE=${which}: no such store backend (known: etcd, kubit-store)`);
  }
  if (members > 1) return clusterStoreBackend(which, members);
  return which === 'etcd' ? etcdBackend : kubitStoreBackend;
}

export interface ControlPlaneOptions {
  store?: StoreBackend;
  /** Nodes to make kubelet certs for (see kubeconfigForNode). */
  nodes?: string[];
  /** Extra flags for kubit-apiserver. */
  apiserverArgs?: string[];
  /** Extra lines for the --token-auth-file CSV (token,user,uid,"g1,g2"). */
  tokens?: string[];
}

export interface ControlPlane {
  /** https://127.0.0.1:<port> */
  url: string;
  kubeconfigPath: string;
  caFile: string;
  clientCert: string;
  clientKey: string;
  pki: Pki;
  /** Where the PKI, kubeconfigs, logs and data live; removed by stop(). */
  dir: string;
  logDir: string;
  storeEndpoints: string[];
  apiserver: TestProcess;
  store: RunningStore;
  /** Writes a kubeconfig for a client cert pair and returns its path. */
  kubeconfigFor(name: string, cert: { cert: string; key: string }): Promise<string>;
  /** kubeconfig for the kubelet of `node` (must be in options.nodes). */
  kubeconfigForNode(node: string): Promise<string>;
  /** Stops the apiserver then the store (by PID), removes the directory. */
  stop(): Promise<void>;
}

export async function writeKubeconfig(
  path: string,
  opts: { server: string; caFile: string; cert: string; key: string; user?: string },
): Promise<void> {
  const text = certKubeconfigYaml({
    server: opts.server,
    caFile: opts.caFile,
    certFile: opts.cert,
    keyFile: opts.key,
    user: opts.user ?? 'user',
    namespace: 'default',
  });
  await writeFile(path, text);
}

/**
 * The apiserver's flags for a test PKI: its serving pair, mTLS towards the
 * store and the kubelets, client certificates checked against the CA, Node and
 * RBAC authorization. The harness's apiserver and a test's restarted one share it.
 */
export function pkiApiserverFlags(pki: Pki, storeEndpoints: string[]): ApiServerFlags {
  return {
    tlsCertFile: pki.apiserver.cert,
    tlsPrivateKeyFile: pki.apiserver.key,
    clientCaFile: pki.caFile,
    etcdServers: storeEndpoints,
    etcdCaFile: pki.caFile,
    etcdCertFile: pki.apiserverEtcdClient.cert,
    etcdKeyFile: pki.apiserverEtcdClient.key,
    authorizationModes: ['Node', 'RBAC'],
    kubeletClientCertificate: pki.apiserverKubeletClient.cert,
    kubeletClientKey: pki.apiserverKubeletClient.key,
    kubeletCertificateAuthority: pki.caFile,
  };
}

export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const tmp = await tempDir('kubit-cp-');
  const dir = tmp.path;
  const logDir = join(dir, 'logs');
  await mkdir(logDir, { recursive: true });
  const nodes = options.nodes ?? [];
  const pki = await generatePki(join(dir, 'pki'), nodes).catch(async (err: unknown) => {
    await tmp.cleanup();
    throw err;
  });
  const backend = options.store ?? defaultStoreBackend();
  let store: RunningStore | undefined;
  let apiserver: TestProcess | undefined;
  try {
    store = await backend({ dir, pki, logDir });
    const port = await freePort();
    const tokenFile = join(dir, 'tokens.csv');
    await writeFile(tokenFile, (options.tokens ?? []).map((l) => `${l}\n`).join(''));
    const cmd = daemonCommand('apiserver', 'main.ts');
    // KUBIT_APISERVER_CPU_PROF=<dir>: profile the apiserver (a .cpuprofile lands there at stop).
    const profDir = process.env.KUBIT_APISERVER_CPU_PROF;
    apiserver = startProcess({
      name: 'kubit-apiserver',
      command: cmd.command,
      args: [
        ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []),
        ...cmd.args,
        ...apiserverArgs({
          bindAddress: '127.0.0.1',
          securePort: port,
          ...pkiApiserverFlags(pki, store.endpoints),
          tokenAuthFile: tokenFile,
        }),
        ...(options.apiserverArgs ?? []),
      ],
      env: { KUBIT_LOG_FORMAT: 'json' },
      logFile: join(logDir, 'apiserver.log'),
    });
    const url = `https://127.0.0.1:${port}`;
    const proc = apiserver;
    await waitFor(
      'kubit-apiserver to be ready',
      async () => {
        if (!proc.running) {
          throw new Error(`kubit-apiserver exited: ${tail(join(logDir, 'apiserver.log'))}`);
        }
        const r = await httpsGet(`${url}/readyz`, pki.caFile, pki.admin);
        return r.status === 200;
      },
      // Generous: on a loaded 2-core machine compiling the sources under tsx alone takes seconds.
      120_000,
      200,
    );
    const kubeconfigPath = join(dir, 'admin.kubeconfig');
    await writeKubeconfig(kubeconfigPath, { server: url, caFile: pki.caFile, ...pki.admin, user: 'admin' });
    const runningStore = store;
    return {
      url,
      kubeconfigPath,
      caFile: pki.caFile,
      clientCert: pki.admin.cert,
      clientKey: pki.admin.key,
      pki,
      dir,
      logDir,
      storeEndpoints: store.endpoints,
      apiserver,
      store,
      async kubeconfigFor(name, cert) {
        const path = join(dir, `${name}.kubeconfig`);
        await writeKubeconfig(path, { server: url, caFile: pki.caFile, ...cert, user: name });
        return path;
      },
      async kubeconfigForNode(node) {
        const path = join(dir, `kubelet-${node}.kubeconfig`);
        await writeKubeconfig(path, {
          server: url,
          caFile: pki.caFile,
          ...pki.kubeletClient(node),
          user: node,
        });
        return path;
      },
      async stop() {
        await proc.stop();
        await runningStore.stop();
        await tmp.cleanup();
      },
    };
  } catch (err) {
    await apiserver?.stop();
    await store?.stop();
    await tmp.cleanup();
    throw err;
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-5).join('\n');
  } catch {
    return '(no log)';
  }
}

/** A GET over HTTPS with a client cert; resolves with status and body text. */
export function httpsGet(
  url: string,
  caFile: string,
  client: { cert: string; key: string },
): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = request(
      url,
      {
        method: 'GET',
        ca: readFileSync(caFile),
        cert: readFileSync(client.cert),
        key: readFileSync(client.key),
      },
      (resp) => {
        const chunks: Buffer[] = [];
        resp.on('data', (c: Buffer) => chunks.push(c));
        resp.on('end', () => res({ status: resp.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        resp.on('error', rej);
      },
    );
    req.on('error', rej);
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.end();
  });
}
