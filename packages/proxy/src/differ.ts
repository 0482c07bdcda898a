// The differ: the one nft script that turns the ruleset the kernel holds
// (`previous`, what we last applied) into the one the planner wants, touching
// only what changed. It works in two steps: a RulesetDelta (what changed, each
// thing with its before and after), then the script that delta needs. A full
// comparison (rulesetDelta) gives the delta of two whole rulesets; the proxier's
// incremental plan (incremental.ts) records one as it re-plans a few Services,
// so an incremental sync never walks the whole ruleset. nft runs a script as one
// transaction, so the order of its commands only has to make every reference
// valid at each step:
//   1. declare new sets, maps and chains (rules and elements may point at them);
//   2. rewrite changed chains (flush, then their rules) and fill new ones — after
//      this no rule points at a chain or set about to go;
//   3. map and set elements: deletes, then adds (a changed verdict is both);
//   4. flush the chains that went, then delete them, then the sets and maps that went.
// With no previous ruleset (first sync, or after a failed one, when we no longer
// know what the kernel holds) the whole table is replaced (fullScript).
import {
  type ChainDef,
  chainDecl,
  elementLines,
  fullScript,
  type MapDef,
  mapDecl,
  mapItems,
  mapSpec,
  type Ruleset,
  ruleLine,
  type SetDef,
  setDecl,
  setSpec,
  tableRef,
} from './ruleset.js';

/** One thing's value before and after (undefined: absent). */
export interface Change<T> {
  before: T | undefined;
  after: T | undefined;
}

/**
 * What changed between two rulesets. `chains`, `sets` and `maps` hold the objects
 * that were added, removed or changed (a set or map present on both sides with other
 * elements is diffed element by element from its two definitions); `setElements` and
 * `mapElements` hold element changes of sets and maps present on both sides, listed
 * there instead of in `sets`/`maps` (the skeleton's shared sets and maps).
 */
export interface RulesetDelta {
  chains: Map<string, Change<ChainDef>>;
  sets: Map<string, Change<SetDef>>;
  maps: Map<string, Change<MapDef>>;
  setElements: Map<string, { added: string[]; removed: string[] }>;
  mapElements: Map<string, Map<string, Change<string>>>;
}

export function emptyDelta(): RulesetDelta {
  return {
    chains: new Map(),
    sets: new Map(),
    maps: new Map(),
    setElements: new Map(),
    mapElements: new Map(),
  };
}

export function sameRules(a: ChainDef, b: ChainDef): boolean {
  return a.rules.length === b.rules.length && a.rules.every((r, i) => r === b.rules[i]);
}

function sameBase(a: ChainDef, b: ChainDef): boolean {
  return JSON.stringify(a.base ?? null) === JSON.stringify(b.base ?? null);
}

export function sameChain(a: ChainDef, b: ChainDef): boolean {
  return sameBase(a, b) && sameRules(a, b);
}

function setElementDiff(p: Set<string>, s: Set<string>): { added: string[]; removed: string[] } {
  const removed: string[] = [];
  const added: string[] = [];
  for (const e of p) if (!s.has(e)) removed.push(e);
  for (const e of s) if (!p.has(e)) added.push(e);
  return { added, removed };
}

function mapElementDiff(p: Map<string, string>, m: Map<string, string>): Map<string, Change<string>> {
  const out = new Map<string, Change<string>>();
  for (const [k, v] of p) {
    const now = m.get(k);
    if (now !== v) out.set(k, { before: v, after: now });
  }
  for (const [k, v] of m) if (!p.has(k)) out.set(k, { before: undefined, after: v });
  return out;
}

/** The delta from `previous` to `desired`, comparing everything. */
export function rulesetDelta(previous: Ruleset, desired: Ruleset): RulesetDelta {
  const d = emptyDelta();
  for (const [name, s] of desired.sets) {
    const p = previous.sets.get(name);
    if (!p) d.sets.set(name, { before: undefined, after: s });
    else if (setSpec(p) !== setSpec(s)) d.sets.set(name, { before: p, after: s });
    else {
      const e = setElementDiff(p.elements, s.elements);
      if (e.added.length || e.removed.length) d.setElements.set(name, e);
    }
  }
  for (const [name, p] of previous.sets)
    if (!desired.sets.has(name)) d.sets.set(name, { before: p, after: undefined });
  for (const [name, m] of desired.maps) {
    const p = previous.maps.get(name);
    if (!p) d.maps.set(name, { before: undefined, after: m });
    else if (mapSpec(p) !== mapSpec(m)) d.maps.set(name, { before: p, after: m });
    else {
      const e = mapElementDiff(p.elements, m.elements);
      if (e.size) d.mapElements.set(name, e);
    }
  }
  for (const [name, p] of previous.maps)
    if (!desired.maps.has(name)) d.maps.set(name, { before: p, after: undefined });
  for (const [name, c] of desired.chains) {
    const p = previous.chains.get(name);
    if (!p || !sameChain(p, c)) d.chains.set(name, { before: p, after: c });
  }
  for (const [name, p] of previous.chains) {
    if (!desired.chains.has(name)) d.chains.set(name, { before: p, after: undefined });
  }
  return d;
}

/**
 * The script a delta needs; `desired` (the ruleset after it) is what a full replace
 * writes when the delta cannot be applied in place. "" when nothing changed.
 */
export function deltaScript(d: RulesetDelta, desired: Ruleset): string {
  const t = tableRef(desired.table);
  const declare: string[] = [];
  const rewrite: string[] = [];
  const elementDeletes: string[] = [];
  const elementAdds: string[] = [];
  const goneChains: string[] = [];
  const goneSets: string[] = [];
  const goneMaps: string[] = [];

  for (const [name, { before: p, after: s }] of d.sets) {
    if (!s) {
      if (p) goneSets.push(name);
      continue;
    }
    if (!p) {
      declare.push(setDecl(t, name, s));
      if (s.elements.size) elementAdds.push(...elementLines('add', t, name, [...s.elements]));
      continue;
    }
    // A set whose type, flags or timeout changed (an affinity timeout edited) cannot be
    // altered in place and rules point at it: rebuild the table, rare as it is.
    if (setSpec(p) !== setSpec(s)) return fullScript(desired);
    const e = setElementDiff(p.elements, s.elements);
    if (e.removed.length) elementDeletes.push(...elementLines('delete', t, name, e.removed));
    if (e.added.length) elementAdds.push(...elementLines('add', t, name, e.added));
  }
  for (const [name, { added, removed }] of d.setElements) {
    if (removed.length) elementDeletes.push(...elementLines('delete', t, name, removed));
    if (added.length) elementAdds.push(...elementLines('add', t, name, added));
  }
  const mapElementChanges = (name: string, changes: Map<string, Change<string>>) => {
    const gone: string[] = [];
    const added: [string, string][] = [];
    for (const [k, { before, after }] of changes) {
      if (before === after) continue;
      if (before !== undefined) gone.push(k);
      if (after !== undefined) added.push([k, after]);
    }
    if (gone.length) elementDeletes.push(...elementLines('delete', t, name, gone));
    if (added.length) elementAdds.push(...elementLines('add', t, name, mapItems(added)));
  };
  for (const [name, { before: p, after: m }] of d.maps) {
    if (!m) {
      if (p) goneMaps.push(name);
      continue;
    }
    if (!p) {
      declare.push(mapDecl(t, name, m));
      if (m.elements.size) elementAdds.push(...elementLines('add', t, name, mapItems(m.elements)));
      continue;
    }
    if (mapSpec(p) !== mapSpec(m)) return fullScript(desired);
    mapElementChanges(name, mapElementDiff(p.elements, m.elements));
  }
  for (const [name, changes] of d.mapElements) mapElementChanges(name, changes);

  for (const [name, { before: p, after: c }] of d.chains) {
    if (!c) {
      if (p) goneChains.push(name);
      continue;
    }
    if (p && sameChain(p, c)) continue;
    if (!p) declare.push(chainDecl(t, name, c));
    else if (!sameBase(p, c)) return fullScript(desired);
    else rewrite.push(`flush chain ${t} ${name}`);
    for (const rule of c.rules) rewrite.push(ruleLine(t, name, rule));
  }

  // Gone chains may jump to each other (external- to service-): flush them all
  // before deleting any, or the kernel refuses a delete of a chain still referenced.
  const remove: string[] = [];
  for (const name of goneChains) remove.push(`flush chain ${t} ${name}`);
  for (const name of goneChains) remove.push(`delete chain ${t} ${name}`);
  for (const name of goneSets) remove.push(`delete set ${t} ${name}`);
  for (const name of goneMaps) remove.push(`delete map ${t} ${name}`);

  const lines = [...declare, ...rewrite, ...elementDeletes, ...elementAdds, ...remove];
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/** The script from `previous` to `desired`; "" when nothing changed. */
export function diffScript(previous: Ruleset | undefined, desired: Ruleset): string {
  if (!previous) return fullScript(desired);
  return deltaScript(rulesetDelta(previous, desired), desired);
}

/** True when the two rulesets would program the same kernel state. */
export function sameRuleset(a: Ruleset, b: Ruleset): boolean {
  return diffScript(a, b) === '';
}
