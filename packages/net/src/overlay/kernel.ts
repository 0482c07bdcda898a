// The overlay's one door to the kernel: iproute2 (`ip`, `bridge`), read in JSON
// and written as batches. Reading is two processes per sync (`ip -j -d -batch`
// of link, addr, route and neigh listings, then `bridge -j fdb` when the device
// exists); writing is at most one `ip -batch` and one `bridge -batch`.
// With `netns` every command runs in that named network namespace (tests, benchmarks).
import { spawn } from 'node:child_process';
import {
  type HostAddress,
  type HostRoute,
  type KernelDevice,
  type KernelState,
  type OverlayFdb,
  type OverlayNeigh,
  type OverlayRoute,
  ROUTE_PROTO,
} from './types.js';

export class IprouteError extends Error {
  override name = 'IprouteError';
}

export interface IprouteOptions {
  netns?: string;
  timeoutMs?: number;
}

export class Iproute {
  constructor(private readonly o: IprouteOptions = {}) {}

  /** Runs `program args` with `input` on stdin; resolves stdout, throws with stderr when it fails. */
  run(program: 'ip' | 'bridge', args: string[], input = ''): Promise<string> {
    const [cmd, argv] = this.o.netns
      ? ['ip', ['netns', 'exec', this.o.netns, program, ...args]]
      : [program, args];
    return new Promise((resolve, reject) => {
      const child = spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      const timer = setTimeout(() => child.kill('SIGKILL'), this.o.timeoutMs ?? 30_000);
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', (e) => {
        clearTimeout(timer);
        reject(new IprouteError(`cannot run ${program}: ${e.message}`));
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve(Buffer.concat(out).toString());
        else
          reject(
            new IprouteError(
              `${program} ${args.join(' ')} failed (exit ${code}): ${Buffer.concat(err).toString().trim().slice(0, 2000)}`,
            ),
          );
      });
      child.stdin.on('error', () => undefined);
      child.stdin.end(input);
    });
  }

  /**
   * Runs the commands as one batch. `-force` goes on past a failed command, so
   * one bad peer does not keep the others' entries out; the error names each failure.
   */
  async batch(program: 'ip' | 'bridge', commands: string[]): Promise<void> {
    if (commands.length === 0) return;
    await this.run(program, ['-force', '-batch', '-'], `${commands.join('\n')}\n`);
  }
}

interface IpLink {
  ifname: string;
  mtu: number;
  address?: string;
  flags?: string[];
  linkinfo?: {
    info_kind?: string;
    info_data?: { id?: number; local?: string; port?: number; learning?: boolean };
  };
}
interface IpAddr {
  ifname: string;
  mtu: number;
  addr_info?: { family: string; local: string; prefixlen: number }[];
}
interface IpRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  protocol?: string;
  type?: string;
  flags?: string[];
}
interface IpNeigh {
  dst: string;
  dev?: string;
  lladdr?: string;
  state?: string[];
}
interface BridgeFdb {
  mac: string;
  dst?: string;
  ifname?: string;
}

/** Parses the JSON documents `ip -j -batch` prints, one per line (a line may be empty for no objects). */
function jsonLines(out: string): unknown[][] {
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as unknown[]);
}

export async function readOverlayKernel(ipr: Iproute, deviceName: string): Promise<KernelState> {
  const out = await ipr.run(
    'ip',
    ['-j', '-d', '-batch', '-'],
    ['link show', 'addr show', 'route show table main', 'neigh show'].join('\n'),
  );
  const docs = jsonLines(out);
  if (docs.length !== 4) throw new IprouteError(`ip -j -batch printed ${docs.length} documents, expected 4`);
  const [links, addrs, routes, neighs] = docs as [IpLink[], IpAddr[], IpRoute[], IpNeigh[]];
  const link = links.find((l) => l.ifname === deviceName);
  const hostAddresses: HostAddress[] = [];
  let deviceAddrs: string[] = [];
  for (const a of addrs) {
    const v4 = (a.addr_info ?? []).filter((i) => i.family === 'inet');
    if (a.ifname === deviceName) deviceAddrs = v4.map((i) => `${i.local}/${i.prefixlen}`);
    for (const i of v4)
      hostAddresses.push({ dev: a.ifname, local: i.local, prefixlen: i.prefixlen, mtu: a.mtu });
  }
  let device: KernelDevice | undefined;
  if (link) {
    const data = link.linkinfo?.info_data;
    device = {
      name: link.ifname,
      kind: link.linkinfo?.info_kind ?? '',
      vni: data?.id,
      local: data?.local,
      port: data?.port,
      learning: data?.learning,
      mtu: link.mtu,
      mac: (link.address ?? '').toLowerCase(),
      up: (link.flags ?? []).includes('UP'),
      addresses: deviceAddrs,
    };
  }
  const hostRoutes: HostRoute[] = routes.map((r) => ({
    dst: r.dst,
    gateway: r.gateway,
    dev: r.dev,
    protocol: r.protocol,
    type: r.type,
    onlink: (r.flags ?? []).includes('onlink'),
  }));
  const owned = new Map<string, OverlayRoute>();
  for (const r of hostRoutes) {
    if (r.protocol !== String(ROUTE_PROTO) || !r.gateway) continue;
    const dst = r.dst.includes('/') ? r.dst : `${r.dst}/32`;
    owned.set(
      dst,
      r.dev === deviceName && r.onlink ? { dst, via: r.gateway, dev: r.dev } : { dst, via: r.gateway },
    );
  }
  const ownNeighs = new Map<string, OverlayNeigh>();
  for (const n of neighs) {
    if (n.dev !== deviceName || !n.lladdr || !(n.state ?? []).includes('PERMANENT')) continue;
    ownNeighs.set(n.dst, { ip: n.dst, mac: n.lladdr.toLowerCase() });
  }
  const fdb = new Map<string, OverlayFdb>();
  if (device) {
    const entries = JSON.parse(
      (await ipr.run('bridge', ['-j', 'fdb', 'show', 'dev', deviceName])) || '[]',
    ) as BridgeFdb[];
    for (const e of entries)
      if (e.dst) fdb.set(e.mac.toLowerCase(), { mac: e.mac.toLowerCase(), dst: e.dst });
  }
  return { device, routes: owned, neighs: ownNeighs, fdb, hostRoutes, hostAddresses };
}
