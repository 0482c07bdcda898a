// Routes between the compose cluster's nodes: every other node's pod subnet
// (spec.podCIDR, from the controller manager's node IPAM) goes through that
// node's InternalIP on the compose network, so a pod reaches a pod on another
// node by its IP without NAT or an overlay. Polls the apiserver with this
// node's kubelet credentials (nodes may list nodes) and keeps `ip route` in
// step: adds or changes what is missing, removes what it added for nodes that
// are gone. Runs beside the kubelet in the node container.
//   node route-sync.mjs --kubeconfig FILE --node-name NAME [--interval-ms N]
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { promisify } from 'node:util';

const run = promisify(execFile);

function flag(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  if (i >= 0 && process.argv[i + 1]) return process.argv[i + 1];
  if (fallback !== undefined) return fallback;
  console.error(`route-sync: --${name} is required`);
  process.exit(2);
}

const kubeconfigFile = flag('kubeconfig');
const self = flag('node-name');
const intervalMs = Number(flag('interval-ms', '2000'));

/** The fields of the file-reference kubeconfig deploy/docker/control-plane/init.sh writes. */
function readKubeconfig(file) {
  const text = readFileSync(file, 'utf8');
  const field = (key) => {
    const m = new RegExp(`^\\s*${key}:\\s*(\\S+)\\s*$`, 'm').exec(text);
    if (!m) throw new Error(`${file} has no ${key}`);
    return m[1];
  };
  return {
    server: new URL(field('server')),
    ca: readFileSync(field('certificate-authority')),
    cert: readFileSync(field('client-certificate')),
    key: readFileSync(field('client-key')),
  };
}

function listNodes(kc) {
  return new Promise((resolve, reject) => {
    const req = request(
      new URL('/api/v1/nodes', kc.server),
      { ca: kc.ca, cert: kc.cert, key: kc.key, timeout: 10_000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => {
          if (res.statusCode !== 200)
            return reject(new Error(`GET /api/v1/nodes: ${res.statusCode} ${body}`));
          try {
            resolve(JSON.parse(body).items ?? []);
          } catch (err) {
            reject(err);
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** podCIDR -> gateway for every other node that has both. */
function wantedRoutes(nodes) {
  const want = new Map();
  for (const n of nodes) {
    if (n.metadata?.name === self) continue;
    const cidr = n.spec?.podCIDR;
    const ip = (n.status?.addresses ?? []).find((a) => a.type === 'InternalIP')?.address;
    if (cidr && ip) want.set(cidr, ip);
  }
  return want;
}

const installed = new Map();
let lastError = '';

async function syncOnce(kc) {
  const want = wantedRoutes(await listNodes(kc));
  for (const [cidr, via] of want) {
    if (installed.get(cidr) === via) continue;
    await run('ip', ['route', 'replace', cidr, 'via', via]);
    installed.set(cidr, via);
    console.error(`route-sync ${self}: ${cidr} via ${via}`);
  }
  for (const cidr of [...installed.keys()]) {
    if (want.has(cidr)) continue;
    await run('ip', ['route', 'del', cidr]).catch(() => undefined);
    installed.delete(cidr);
    console.error(`route-sync ${self}: removed ${cidr}`);
  }
}

async function loop() {
  for (;;) {
    try {
      await syncOnce(readKubeconfig(kubeconfigFile));
      lastError = '';
    } catch (err) {
      // The apiserver may not answer yet; say so once per distinct error.
      const msg = err instanceof Error ? err.message : String(err);
      if (msg !== lastError) console.error(`route-sync ${self}: ${msg}`);
      lastError = msg;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

process.on('SIGTERM', () => process.exit(0));
await loop();
