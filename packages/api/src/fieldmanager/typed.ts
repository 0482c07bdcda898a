// Objects seen through their Shape: the field set an object sets, what changed between
// two versions of it, the merge of an applied configuration into a live object, and the
// removal of fields an applier stopped applying. structured-merge-diff's rules, in our
// own code: list items and map entries are members of a set, so are leaves, empty maps
// and nulls; a struct's named fields are only paths to their children.
import { deepClone } from '../patch/safe.js';
import {
  fieldElement,
  indexElement,
  keyElement,
  type Path,
  type PathElement,
  PathSet,
  valueElement,
} from './path-set.js';
import { DEDUCED, type Shape } from './shape.js';

type Obj = Record<string, unknown>;

function isEmpty(o: Obj): boolean {
  for (const _ in o) return false;
  return true;
}

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** How a value of `shape` is walked: as a leaf, as a granular object, or as a granular list. */
type Node =
  | { k: 'leaf' }
  | { k: 'object'; child: (name: string) => { shape: Shape; declared: boolean } | undefined }
  | { k: 'list'; items: Shape; element: (item: unknown, i: number) => PathElement };

const deducedChild = () => ({ shape: DEDUCED, declared: false });

function nodeOf(shape: Shape, v: unknown): Node {
  switch (shape.t) {
    case 'scalar':
      return { k: 'leaf' };
    case 'deduced':
      return isObj(v) ? { k: 'object', child: deducedChild } : { k: 'leaf' };
    case 'map':
      if (shape.atomic || !isObj(v)) return { k: 'leaf' };
      return { k: 'object', child: () => ({ shape: shape.values, declared: false }) };
    case 'struct': {
      if (shape.atomic || !isObj(v)) return { k: 'leaf' };
      const { fields, rest } = shape;
      return {
        k: 'object',
        child: (name) =>
          Object.hasOwn(fields, name)
            ? { shape: fields[name], declared: true }
            : rest
              ? { shape: rest, declared: false }
              : undefined,
      };
    }
    case 'list': {
      if (shape.list === 'atomic' || !Array.isArray(v)) return { k: 'leaf' };
      const keys = shape.keys ?? [];
      const element =
        shape.list === 'set'
          ? (item: unknown, i: number) =>
              isObj(item) || Array.isArray(item) ? indexElement(i) : valueElement(item)
          : (item: unknown, i: number) =>
              isObj(item) && keys.some((k) => item[k] !== undefined)
                ? keyElement(item, keys)
                : indexElement(i);
      return { k: 'list', items: shape.items, element };
    }
  }
}

/** The items of a list by their path elements, the first of duplicates winning. */
function indexList(
  list: unknown[],
  element: (item: unknown, i: number) => PathElement,
): Map<PathElement, unknown> {
  const m = new Map<PathElement, unknown>();
  list.forEach((item, i) => {
    const pe = element(item, i);
    if (!m.has(pe)) m.set(pe, item);
  });
  return m;
}

// ---- the field set of an object ----------------------------------------------------------

/** Every field `value` sets, as an applier of it would own them. */
export function fieldSetOf(value: unknown, shape: Shape): PathSet {
  const set = new PathSet();
  walkSet(value, shape, [], set);
  return set;
}

function walkSet(v: unknown, shape: Shape, path: PathElement[], set: PathSet): void {
  const node = nodeOf(shape, v);
  if (node.k === 'leaf') {
    set.insert(path);
    return;
  }
  // One path array for the whole walk, pushed and popped: insert copies nothing of it.
  if (node.k === 'list') {
    (v as unknown[]).forEach((item, i) => {
      path.push(node.element(item, i));
      walkSet(item, node.items, path, set);
      set.insert(path);
      path.pop();
    });
    return;
  }
  for (const k in v as Obj) {
    const child = (v as Obj)[k];
    const c = node.child(k) ?? deducedChild();
    path.push(fieldElement(k));
    walkSet(child, c.shape, path, set);
    if (child === null || !c.declared || (isObj(child) && isEmpty(child))) set.insert(path);
    path.pop();
  }
}

// ---- what changed --------------------------------------------------------------------------

export interface Comparison {
  added: PathSet;
  modified: PathSet;
  removed: PathSet;
}

/** The fields `next` added, changed and removed relative to `prev`. */
export function compareObjects(prev: unknown, next: unknown, shape: Shape): Comparison {
  const c: Comparison = { added: new PathSet(), modified: new PathSet(), removed: new PathSet() };
  walkCompare(prev, next, shape, [], c);
  return c;
}

export function isSameComparison(c: Comparison): boolean {
  return c.added.empty() && c.modified.empty() && c.removed.empty();
}

function walkCompare(l: unknown, r: unknown, shape: Shape, path: PathElement[], c: Comparison): void {
  let nl = l === undefined ? undefined : nodeOf(shape, l);
  let nr = r === undefined ? undefined : nodeOf(shape, r);
  // A null map or list (Go's nil, serialized) is an empty one: what is added to it is
  // added, the field itself is not.
  if (l === null && nr && nr.k !== 'leaf') nl = nr;
  if (r === null && nl && nl.k !== 'leaf') nr = nl;
  const node = nl ?? nr;
  // A leaf, or a value whose kind changed (an object became a string): one change, here.
  if (!node || node.k === 'leaf' || (nl && nr && nl.k !== nr.k)) {
    if (l === undefined) c.added.insert(path);
    else if (r === undefined) c.removed.insert(path);
    else if (!jsonEqual(l, r)) c.modified.insert(path);
    return;
  }
  const visit = (pe: PathElement, lc: unknown, rc: unknown, s: Shape) => {
    path.push(pe);
    walkCompare(lc, rc, s, path, c);
    if (lc === undefined) c.added.insert(path);
    else if (rc === undefined) c.removed.insert(path);
    path.pop();
  };
  if (node.k === 'list') {
    const li = Array.isArray(l) ? indexList(l, node.element) : new Map<PathElement, unknown>();
    const ri = Array.isArray(r) ? indexList(r, node.element) : new Map<PathElement, unknown>();
    for (const [pe, lc] of li) visit(pe, lc, ri.get(pe), node.items);
    for (const [pe, rc] of ri) if (!li.has(pe)) visit(pe, undefined, rc, node.items);
    return;
  }
  const lo = isObj(l) ? l : {};
  const ro = isObj(r) ? r : {};
  const child = (k: string) => (nl?.k === 'object' ? nl : (nr as Extract<Node, { k: 'object' }>)).child(k);
  for (const k of Object.keys(lo)) visit(fieldElement(k), lo[k], ro[k], child(k)?.shape ?? DEDUCED);
  for (const k of Object.keys(ro))
    if (!Object.hasOwn(lo, k)) visit(fieldElement(k), undefined, ro[k], child(k)?.shape ?? DEDUCED);
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isObj(a)) {
    if (!isObj(b)) return false;
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

// ---- merging an applied configuration ---------------------------------------------------

/**
 * The live object with the applied configuration merged in: granular maps and structs
 * key by key, associative lists and sets item by item (live items keep their places, new
 * ones come where the configuration puts them), everything else replaced.
 */
export function mergeApplied(live: unknown, config: unknown, shape: Shape): unknown {
  if (config === undefined) return live;
  if (live === undefined) return deepClone(config as never);
  const nl = nodeOf(shape, live);
  const nc = nodeOf(shape, config);
  if (nc.k === 'leaf' || nl.k !== nc.k) return deepClone(config as never);
  if (nc.k === 'list' && nl.k === 'list') {
    const li = indexList(live as unknown[], nl.element);
    const ci = indexList(config as unknown[], nc.element);
    const cKeys = [...ci.keys()];
    const cPos = new Map(cKeys.map((pe, i) => [pe, i]));
    const out: unknown[] = [];
    let next = 0;
    const takeNewUpTo = (end: number) => {
      for (; next < end; next++) {
        const cp = cKeys[next];
        if (!li.has(cp)) out.push(deepClone(ci.get(cp) as never));
      }
    };
    for (const [pe, item] of li) {
      const at = cPos.get(pe);
      if (at === undefined) {
        out.push(item);
        continue;
      }
      // The configuration's new items that it puts before this shared one come first.
      takeNewUpTo(at);
      if (next === at) next++;
      out.push(mergeApplied(item, ci.get(pe), nc.items));
    }
    takeNewUpTo(cKeys.length);
    return out;
  }
  if (nc.k === 'object' && nl.k === 'object') {
    const out: Obj = { ...(live as Obj) };
    for (const [k, v] of Object.entries(config as Obj)) {
      out[k] = mergeApplied(out[k], v, nc.child(k)?.shape ?? DEDUCED);
    }
    return out;
  }
  return deepClone(config as never);
}

// ---- removing what an applier stopped applying -----------------------------------------------

/**
 * Removes from `o` (in place) every field, map entry and list item `last` reaches that
 * nobody in `owned` owns, at it or under it: an applier's fields it no longer applies
 * go, unless another manager holds them.
 */
export function removeUnowned(o: unknown, last: PathSet, owned: PathSet, shape: Shape): unknown {
  const node = nodeOf(shape, o);
  if (node.k === 'leaf') return o;
  const touched = (pe: PathElement) => last.members.has(pe) || last.children.has(pe);
  const keep = (pe: PathElement) => owned.members.has(pe) || owned.children.get(pe)?.empty() === false;
  const descend = (pe: PathElement, v: unknown, s: Shape) => {
    const sub = last.children.get(pe);
    return sub ? removeUnowned(v, sub, owned.children.get(pe) ?? new PathSet(), s) : v;
  };
  if (node.k === 'list') {
    const out: unknown[] = [];
    (o as unknown[]).forEach((item, i) => {
      const pe = node.element(item, i);
      if (touched(pe) && !keep(pe)) return;
      out.push(descend(pe, item, node.items));
    });
    return out;
  }
  const obj = o as Obj;
  for (const k of Object.keys(obj)) {
    const pe = fieldElement(k);
    if (!touched(pe)) continue;
    if (!keep(pe)) delete obj[k];
    else obj[k] = descend(pe, obj[k], node.child(k)?.shape ?? DEDUCED);
  }
  return obj;
}

/** `set` without the subtree at `path` (the path itself and everything under it). */
export function withoutSubtree(set: PathSet, path: Path): PathSet {
  const out = set.clone();
  if (path.length === 0) return new PathSet();
  const parent = out.at(path.slice(0, -1));
  if (parent) {
    const last = path[path.length - 1];
    parent.members.delete(last);
    parent.children.delete(last);
  }
  return out;
}
