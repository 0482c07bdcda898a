// The differ: the one nft script that turns the ruleset the kernel holds
// (`previous`, what we last applied) into the one the planner wants, touching
// only what changed. nft runs a script as one transaction, so the order of its
// commands only has to make every reference valid at each step:
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
  mapDecl,
  mapItems,
  type Ruleset,
  ruleLine,
  setDecl,
  tableRef,
} from './ruleset.js';

function sameRules(a: ChainDef, b: ChainDef): boolean {
  return a.rules.length === b.rules.length && a.rules.every((r, i) => r === b.rules[i]);
}

function sameBase(a: ChainDef, b: ChainDef): boolean {
  return JSON.stringify(a.base ?? null) === JSON.stringify(b.base ?? null);
}

/** The script from `previous` to `desired`; "" when nothing changed. */
export function diffScript(previous: Ruleset | undefined, desired: Ruleset): string {
  if (!previous) return fullScript(desired);
  const declare: string[] = [];
  const rewrite: string[] = [];
  const elementDeletes: string[] = [];
  const elementAdds: string[] = [];
  const remove: string[] = [];

  // A set or map whose type, flags or timeout changed (an affinity timeout edited)
  // cannot be altered in place and rules point at it: rebuild the table, rare as it is.
  for (const [name, s] of desired.sets) {
    const p = previous.sets.get(name);
    if (p && setDecl(name, p) !== setDecl(name, s)) return fullScript(desired);
  }
  for (const [name, m] of desired.maps) {
    const p = previous.maps.get(name);
    if (p && mapDecl(name, p) !== mapDecl(name, m)) return fullScript(desired);
  }

  for (const [name, s] of desired.sets) {
    const p = previous.sets.get(name);
    if (!p) {
      declare.push(setDecl(name, s));
      if (s.elements.size) elementAdds.push(...elementLines('add', name, [...s.elements]));
      continue;
    }
    const gone = [...p.elements].filter((e) => !s.elements.has(e));
    const added = [...s.elements].filter((e) => !p.elements.has(e));
    if (gone.length) elementDeletes.push(...elementLines('delete', name, gone));
    if (added.length) elementAdds.push(...elementLines('add', name, added));
  }
  for (const [name, m] of desired.maps) {
    const p = previous.maps.get(name);
    if (!p) {
      declare.push(mapDecl(name, m));
      if (m.elements.size) elementAdds.push(...elementLines('add', name, mapItems(m.elements)));
      continue;
    }
    const gone: string[] = [];
    const added: [string, string][] = [];
    for (const [k, v] of p.elements) {
      const now = m.elements.get(k);
      if (now === undefined || now !== v) gone.push(k);
    }
    for (const [k, v] of m.elements) if (p.elements.get(k) !== v) added.push([k, v]);
    if (gone.length) elementDeletes.push(...elementLines('delete', name, gone));
    if (added.length) elementAdds.push(...elementLines('add', name, mapItems(added)));
  }

  for (const [name, c] of desired.chains) {
    const p = previous.chains.get(name);
    if (p && sameBase(p, c) && sameRules(p, c)) continue;
    if (!p) declare.push(chainDecl(name, c));
    else if (!sameBase(p, c)) return fullScript(desired);
    else rewrite.push(`flush chain ${tableRef} ${name}`);
    for (const rule of c.rules) rewrite.push(ruleLine(name, rule));
  }

  // Gone chains may jump to each other (service- to endpoint-): flush them all
  // before deleting any, or the kernel refuses a delete of a chain still referenced.
  const goneChains = [...previous.chains.keys()].filter((name) => !desired.chains.has(name));
  for (const name of goneChains) remove.push(`flush chain ${tableRef} ${name}`);
  for (const name of goneChains) remove.push(`delete chain ${tableRef} ${name}`);
  for (const [name] of previous.sets)
    if (!desired.sets.has(name)) remove.push(`delete set ${tableRef} ${name}`);
  for (const [name] of previous.maps)
    if (!desired.maps.has(name)) remove.push(`delete map ${tableRef} ${name}`);

  const lines = [...declare, ...rewrite, ...elementDeletes, ...elementAdds, ...remove];
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/** True when the two rulesets would program the same kernel state. */
export function sameRuleset(a: Ruleset, b: Ruleset): boolean {
  return diffScript(a, b) === '';
}
