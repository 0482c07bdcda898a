// Turns one NetpolRuleset into another with a single nft transaction (`nft -f -`
// applies the whole script or none of it). Only what changed is written: a set
// or map gets the elements it gains and loses, a chain whose rules changed is
// flushed and written again inside the same transaction, so no packet ever sees
// it half-written and chains of other policies are not touched. Conntrack
// entries are not rules, so established connections survive any change.
import {
  NETPOL_FAMILY,
  type NetpolChain,
  type NetpolMap,
  type NetpolRuleset,
  type NetpolSet,
} from './ruleset.js';

/** Elements per `add element` command: keeps single lines of a 1,000-pod set reasonable. */
const CHUNK = 256;

/** The comment on a chain's last rule: the digest of its rules, read back after a restart (kernel.ts). */
export const DIGEST_PREFIX = 'kubit:';

export function chainDigest(c: NetpolChain): string {
  // FNV-1a over the rule texts: small, stable and good enough to tell rule lists apart.
  let h = 0x811c9dc5;
  for (const ch of `${c.base ? `${c.base.hook}/${c.base.priority}` : ''}\n${c.rules.join('\n')}`) {
    h ^= ch.charCodeAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return `${DIGEST_PREFIX}${h.toString(16).padStart(8, '0')}`;
}

function chainDecl(t: string, name: string, c: NetpolChain): string {
  return c.base
    ? `add chain ${t} ${name} { type filter hook ${c.base.hook} priority ${c.base.priority}; policy accept; }`
    : `add chain ${t} ${name}`;
}

function setDecl(t: string, name: string, s: NetpolSet): string {
  return `add set ${t} ${name} { type ${s.type};${s.interval ? ' flags interval;' : ''} }`;
}

function mapDecl(t: string, name: string, m: NetpolMap): string {
  return `add map ${t} ${name} { type ${m.type} : verdict; }`;
}

function elementLines(verb: 'add' | 'delete', t: string, name: string, items: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < items.length; i += CHUNK) {
    out.push(`${verb} element ${t} ${name} { ${items.slice(i, i + CHUNK).join(', ')} }`);
  }
  return out;
}

function chainRules(t: string, name: string, c: NetpolChain): string[] {
  const rules = c.rules.length > 0 ? [...c.rules] : ['counter'];
  rules[rules.length - 1] = `${rules[rules.length - 1]} comment "${chainDigest(c)}"`;
  return rules.map((r) => `add rule ${t} ${name} ${r}`);
}

function sameRules(a: NetpolChain | undefined, b: NetpolChain): boolean {
  if (a?.digest !== undefined) return a.digest === chainDigest(b);
  return (
    a !== undefined &&
    a.base?.hook === b.base?.hook &&
    a.base?.priority === b.base?.priority &&
    a.rules.length === b.rules.length &&
    a.rules.every((r, i) => r === b.rules[i])
  );
}

/**
 * The script that turns `prev` (what the kernel holds; undefined: no table) into `next`.
 * Empty when nothing changed. Order matters inside the transaction: objects are
 * declared before anything refers to them and deleted after nothing does.
 */
export function netpolDiff(prev: NetpolRuleset | undefined, next: NetpolRuleset): string {
  const t = `${NETPOL_FAMILY} ${next.table}`;
  const lines: string[] = [];
  const declare: string[] = [];
  const elements: string[] = [];
  const rewrite: string[] = [];
  const drop: string[] = [];
  const flushBeforeDrop: string[] = [];

  for (const [name, s] of next.sets) {
    const old = prev?.sets.get(name);
    if (old && (old.type !== s.type || old.interval !== s.interval)) {
      // A set's type cannot change: the chains using it are rewritten below, so drop and declare again.
      throw new Error(`set ${name} changed type; a planner bug`);
    }
    if (!old) declare.push(setDecl(t, name, s));
    const gone = old ? [...old.elements].filter((e) => !s.elements.has(e)) : [];
    const added = [...s.elements].filter((e) => !old?.elements.has(e));
    elements.push(...elementLines('delete', t, name, gone), ...elementLines('add', t, name, added));
  }
  for (const [name, m] of next.maps) {
    const old = prev?.maps.get(name);
    if (!old) declare.push(mapDecl(t, name, m));
    const gone: string[] = [];
    const added: string[] = [];
    for (const [k, v] of old?.elements ?? []) if (m.elements.get(k) !== v) gone.push(k);
    for (const [k, v] of m.elements) if (old?.elements.get(k) !== v) added.push(`${k} : ${v}`);
    elements.push(...elementLines('delete', t, name, gone), ...elementLines('add', t, name, added));
  }
  for (const [name, c] of next.chains) {
    const old = prev?.chains.get(name);
    if (!old) declare.push(chainDecl(t, name, c));
    if (!sameRules(old, c)) {
      if (old) rewrite.push(`flush chain ${t} ${name}`);
      rewrite.push(...chainRules(t, name, c));
    }
  }
  for (const name of prev?.chains.keys() ?? []) {
    if (!next.chains.has(name)) {
      flushBeforeDrop.push(`flush chain ${t} ${name}`);
      drop.push(`delete chain ${t} ${name}`);
    }
  }
  for (const name of prev?.sets.keys() ?? []) if (!next.sets.has(name)) drop.push(`delete set ${t} ${name}`);
  for (const name of prev?.maps.keys() ?? []) if (!next.maps.has(name)) drop.push(`delete map ${t} ${name}`);

  if (declare.length + elements.length + rewrite.length + drop.length === 0) return '';
  if (!prev) lines.push(`add table ${t}`);
  // Chains first (a map's `jump` needs its chain), then sets and maps, then the
  // elements (a map element may point at a new chain), then the rules (they name
  // sets), then what went: flushed, so that no rule refers to it, then deleted.
  lines.push(...declare.filter((l) => l.startsWith('add chain')));
  lines.push(...declare.filter((l) => !l.startsWith('add chain')));
  lines.push(...elements, ...rewrite, ...flushBeforeDrop, ...drop);
  return `${lines.join('\n')}\n`;
}

/** Removes this node's table (the agent's --cleanup, and tests). */
export function deleteNetpolTableScript(table: string): string {
  return `add table ${NETPOL_FAMILY} ${table}\ndelete table ${NETPOL_FAMILY} ${table}\n`;
}
