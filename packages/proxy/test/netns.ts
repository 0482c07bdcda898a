// Network namespaces for the proxy's tests: named kpt-<pid36>-<n> so that a
// later run sweeps what a crashed run left (the namespace takes its nft tables,
// veths and routes with it when deleted).
import { execFileSync } from 'node:child_process';
import { TABLE_FAMILY, TABLE_NAME } from '../src/ruleset.js';

const PREFIX = 'kpt-';
const mine = new Set<string>();
let counter = 0;

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

function sweepDead(): void {
  const list = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  for (const line of list.split('\n')) {
    const name = line.split(' ')[0];
    const m = new RegExp(`^${PREFIX}([0-9a-z]+)-\\d+$`).exec(name);
    if (m && !pidAlive(Number.parseInt(m[1], 36))) {
      try {
        execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
      } catch {}
    }
  }
}

/** A new, empty network namespace (loopback up); removed by deleteNetns or at exit. */
export function createNetns(): string {
  if (process.getuid?.() !== 0) throw new Error('the proxy tests need root (ip netns add, nft)');
  sweepDead();
  const name = `${PREFIX}${process.pid.toString(36)}-${counter++}`;
  execFileSync('ip', ['netns', 'add', name]);
  mine.add(name);
  execFileSync('ip', ['netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up']);
  return name;
}

export function deleteNetns(name: string): void {
  mine.delete(name);
  try {
    execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
  } catch {}
}

process.once('exit', () => {
  for (const n of [...mine]) deleteNetns(n);
});

export function inNetns(ns: string, cmd: string, args: string[], input?: string): string {
  return execFileSync('ip', ['netns', 'exec', ns, cmd, ...args], { encoding: 'utf8', input });
}

interface NftObject {
  [kind: string]: Record<string, unknown>;
}

/**
 * The table as nft -j lists it, made comparable: no handles, chains and sets
 * sorted by name, elements sorted, affinity sets' elements (the kernel's, not
 * ours: client addresses with their own expiry) left out. Rules keep their order.
 */
export function normalizedTable(ns: string): string | undefined {
  let out: string;
  try {
    out = inNetns(ns, 'nft', ['-j', 'list', 'table', TABLE_FAMILY, TABLE_NAME]);
  } catch {
    return undefined;
  }
  const items = (JSON.parse(out) as { nftables: NftObject[] }).nftables;
  const chains = new Map<string, { def: unknown; rules: unknown[] }>();
  const sets: [string, unknown][] = [];
  let table: unknown;
  for (const item of items) {
    const [kind, body] = Object.entries(item)[0];
    const { handle: _h, ...rest } = body;
    if (kind === 'table') table = rest;
    else if (kind === 'chain') {
      const c = chains.get(rest.name as string) ?? { def: undefined, rules: [] };
      if (c.def !== undefined) c.rules.push({ duplicateChain: rest });
      c.def = rest;
      chains.set(rest.name as string, c);
    } else if (kind === 'rule') {
      const c = chains.get(rest.chain as string) ?? { def: undefined, rules: [] };
      c.rules.push(rest.expr);
      chains.set(rest.chain as string, c);
    } else if (kind === 'set' || kind === 'map') {
      // The kernel lists a dynamic set's flags as "timeout" only: know ours by name.
      const elem = String(rest.name).startsWith('affinity-')
        ? undefined
        : ((rest.elem as unknown[] | undefined) ?? []).map((e) => JSON.stringify(e)).sort();
      sets.push([`${kind} ${rest.name}`, { ...rest, elem }]);
    }
  }
  sets.sort((a, b) => a[0].localeCompare(b[0]));
  const sortedChains = [...chains.entries()].sort((a, b) => a[0].localeCompare(b[0]));
  return JSON.stringify({ table, sets, chains: sortedChains }, null, 1);
}
