// Reads this node's table back from the kernel (`nft -j list table`) into a
// NetpolRuleset, so that an agent that starts (again, after a crash or kill -9)
// diffs against what is really there: what was right stays untouched, and
// only what changed while it was away is written. Chains are recognised by the
// digest comment on their last rule (differ.ts); sets and maps by their elements.
import type { NftRunner } from '@kubit/proxy';
import { DIGEST_PREFIX } from './differ.js';
import { cidrRange, ipRange, type Range, rangeText } from './intervals.js';
import { NETPOL_FAMILY, type NetpolRuleset } from './ruleset.js';

type Json = Record<string, unknown>;

const PROTO_NAMES: Record<string, string> = { '6': 'tcp', '17': 'udp', '132': 'sctp' };

function isObj(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** One element's text in the planner's canonical form, or undefined when it is not one we write. */
function elementText(v: unknown): string | undefined {
  if (isObj(v) && isObj(v.elem)) return elementText(v.elem.val);
  if (typeof v === 'string') return rangeTextOf(ipRange(v));
  if (typeof v === 'number') return String(v);
  if (!isObj(v)) return undefined;
  if (isObj(v.prefix)) return rangeTextOf(cidrRange(`${v.prefix.addr}/${v.prefix.len}`));
  if (Array.isArray(v.range) && typeof v.range[0] === 'string' && typeof v.range[1] === 'string') {
    const a = ipRange(v.range[0]);
    const b = ipRange(v.range[1]);
    return a && b ? rangeText([a[0], b[0]]) : undefined;
  }
  if (Array.isArray(v.concat)) {
    const [ip, proto, port] = v.concat as unknown[];
    const p = String(proto);
    return `${ip} . ${PROTO_NAMES[p] ?? p} . ${port}`;
  }
  return undefined;
}

function rangeTextOf(r: Range | undefined): string | undefined {
  return r ? rangeText(r) : undefined;
}

function verdictText(v: unknown): string | undefined {
  if (isObj(v) && isObj(v.jump) && typeof v.jump.target === 'string') return `jump ${v.jump.target}`;
  if (isObj(v) && isObj(v.goto) && typeof v.goto.target === 'string') return `goto ${v.goto.target}`;
  return undefined;
}

/** What the kernel holds in the table, or undefined when there is no such table. */
export async function readNetpolTable(nft: NftRunner, table: string): Promise<NetpolRuleset | undefined> {
  const text = await nft.listTable(NETPOL_FAMILY, table, true);
  if (text === undefined) return undefined;
  const items = (JSON.parse(text) as { nftables?: Json[] }).nftables ?? [];
  const rs: NetpolRuleset = {
    table,
    chains: new Map(),
    sets: new Map(),
    maps: new Map(),
    stats: { policies: 0, localPods: 0, isolatedIngress: 0, isolatedEgress: 0 },
    skipped: [],
  };
  const lastComment = new Map<string, string>();
  for (const item of items) {
    if (isObj(item.chain)) {
      const c = item.chain;
      const base =
        (c.hook === 'forward' || c.hook === 'input') && typeof c.prio === 'number'
          ? { hook: c.hook as 'forward' | 'input', priority: c.prio }
          : undefined;
      rs.chains.set(String(c.name), { base, rules: [], digest: '' });
    } else if (isObj(item.rule)) {
      const r = item.rule;
      // The digest is on the chain's last rule; an earlier comment is overwritten by the later ones.
      lastComment.set(String(r.chain), typeof r.comment === 'string' ? r.comment : '');
    } else if (isObj(item.map)) {
      const m = item.map;
      const elements = new Map<string, string>();
      for (const e of Array.isArray(m.elem) ? m.elem : []) {
        if (!Array.isArray(e)) continue;
        const k = elementText(e[0]);
        const v = verdictText(e[1]);
        if (k !== undefined && v !== undefined) elements.set(k, v);
      }
      rs.maps.set(String(m.name), { type: String(m.type), elements });
    } else if (isObj(item.set)) {
      const s = item.set;
      const type = Array.isArray(s.type) ? s.type.join(' . ') : String(s.type);
      const interval = Array.isArray(s.flags) && s.flags.includes('interval');
      const elements = new Set<string>();
      for (const e of Array.isArray(s.elem) ? s.elem : []) {
        const t = elementText(e);
        if (t !== undefined) elements.add(t);
      }
      rs.sets.set(String(s.name), { type, interval, elements });
    }
  }
  for (const [name, c] of rs.chains) {
    const comment = lastComment.get(name) ?? '';
    // A chain without our digest is rewritten: the empty digest matches no planned chain.
    c.digest = comment.startsWith(DIGEST_PREFIX) ? comment : '';
  }
  return rs;
}
