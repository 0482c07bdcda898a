// A node of network namespaces for the NetworkPolicy traffic test: one "node"
// namespace holding a bridge (its address is the node's, where kubelet probes
// come from), and one namespace per "pod", joined to the bridge by a veth whose
// other end lives in the node namespace. Everything but the namespaces' names
// is inside them, so addresses and interface names cannot collide with the
// host or with other tests; the names carry the pid.
//
// Each pod runs a tiny server: TCP ports answer with the pod's name, UDP ports
// echo it. probe() runs one client process in a pod's namespace that tries many
// targets at once and reports "ok" or the error ("ETIMEDOUT" when a policy
// dropped the packet).
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { startProcess, type TestProcess } from '@kubit/testkit';

const run = promisify(execFile);

export const SUBNET = '10.77.0';
export const NODE_IP = `${SUBNET}.1`;
export const TCP_PORTS = [80, 81, 8080, 9000, 9001, 9002, 9003];
export const UDP_PORTS = [53, 5353];

const SERVER = `
const [name, tcp, udp] = process.argv.slice(1);
const net = require('node:net'), dgram = require('node:dgram');
for (const p of tcp.split(',')) net.createServer((s) => { s.on('error', () => {}); s.end(name + '\\n'); }).listen(+p, '0.0.0.0');
for (const p of udp.split(',')) { const u = dgram.createSocket('udp4'); u.on('message', (m, r) => u.send(name, r.port, r.address)); u.bind(+p, '0.0.0.0'); }
// A held connection: :7000 answers each line it reads, so the test can keep one TCP flow open.
net.createServer((s) => { s.on('error', () => {}); s.on('data', (d) => s.write(name + ':' + d)); }).listen(7000, '0.0.0.0');
`;

const PROBE = `
const targets = JSON.parse(process.argv[1]);
const timeoutMs = +process.argv[2];
const net = require('node:net'), dgram = require('node:dgram');
const tcp = (host, port) => new Promise((res) => {
  const s = net.connect({ host, port });
  let data = '';
  const t = setTimeout(() => { s.destroy(); res('ETIMEDOUT'); }, timeoutMs);
  s.on('data', (d) => (data += d));
  s.on('end', () => { clearTimeout(t); res(data.trim() ? 'ok' : 'EMPTY'); });
  s.on('error', (e) => { clearTimeout(t); res(e.code || 'ERROR'); });
});
const udp = (host, port) => new Promise((res) => {
  const u = dgram.createSocket('udp4');
  const t = setTimeout(() => { u.close(); res('ETIMEDOUT'); }, timeoutMs);
  u.on('message', () => { clearTimeout(t); u.close(); res('ok'); });
  u.on('error', (e) => { clearTimeout(t); try { u.close(); } catch {} res(e.code || 'ERROR'); });
  u.send('q', port, host);
});
Promise.all(targets.map(([proto, host, port]) => (proto === 'udp' ? udp(host, port) : tcp(host, port))))
  .then((r) => process.stdout.write(JSON.stringify(r)));
`;

/** A long-lived connection from one pod to another's :7000, to see whether it survives rule changes. */
const HOLD = `
const [host] = process.argv.slice(1);
const s = require('node:net').connect({ host, port: 7000 });
let n = 0;
s.on('data', (d) => process.stdout.write('got ' + d.toString().trim() + '\\n'));
s.on('error', (e) => { process.stdout.write('error ' + e.code + '\\n'); process.exit(1); });
s.on('close', () => { process.stdout.write('closed\\n'); process.exit(1); });
process.stdin.on('data', () => s.write(String(n++) + '\\n'));
`;

export interface LabPod {
  name: string;
  namespace: string;
  ns: string;
  ip: string;
}

export interface NetpolLab {
  nodeNs: string;
  pods: Map<string, LabPod>;
  /** Runs `probes` ([pod, proto, port] from `from`) at once; each result "ok" or an error code. */
  probe(from: string, targets: [string, 'tcp' | 'udp', number][], timeoutMs?: number): Promise<string[]>;
  /** The same probe from the node itself (as a kubelet's probe would come). */
  probeFromNode(targets: [string, 'tcp' | 'udp', number][], timeoutMs?: number): Promise<string[]>;
  hold(from: string, to: string): HeldConnection;
  cleanup(): void;
}

export interface HeldConnection {
  /** Sends one line and resolves with the echo, or rejects when none comes within timeoutMs. */
  ping(timeoutMs?: number): Promise<string>;
  close(): void;
}

export function createNetpolLab(
  pods: { name: string; namespace: string; index: number }[],
  logDir: string,
): NetpolLab {
  if (process.getuid?.() !== 0) throw new Error('the NetworkPolicy traffic test needs root (ip netns add)');
  const tag = `${process.pid.toString(36)}`;
  const nodeNs = `knp-${tag}-node`;
  const made: string[] = [];
  const servers: TestProcess[] = [];
  const holds: ChildProcess[] = [];
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const cleanup = () => {
    for (const s of servers) if (s.running) s.child.kill('SIGKILL');
    for (const h of holds) if (h.exitCode === null) h.kill('SIGKILL');
    for (const ns of made.reverse()) {
      try {
        // The veths go with the namespaces; the nft table goes with the node namespace.
        execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      } catch {}
    }
    made.length = 0;
  };
  process.once('exit', cleanup);
  const byName = new Map<string, LabPod>();
  try {
    ip('netns', 'add', nodeNs);
    made.push(nodeNs);
    ip('-n', nodeNs, 'link', 'set', 'lo', 'up');
    ip('-n', nodeNs, 'link', 'add', 'br0', 'type', 'bridge');
    ip('-n', nodeNs, 'addr', 'add', `${NODE_IP}/24`, 'dev', 'br0');
    ip('-n', nodeNs, 'link', 'set', 'br0', 'up');
    for (const p of pods) {
      const ns = `knp-${tag}-${p.index}`;
      ip('netns', 'add', ns);
      made.push(ns);
      const veth = `veth${p.index}`;
      ip('-n', nodeNs, 'link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
      ip('-n', nodeNs, 'link', 'set', veth, 'master', 'br0');
      ip('-n', nodeNs, 'link', 'set', veth, 'up');
      const addr = `${SUBNET}.${p.index}`;
      ip('-n', ns, 'addr', 'add', `${addr}/24`, 'dev', 'eth0');
      ip('-n', ns, 'link', 'set', 'eth0', 'up');
      ip('-n', ns, 'link', 'set', 'lo', 'up');
      ip('-n', ns, 'route', 'add', 'default', 'via', NODE_IP);
      byName.set(p.name, { name: p.name, namespace: p.namespace, ns, ip: addr });
      servers.push(
        startProcess({
          name: `pod-${p.name}`,
          command: 'ip',
          args: [
            'netns',
            'exec',
            ns,
            process.execPath,
            '-e',
            SERVER,
            p.name,
            TCP_PORTS.join(','),
            UDP_PORTS.join(','),
          ],
          logFile: `${logDir}/pod-${p.name}.log`,
        }),
      );
    }
  } catch (err) {
    cleanup();
    throw new Error(`could not create the NetworkPolicy lab: ${(err as Error).message}`);
  }
  const target = (name: string) => {
    if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return { ip: name, ns: '' };
    const p = byName.get(name);
    if (!p) throw new Error(`no lab pod ${name}`);
    return p;
  };
  const probeIn = async (ns: string, targets: [string, 'tcp' | 'udp', number][], timeoutMs = 1500) => {
    const list = targets.map(([to, proto, port]) => [proto, target(to).ip, port]);
    const { stdout } = await run(
      'ip',
      ['netns', 'exec', ns, process.execPath, '-e', PROBE, JSON.stringify(list), String(timeoutMs)],
      { timeout: 60_000 },
    );
    return JSON.parse(stdout) as string[];
  };
  return {
    nodeNs,
    pods: byName,
    probe: (from, targets, timeoutMs) => probeIn(target(from).ns, targets, timeoutMs),
    probeFromNode: (targets, timeoutMs) => probeIn(nodeNs, targets, timeoutMs),
    hold(from, to) {
      const child = spawn(
        'ip',
        ['netns', 'exec', target(from).ns, process.execPath, '-e', HOLD, target(to).ip],
        { stdio: ['pipe', 'pipe', 'pipe'] },
      );
      holds.push(child);
      child.stdin.on('error', () => undefined);
      let output = '';
      child.stdout.on('data', (d: Buffer) => {
        output += d.toString();
      });
      return {
        ping(timeoutMs = 3000) {
          return new Promise<string>((resolve, reject) => {
            const before = output.length;
            const started = Date.now();
            const check = () => {
              const fresh = output.slice(before);
              const got = /got (\S+)/.exec(fresh);
              if (got) resolve(got[1]);
              else if (/closed|error/.test(fresh) || Date.now() - started > timeoutMs)
                reject(
                  new Error(`no echo on the held connection ${from} → ${to}: ${fresh.trim() || 'silence'}`),
                );
              else setTimeout(check, 20);
            };
            child.stdin.write('x\n');
            check();
          });
        },
        close() {
          // By its own PID: the ip netns exec wrapper execs node, so this is the client itself.
          if (child.exitCode === null) child.kill('SIGKILL');
        },
      };
    },
    cleanup,
  };
}
