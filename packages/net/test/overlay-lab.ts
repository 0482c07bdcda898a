// A lab of network namespaces for the overlay: a router namespace joining
// underlay segments (a bridge per segment, 192.168.<10·k>.0/24, router .1), no
// shared segment between them and no routes to any pod subnet in the router,
// so only the overlay can carry pod traffic between segments. Each node is a
// namespace on one segment with a pod bridge (10.244.<n>.1/24) and one pod
// namespace on it (10.244.<n>.10) running a small HTTP server. A veth from the
// router to the root namespace (masqueraded in the router) lets the nodes reach
// a control plane on the host. Names carry the pid; everything but the
// root-side veth lives inside the lab's namespaces, removed by cleanup().
import { execFile, execFileSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { startProcess, type TestProcess } from '@kubit/testkit';

const run = promisify(execFile);

/** GET / → "pod <name>"; GET /bytes?n=N → N bytes; POST / → the byte count received. */
const SERVER = `
const name = process.argv[1];
require('node:http').createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  if (req.method === 'POST') { let n = 0; req.on('data', (d) => (n += d.length)); req.on('end', () => res.end(String(n))); return; }
  if (u.pathname === '/bytes') {
    let left = Number(u.searchParams.get('n'));
    res.writeHead(200, { 'content-length': left });
    const chunk = Buffer.alloc(64 * 1024, 120);
    const more = () => { while (left > 0) { const c = chunk.subarray(0, Math.min(left, chunk.length)); left -= c.length; if (!res.write(c)) return res.once('drain', more); } res.end(); };
    return more();
  }
  res.end('pod ' + name + '\\n');
}).listen(80, '0.0.0.0');
`;

/** Fetches a URL once; prints {status, bytes, ms} or {error}. */
const FETCH = `
const [url, timeoutMs] = process.argv.slice(1);
const t0 = performance.now();
const req = require('node:http').get(url, { timeout: +timeoutMs }, (res) => {
  let n = 0; let body = '';
  res.on('data', (d) => { n += d.length; if (body.length < 200) body += d.toString().slice(0, 200); });
  res.on('end', () => process.stdout.write(JSON.stringify({ status: res.statusCode, bytes: n, body: body.trim(), ms: performance.now() - t0 })));
  res.on('error', (e) => process.stdout.write(JSON.stringify({ error: e.code || e.message })));
});
req.on('timeout', () => { req.destroy(); process.stdout.write(JSON.stringify({ error: 'ETIMEDOUT' })); });
req.on('error', (e) => process.stdout.write(JSON.stringify({ error: e.code || e.message })));
`;

export interface FetchResult {
  status?: number;
  bytes?: number;
  body?: string;
  ms?: number;
  error?: string;
}

export interface LabNode {
  name: string;
  /** The node's network namespace (kubit-net runs here). */
  ns: string;
  /** The pod's network namespace. */
  podNs: string;
  segment: number;
  underlayIP: string;
  /** The node's underlay interface (inside ns). */
  underlayDev: string;
  podCIDR: string;
  podIP: string;
}

export interface OverlayLab {
  tag: string;
  /** The root namespace's address the nodes reach the host at. */
  hostIP: string;
  nodes: Map<string, LabNode>;
  addNode(name: string, segment: number, host: number, podIndex: number): LabNode;
  removeNode(name: string): void;
  /** `ip ARGS` inside a namespace, its stdout. */
  ip(ns: string, ...args: string[]): string;
  /** Sets the pod's interface MTU (both veth ends), as the CNI bridge plugin would from the conflist. */
  setPodMtu(node: string, mtu: number): void;
  /** One HTTP GET from a pod (or node) namespace. */
  fetch(fromNs: string, url: string, timeoutMs?: number): Promise<FetchResult>;
  cleanup(): void;
}

export function createOverlayLab(logDir: string): OverlayLab {
  if (process.getuid?.() !== 0) throw new Error('the overlay lab needs root (ip netns add)');
  const tag = process.pid.toString(36);
  const routerNs = `kov-${tag}-r`;
  const made: string[] = [];
  const servers = new Map<string, TestProcess>();
  const nodes = new Map<string, LabNode>();
  const segments = new Set<number>();
  const rootVeth = `kovm${tag}`;
  const ip = (ns: string, ...args: string[]) =>
    execFileSync('ip', ns ? ['-n', ns, ...args] : args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  const sysctl = (ns: string, kv: string) => execFileSync('ip', ['netns', 'exec', ns, 'sysctl', '-qw', kv]);
  const addNs = (ns: string) => {
    ip('', 'netns', 'add', ns);
    made.push(ns);
    ip(ns, 'link', 'set', 'lo', 'up');
  };
  const delNs = (ns: string) => {
    try {
      execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
    } catch {}
    const i = made.indexOf(ns);
    if (i >= 0) made.splice(i, 1);
  };
  const cleanup = () => {
    for (const s of servers.values()) if (s.running) s.child.kill('SIGKILL');
    servers.clear();
    // Deleting the router namespace takes the root-side veth's peer, so the veth goes too.
    for (const ns of [...made].reverse()) delNs(ns);
    try {
      execFileSync('ip', ['link', 'del', rootVeth], { stdio: 'ignore' });
    } catch {}
  };
  process.once('exit', cleanup);

  // A /30 in 100.66.0.0/16 no route of the host's already covers.
  const routes = execFileSync('ip', ['-4', 'route', 'show'], { encoding: 'utf8' });
  let third = randomInt(0, 256);
  for (let i = 0; i < 256 && routes.includes(`100.66.${third}.`); i++) third = (third + 1) % 256;
  const fourth = randomInt(0, 64) * 4;
  const hostIP = `100.66.${third}.${fourth + 1}`;
  const routerMgmtIP = `100.66.${third}.${fourth + 2}`;
  try {
    addNs(routerNs);
    sysctl(routerNs, 'net.ipv4.ip_forward=1');
    // Made inside the router namespace, then its peer moved out: no name is ever taken in the root namespace but this one.
    ip(
      routerNs,
      'link',
      'add',
      'mgmt',
      'type',
      'veth',
      'peer',
      'name',
      rootVeth,
      'netns',
      String(process.pid),
    );
    ip(routerNs, 'addr', 'add', `${routerMgmtIP}/30`, 'dev', 'mgmt');
    ip(routerNs, 'link', 'set', 'mgmt', 'up');
    ip('', 'addr', 'add', `${hostIP}/30`, 'dev', rootVeth);
    ip('', 'link', 'set', rootVeth, 'up');
    execFileSync('ip', ['netns', 'exec', routerNs, 'nft', '-f', '-'], {
      input: [
        'add table ip lab',
        'add chain ip lab post { type nat hook postrouting priority 100; }',
        'add rule ip lab post oifname "mgmt" masquerade',
        '',
      ].join('\n'),
    });
  } catch (err) {
    cleanup();
    throw new Error(`could not create the overlay lab: ${(err as Error).message}`);
  }

  const ensureSegment = (seg: number) => {
    if (segments.has(seg)) return;
    ip(routerNs, 'link', 'add', `seg${seg}`, 'type', 'bridge');
    ip(routerNs, 'addr', 'add', `192.168.${seg * 10}.1/24`, 'dev', `seg${seg}`);
    ip(routerNs, 'link', 'set', `seg${seg}`, 'up');
    segments.add(seg);
  };

  const lab: OverlayLab = {
    tag,
    hostIP,
    nodes,
    ip,
    addNode(name, segment, host, podIndex) {
      ensureSegment(segment);
      const ns = `kov-${tag}-${name}`;
      const podNs = `kov-${tag}-p${name}`;
      const underlayIP = `192.168.${segment * 10}.${host}`;
      const podCIDR = `10.244.${podIndex}.0/24`;
      const gw = `10.244.${podIndex}.1`;
      const podIP = `10.244.${podIndex}.10`;
      try {
        addNs(ns);
        sysctl(ns, 'net.ipv4.ip_forward=1');
        const rside = `n-${name}`;
        ip(routerNs, 'link', 'add', rside, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
        ip(routerNs, 'link', 'set', rside, 'master', `seg${segment}`);
        ip(routerNs, 'link', 'set', rside, 'up');
        ip(ns, 'addr', 'add', `${underlayIP}/24`, 'dev', 'eth0');
        ip(ns, 'link', 'set', 'eth0', 'up');
        ip(ns, 'route', 'add', 'default', 'via', `192.168.${segment * 10}.1`);
        ip(ns, 'link', 'add', 'cbr0', 'type', 'bridge');
        ip(ns, 'addr', 'add', `${gw}/24`, 'dev', 'cbr0');
        ip(ns, 'link', 'set', 'cbr0', 'up');
        addNs(podNs);
        ip(ns, 'link', 'add', 'vpod', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', podNs);
        ip(ns, 'link', 'set', 'vpod', 'master', 'cbr0');
        ip(ns, 'link', 'set', 'vpod', 'up');
        ip(podNs, 'addr', 'add', `${podIP}/24`, 'dev', 'eth0');
        ip(podNs, 'link', 'set', 'eth0', 'up');
        ip(podNs, 'route', 'add', 'default', 'via', gw);
      } catch (err) {
        throw new Error(`could not add lab node ${name}: ${(err as Error).message}`);
      }
      servers.set(
        name,
        startProcess({
          name: `pod-${name}`,
          command: 'ip',
          args: ['netns', 'exec', podNs, process.execPath, '-e', SERVER, name],
          logFile: `${logDir}/pod-${name}.log`,
        }),
      );
      const node: LabNode = { name, ns, podNs, segment, underlayIP, underlayDev: 'eth0', podCIDR, podIP };
      nodes.set(name, node);
      return node;
    },
    removeNode(name) {
      const n = nodes.get(name);
      if (!n) return;
      const s = servers.get(name);
      if (s?.running) s.child.kill('SIGKILL');
      servers.delete(name);
      delNs(n.podNs);
      delNs(n.ns);
      nodes.delete(name);
    },
    setPodMtu(name, mtu) {
      const n = nodes.get(name);
      if (!n) throw new Error(`no lab node ${name}`);
      ip(n.ns, 'link', 'set', 'vpod', 'mtu', String(mtu));
      ip(n.podNs, 'link', 'set', 'eth0', 'mtu', String(mtu));
    },
    async fetch(fromNs, url, timeoutMs = 5000) {
      const { stdout } = await run(
        'ip',
        ['netns', 'exec', fromNs, process.execPath, '-e', FETCH, url, String(timeoutMs)],
        { timeout: timeoutMs + 30_000 },
      );
      return JSON.parse(stdout) as FetchResult;
    },
    cleanup,
  };
  return lab;
}

/**
 * A kubeconfig for a process in a lab namespace: it dials the host over the lab's
 * veth and checks the apiserver's certificate against `localhost` (which the
 * test PKI's serving certificate names) rather than the address it dials.
 */
export function writeLabKubeconfig(
  path: string,
  o: { server: string; caFile: string; cert: string; key: string; user: string },
): string {
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'lab',
          cluster: { server: o.server, 'certificate-authority': o.caFile, 'tls-server-name': 'localhost' },
        },
      ],
      users: [{ name: o.user, user: { 'client-certificate': o.cert, 'client-key': o.key } }],
      contexts: [{ name: 'lab', context: { cluster: 'lab', user: o.user } }],
      'current-context': 'lab',
    }),
  );
  return path;
}
