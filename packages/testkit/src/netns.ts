// Real network partitions for fault tests: every member runs in its own
// network namespace, joined by veth pairs to a bridge the test creates, whose
// address in the root namespace lets the test client reach every member.
// A member is cut off from its peers (and only from them) by blackhole routes
// inside its namespace: its packets to them go nowhere, so neither side's
// TCP connection gets through, while the test client still reaches it.
//
// Needs root and iproute2. Names carry the creating process's PID so that a
// later run can remove what a crashed run left behind.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const run = promisify(execFile);
const IP = 'ip';
/** Namespaces are named ktn-<pid36>-<rand>-<i>, bridges ktb<pid36><rand>, host-side veths ktv<pid36><rand><i>. */
const NS_PREFIX = 'ktn-';
const BRIDGE_PREFIX = 'ktb';

export interface NetnsMember {
  /** The network namespace's name (for `ip netns exec`). */
  ns: string;
  /** The member's address on the bridge. */
  address: string;
}

export interface NetnsLab {
  /** e.g. 10.213.17.0/24 */
  subnet: string;
  /** The bridge's address in the root namespace (where the test client runs). */
  bridgeAddress: string;
  members: NetnsMember[];
  /** A command prefix that runs a program in member i's namespace. */
  launcher(i: number): string[];
  /** Cuts member i off from the members `from` (default: all others); the test client still reaches it. */
  isolate(i: number, from?: number[]): Promise<void>;
  /** Removes every blackhole route of member i. */
  heal(i: number): Promise<void>;
  /** Removes the namespaces, veths and the bridge (safe to call twice). */
  cleanup(): Promise<void>;
}

async function ip(...args: string[]): Promise<string> {
  try {
    const { stdout } = await run(IP, args, { timeout: 15_000 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`\`ip ${args.join(' ')}\` failed: ${(e.stderr ?? e.message).trim()}`);
  }
}

/** Lab resources left by processes that no longer exist (a crashed test run). */
async function sweepLeftovers(): Promise<void> {
  const dead = (pid36: string) => {
    const pid = Number.parseInt(pid36, 36);
    try {
      process.kill(pid, 0);
      return false;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ESRCH';
    }
  };
  const nsList = await ip('netns', 'list').catch(() => '');
  for (const line of nsList.split('\n')) {
    const name = line.split(' ')[0];
    const m = /^ktn-([0-9a-z]+)-[0-9a-f]+-\d+$/.exec(name);
    if (m && dead(m[1])) await ip('netns', 'del', name).catch(() => undefined);
  }
  const links = await ip('-o', 'link', 'show', 'type', 'bridge').catch(() => '');
  for (const line of links.split('\n')) {
    const name = /^\d+: ([^:@]+)/.exec(line)?.[1];
    // ktb + pid36 + 4 hex digits of randomness.
    const m = name ? /^ktb([0-9a-z]+)[0-9a-f]{4}$/.exec(name) : null;
    if (name && m && dead(m[1])) await ip('link', 'del', name).catch(() => undefined);
  }
}

/** A free 10.213.x.0/24: no address or route of this machine in it. */
async function freeSubnet(): Promise<number> {
  const used = `${await ip('-4', '-o', 'addr', 'show')}\n${await ip('-4', 'route', 'show', 'table', 'all')}`;
  for (let attempt = 0; attempt < 64; attempt++) {
    const x = 1 + Math.floor(Math.random() * 254);
    if (!used.includes(`10.213.${x}.`)) return x;
  }
  throw new Error('no free 10.213.x.0/24 subnet for the test network');
}

const liveLabs = new Set<() => void>();
process.once('exit', () => {
  for (const cleanupSync of liveLabs) cleanupSync();
});

/**
 * Creates `count` network namespaces on a new bridge. Throws an Error saying
 * what is missing when namespaces cannot be made (not root, no iproute2):
 * tests that need a real partition must fail, not skip, without them.
 */
export async function createNetnsLab(count: number): Promise<NetnsLab> {
  if (process.getuid?.() !== 0) {
    throw new Error('network namespace tests need root (ip netns add); run the tests as root');
  }
  try {
    await ip('-V');
  } catch (err) {
    throw new Error(`network namespace tests need iproute2 (the ip command): ${(err as Error).message}`);
  }
  await sweepLeftovers();
  const tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`;
  const x = await freeSubnet();
  const bridge = `${BRIDGE_PREFIX}${tag}`;
  const members: NetnsMember[] = Array.from({ length: count }, (_, i) => ({
    ns: `${NS_PREFIX}${tag.slice(0, -4)}-${tag.slice(-4)}-${i}`,
    address: `10.213.${x}.${10 + i}`,
  }));
  const veth = (i: number) => `ktv${tag}${i}`;
  if (bridge.length > 15 || veth(count - 1).length > 15)
    throw new Error(`interface name too long: ${bridge}`);

  let cleaned = false;
  const cleanupSync = () => {
    if (cleaned) return;
    cleaned = true;
    liveLabs.delete(cleanupSync);
    // Deleting a namespace takes its end of the veth pair, and with it the host end.
    for (const m of members) {
      try {
        execFileSync(IP, ['netns', 'del', m.ns], { stdio: 'ignore' });
      } catch {}
    }
    for (let i = 0; i < count; i++) {
      try {
        execFileSync(IP, ['link', 'del', veth(i)], { stdio: 'ignore' });
      } catch {}
    }
    try {
      execFileSync(IP, ['link', 'del', bridge], { stdio: 'ignore' });
    } catch {}
  };
  liveLabs.add(cleanupSync);

  try {
    await ip('link', 'add', bridge, 'type', 'bridge');
    await ip('addr', 'add', `10.213.${x}.1/24`, 'dev', bridge);
    await ip('link', 'set', bridge, 'up');
    for (let i = 0; i < count; i++) {
      const { ns, address } = members[i];
      await ip('netns', 'add', ns);
      await ip('link', 'add', veth(i), 'type', 'veth', 'peer', 'name', `${veth(i)}n`);
      await ip('link', 'set', `${veth(i)}n`, 'netns', ns);
      await ip('-n', ns, 'link', 'set', `${veth(i)}n`, 'name', 'eth0');
      await ip('-n', ns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
      await ip('-n', ns, 'link', 'set', 'eth0', 'up');
      await ip('-n', ns, 'link', 'set', 'lo', 'up');
      await ip('link', 'set', veth(i), 'master', bridge);
      await ip('link', 'set', veth(i), 'up');
    }
  } catch (err) {
    cleanupSync();
    throw new Error(
      `could not create the test network (namespaces on bridge ${bridge}): ${(err as Error).message}`,
    );
  }

  return {
    subnet: `10.213.${x}.0/24`,
    bridgeAddress: `10.213.${x}.1`,
    members,
    launcher: (i) => [IP, 'netns', 'exec', members[i].ns],
    async isolate(i, from) {
      const others = from ?? members.map((_, j) => j).filter((j) => j !== i);
      for (const j of others)
        await ip('-n', members[i].ns, 'route', 'add', 'blackhole', `${members[j].address}/32`);
    },
    async heal(i) {
      const routes = await ip('-n', members[i].ns, 'route', 'show', 'type', 'blackhole');
      for (const line of routes.split('\n')) {
        const dst = /^blackhole (\S+)/.exec(line.trim())?.[1];
        if (dst) await ip('-n', members[i].ns, 'route', 'del', 'blackhole', dst);
      }
    },
    async cleanup() {
      cleanupSync();
    },
  };
}
