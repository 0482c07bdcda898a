// Sets of field paths, as structured-merge-diff keeps them for server-side apply,
// and their FieldsV1 encoding (metadata.managedFields[].fieldsV1).
//
// A path is a list of elements, each written as Kubernetes writes it in FieldsV1:
//   f:<name>          a field of a struct or an entry of a map
//   k:<json object>   an item of an associative list, by its key fields (sorted by name)
//   v:<json value>    an item of a set (a list of scalars)
//   i:<n>             an item of a list by position
// A set is a tree: `members` are the elements that end a path here, `children` the
// elements that paths go on through. FieldsV1 is that tree as JSON, each element a
// key, `{}` for a member with no children, and `".": {}` inside a node that is both.

/** One path element in its FieldsV1 spelling (`f:name`, `k:{"name":"x"}`, `v:"a"`, `i:0`). */
export type PathElement = string;
export type Path = readonly PathElement[];

export class FieldsV1Error extends Error {}

export class PathSet {
  readonly members = new Set<PathElement>();
  readonly children = new Map<PathElement, PathSet>();

  static of(...paths: Path[]): PathSet {
    const s = new PathSet();
    for (const p of paths) s.insert(p);
    return s;
  }

  empty(): boolean {
    return this.members.size === 0 && this.children.size === 0;
  }

  insert(path: Path): void {
    if (path.length === 0) return;
    let node: PathSet = this;
    for (let i = 0; i < path.length - 1; i++) node = node.child(path[i]);
    node.members.add(path[path.length - 1]);
  }

  has(path: Path): boolean {
    if (path.length === 0) return false;
    const node = this.at(path.slice(0, -1));
    return node?.members.has(path[path.length - 1]) ?? false;
  }

  /** The subtree under `path` (paths going on through it), or undefined. */
  at(path: Path): PathSet | undefined {
    let node: PathSet | undefined = this;
    for (const pe of path) {
      node = node.children.get(pe);
      if (!node) return undefined;
    }
    return node;
  }

  /** Whether `path` or any path under it is in the set. */
  hasPrefix(path: Path): boolean {
    if (path.length === 0) return !this.empty();
    if (this.has(path)) return true;
    const sub = this.at(path);
    return sub !== undefined && !sub.empty();
  }

  child(pe: PathElement): PathSet {
    let c = this.children.get(pe);
    if (!c) {
      c = new PathSet();
      this.children.set(pe, c);
    }
    return c;
  }

  clone(): PathSet {
    const s = new PathSet();
    for (const m of this.members) s.members.add(m);
    for (const [pe, c] of this.children) s.children.set(pe, c.clone());
    return s;
  }

  union(o: PathSet): PathSet {
    const s = this.clone();
    s.addAll(o);
    return s;
  }

  private addAll(o: PathSet): void {
    for (const m of o.members) this.members.add(m);
    for (const [pe, c] of o.children) this.child(pe).addAll(c);
  }

  difference(o: PathSet): PathSet {
    const s = new PathSet();
    for (const m of this.members) if (!o.members.has(m)) s.members.add(m);
    for (const [pe, c] of this.children) {
      const oc = o.children.get(pe);
      const d = oc ? c.difference(oc) : c.clone();
      if (!d.empty()) s.children.set(pe, d);
    }
    return s;
  }

  intersection(o: PathSet): PathSet {
    const s = new PathSet();
    for (const m of this.members) if (o.members.has(m)) s.members.add(m);
    for (const [pe, c] of this.children) {
      const oc = o.children.get(pe);
      if (!oc) continue;
      const i = c.intersection(oc);
      if (!i.empty()) s.children.set(pe, i);
    }
    return s;
  }

  equals(o: PathSet): boolean {
    if (this.members.size !== o.members.size || this.children.size !== o.children.size) return false;
    for (const m of this.members) if (!o.members.has(m)) return false;
    for (const [pe, c] of this.children) {
      const oc = o.children.get(pe);
      if (!oc || !c.equals(oc)) return false;
    }
    return true;
  }

  /** Every path in the set, in structured-merge-diff's order: members, then children, each sorted. */
  paths(prefix: Path = []): Path[] {
    const out: Path[] = [];
    for (const m of [...this.members].sort(comparePathElements)) out.push([...prefix, m]);
    for (const pe of [...this.children.keys()].sort(comparePathElements)) {
      out.push(...(this.children.get(pe) as PathSet).paths([...prefix, pe]));
    }
    return out;
  }

  /** The FieldsV1 JSON object of this set. */
  toFieldsV1(): Record<string, unknown> {
    return emit(this, false);
  }

  /** Reads a FieldsV1 JSON object; throws FieldsV1Error naming what is malformed. */
  static fromFieldsV1(doc: unknown): PathSet {
    if (!isPlainObject(doc)) throw new FieldsV1Error('FieldsV1 must be a JSON object');
    const s = new PathSet();
    read(doc, s, 0);
    return s;
  }
}

const MAX_DEPTH = 100;

function emit(s: PathSet, includeSelf: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (includeSelf && !s.empty()) out['.'] = {};
  const keys = new Set<PathElement>([...s.members, ...s.children.keys()]);
  for (const pe of [...keys].sort(comparePathElements)) {
    const c = s.children.get(pe);
    out[pe] = c ? emit(c, s.members.has(pe)) : {};
  }
  return out;
}

function read(doc: Record<string, unknown>, into: PathSet, depth: number): void {
  if (depth > MAX_DEPTH) throw new FieldsV1Error(`FieldsV1 nested deeper than ${MAX_DEPTH}`);
  for (const [key, v] of Object.entries(doc)) {
    if (key === '.') continue;
    checkPathElement(key);
    if (!isPlainObject(v)) throw new FieldsV1Error(`FieldsV1 value of ${key} must be an object`);
    const entries = Object.keys(v);
    if (entries.length === 0 || Object.hasOwn(v, '.')) into.members.add(key);
    if (entries.some((k) => k !== '.')) {
      const c = new PathSet();
      read(v, c, depth + 1);
      into.children.set(key, c);
    }
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Throws unless `pe` is a path element Kubernetes could have written. */
export function checkPathElement(pe: string): void {
  const kind = pe.slice(0, 2);
  const rest = pe.slice(2);
  switch (kind) {
    case 'f:':
      return;
    case 'i:':
      if (!/^(0|[1-9][0-9]*)$/.test(rest)) throw new FieldsV1Error(`invalid index path element ${pe}`);
      return;
    case 'k:': {
      let key: unknown;
      try {
        key = JSON.parse(rest);
      } catch {
        throw new FieldsV1Error(`invalid key path element ${pe}: not JSON`);
      }
      if (!isPlainObject(key) || Object.keys(key).length === 0) {
        throw new FieldsV1Error(`invalid key path element ${pe}: must be a non-empty JSON object`);
      }
      return;
    }
    case 'v:':
      try {
        JSON.parse(rest);
      } catch {
        throw new FieldsV1Error(`invalid value path element ${pe}: not JSON`);
      }
      return;
    default:
      throw new FieldsV1Error(`invalid path element ${JSON.stringify(pe)}: must start with f:, k:, v: or i:`);
  }
}

// ---- building path elements -------------------------------------------------------------

export const fieldElement = (name: string): PathElement => `f:${name}`;
export const indexElement = (i: number): PathElement => `i:${i}`;
export const valueElement = (v: unknown): PathElement => `v:${JSON.stringify(v)}`;

/** An associative list item's element: its key fields, sorted by name, as one JSON object. */
export function keyElement(item: Record<string, unknown>, keys: readonly string[]): PathElement {
  const fields = keys.filter((k) => item[k] !== undefined).sort();
  const parts = fields.map((k) => `${JSON.stringify(k)}:${JSON.stringify(item[k])}`);
  return `k:{${parts.join(',')}}`;
}

// ---- order (structured-merge-diff's PathElement.Compare) -----------------------------------

const RANK: Record<string, number> = { 'f:': 0, 'k:': 1, 'v:': 2, 'i:': 3 };

export function comparePathElements(a: PathElement, b: PathElement): number {
  const ra = RANK[a.slice(0, 2)] ?? 4;
  const rb = RANK[b.slice(0, 2)] ?? 4;
  if (ra !== rb) return ra - rb;
  const x = a.slice(2);
  const y = b.slice(2);
  switch (ra) {
    case 0:
      return compareStrings(x, y);
    case 1:
      return compareKeys(JSON.parse(x) as Record<string, unknown>, JSON.parse(y) as Record<string, unknown>);
    case 2:
      return compareValues(JSON.parse(x), JSON.parse(y));
    case 3:
      return Number(x) - Number(y);
    default:
      return compareStrings(x, y);
  }
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Key field lists: the shorter first, then field by field (name, then value). */
function compareKeys(a: Record<string, unknown>, b: Record<string, unknown>): number {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  if (ka.length !== kb.length) return ka.length - kb.length;
  for (let i = 0; i < ka.length; i++) {
    const c = compareStrings(ka[i], kb[i]) || compareValues(a[ka[i]], b[kb[i]]);
    if (c !== 0) return c;
  }
  return 0;
}

/** Values in structured-merge-diff's order: numbers, strings, booleans, lists, maps, null. */
function valueRank(v: unknown): number {
  if (typeof v === 'number') return 0;
  if (typeof v === 'string') return 1;
  if (typeof v === 'boolean') return 2;
  if (Array.isArray(v)) return 3;
  if (isPlainObject(v)) return 4;
  return 5;
}

export function compareValues(a: unknown, b: unknown): number {
  const ra = valueRank(a);
  const rb = valueRank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 0) return (a as number) - (b as number);
  if (ra === 1) return compareStrings(a as string, b as string);
  if (ra === 2) return Number(a) - Number(b);
  if (ra === 3) {
    const x = a as unknown[];
    const y = b as unknown[];
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      const c = compareValues(x[i], y[i]);
      if (c !== 0) return c;
    }
    return x.length - y.length;
  }
  if (ra === 4) return compareKeys(a as Record<string, unknown>, b as Record<string, unknown>);
  return 0;
}

// ---- paths as Kubernetes prints them (conflict messages) -------------------------------

/** `.spec.containers[name="nginx"].image`, as structured-merge-diff's Path.String(). */
export function pathString(path: Path): string {
  return path.map(elementString).join('');
}

function elementString(pe: PathElement): string {
  const rest = pe.slice(2);
  switch (pe.slice(0, 2)) {
    case 'f:':
      return `.${rest}`;
    case 'k:': {
      const key = JSON.parse(rest) as Record<string, unknown>;
      const parts = Object.keys(key)
        .sort()
        .map((k) => `${k}=${JSON.stringify(key[k])}`);
      return `[${parts.join(',')}]`;
    }
    case 'v:':
      return `[=${rest}]`;
    case 'i:':
      return `[${rest}]`;
    default:
      return pe;
  }
}
