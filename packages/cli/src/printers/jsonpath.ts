// kubectl's JSONPath templates: literal text with {expressions} such as
// {.items[*].metadata.name}, {range .items[*]}...{end}, filters
// [?(@.type=="Ready")], slices, unions, recursive descent ("..") and quoted
// literals ({"\n"}). Missing keys print nothing, as kubectl's default allows.

import { sortKeys } from './sortkeys.js';

type Segment =
  | { t: 'key'; name: string }
  | { t: 'wild' }
  | { t: 'recurse'; name: string | null }
  | { t: 'index'; indices: number[] }
  | { t: 'slice'; start?: number; end?: number; step?: number }
  | { t: 'keys'; names: string[] }
  | { t: 'filter'; path: Segment[]; op?: string; value?: unknown };

type Node =
  | { t: 'text'; text: string }
  | { t: 'path'; path: Segment[] }
  | { t: 'range'; path: Segment[]; body: Node[] };

export class JsonPathError extends Error {
  constructor(template: string, message: string) {
    super(`error parsing jsonpath ${template}, ${message}`);
    this.name = 'JsonPathError';
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseLiteral(s: string): unknown {
  const t = s.trim();
  if ((t.startsWith('"') && t.endsWith('"')) || (t.startsWith("'") && t.endsWith("'"))) return t.slice(1, -1);
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (t === 'null') return null;
  const n = Number(t);
  if (t !== '' && !Number.isNaN(n)) return n;
  return t;
}

/** Parses a path such as `.items[*].metadata.name` (a leading `$` or `@` is allowed). */
export function parsePath(src: string, template = src): Segment[] {
  const segs: Segment[] = [];
  let i = 0;
  if (src[0] === '$' || src[0] === '@') i = 1;
  const readName = (): string => {
    let name = '';
    while (i < src.length && src[i] !== '.' && src[i] !== '[') {
      if (src[i] === '\\' && i + 1 < src.length) {
        name += src[i + 1];
        i += 2;
        continue;
      }
      name += src[i++];
    }
    return name;
  };
  while (i < src.length) {
    const c = src[i];
    if (c === ' ') {
      i++;
      continue;
    }
    if (c === '.') {
      if (src[i + 1] === '.') {
        i += 2;
        const name = readName();
        segs.push({ t: 'recurse', name: name === '*' || name === '' ? null : name });
        continue;
      }
      i++;
      if (i >= src.length) break;
      if (src[i] === '[') continue;
      const name = readName();
      if (name === '*') segs.push({ t: 'wild' });
      else if (name) segs.push({ t: 'key', name });
      continue;
    }
    if (c === '[') {
      let depth = 1;
      let j = i + 1;
      let quote = '';
      while (j < src.length && depth > 0) {
        const ch = src[j];
        if (quote) {
          if (ch === quote) quote = '';
        } else if (ch === '"' || ch === "'") quote = ch;
        else if (ch === '[') depth++;
        else if (ch === ']') depth--;
        j++;
      }
      if (depth !== 0) throw new JsonPathError(template, 'unterminated array');
      const inner = src.slice(i + 1, j - 1).trim();
      i = j;
      if (inner === '*') segs.push({ t: 'wild' });
      else if (inner.startsWith('?(') && inner.endsWith(')'))
        segs.push(parseFilter(inner.slice(2, -1), template));
      else if (/^['"]/.test(inner))
        segs.push({ t: 'keys', names: inner.split(',').map((s) => String(parseLiteral(s))) });
      else if (inner.includes(':')) {
        const [a, b, s] = inner.split(':').map((x) => (x.trim() === '' ? undefined : Number(x)));
        if ([a, b, s].some((x) => x !== undefined && !Number.isInteger(x)))
          throw new JsonPathError(template, `invalid array index ${inner}`);
        segs.push({ t: 'slice', start: a, end: b, step: s });
      } else {
        const indices = inner.split(',').map((x) => Number(x.trim()));
        if (indices.some((x) => !Number.isInteger(x)))
          throw new JsonPathError(template, `invalid array index ${inner}`);
        segs.push({ t: 'index', indices });
      }
      continue;
    }
    // A bare name at the start (relaxed paths such as "metadata.name").
    const name = readName();
    if (!name) throw new JsonPathError(template, `unrecognized character in action: ${c}`);
    segs.push(name === '*' ? { t: 'wild' } : { t: 'key', name });
  }
  return segs;
}

function parseFilter(expr: string, template: string): Segment {
  const m = /^\s*(@[^=!<>\s]*)\s*(==|!=|<=|>=|<|>)\s*(.+?)\s*$/.exec(expr);
  if (m) return { t: 'filter', path: parsePath(m[1], template), op: m[2], value: parseLiteral(m[3]) };
  const exists = expr.trim();
  if (!exists.startsWith('@')) throw new JsonPathError(template, `unrecognized filter ${expr}`);
  return { t: 'filter', path: parsePath(exists, template) };
}

function compare(a: unknown, op: string, b: unknown): boolean {
  switch (op) {
    case '==':
      return a === b || (typeof a !== typeof b && String(a) === String(b));
    case '!=':
      return !(a === b || (typeof a !== typeof b && String(a) === String(b)));
    case '<':
      return Number(a) < Number(b);
    case '>':
      return Number(a) > Number(b);
    case '<=':
      return Number(a) <= Number(b);
    case '>=':
      return Number(a) >= Number(b);
    default:
      return false;
  }
}

function children(v: unknown): unknown[] {
  if (Array.isArray(v)) return v;
  if (isRecord(v)) return Object.values(v);
  return [];
}

function recurse(v: unknown, name: string | null, out: unknown[]): void {
  if (isRecord(v)) {
    if (name === null) out.push(...Object.values(v));
    else if (Object.hasOwn(v, name)) out.push(v[name]);
    for (const c of Object.values(v)) recurse(c, name, out);
  } else if (Array.isArray(v)) {
    if (name === null) out.push(...v);
    for (const c of v) recurse(c, name, out);
  }
}

/** Evaluates a parsed path against a value; missing keys yield no results. */
export function evaluate(segs: readonly Segment[], root: unknown): unknown[] {
  let cur: unknown[] = [root];
  for (const s of segs) {
    const next: unknown[] = [];
    for (const v of cur) {
      switch (s.t) {
        case 'key':
          if (isRecord(v) && Object.hasOwn(v, s.name)) next.push(v[s.name]);
          break;
        case 'keys':
          if (isRecord(v)) for (const n of s.names) if (Object.hasOwn(v, n)) next.push(v[n]);
          break;
        case 'wild':
          next.push(...children(v));
          break;
        case 'recurse':
          recurse(v, s.name, next);
          break;
        case 'index':
          if (Array.isArray(v)) {
            for (const i of s.indices) {
              const idx = i < 0 ? v.length + i : i;
              if (idx >= 0 && idx < v.length) next.push(v[idx]);
            }
          }
          break;
        case 'slice':
          if (Array.isArray(v)) {
            const len = v.length;
            const norm = (x: number | undefined, d: number) =>
              x === undefined ? d : x < 0 ? Math.max(0, len + x) : Math.min(len, x);
            const step = s.step ?? 1;
            for (let i = norm(s.start, 0); i < norm(s.end, len); i += step > 0 ? step : 1) next.push(v[i]);
          }
          break;
        case 'filter':
          for (const item of children(v)) {
            const found = evaluate(s.path, item);
            if (
              s.op === undefined
                ? found.length > 0 && found[0] !== false
                : found.some((f) => compare(f, s.op ?? '==', s.value))
            )
              next.push(item);
          }
          break;
      }
    }
    cur = next;
  }
  return cur;
}

function unquote(lit: string): string {
  const body = lit.slice(1, -1);
  return body.replace(/\\(.)/g, (_, c: string) => ({ n: '\n', t: '\t', r: '\r' })[c] ?? c);
}

/** Parses a template like `{range .items[*]}{.metadata.name}{"\n"}{end}`. */
export function parseTemplate(template: string): Node[] {
  const root: Node[] = [];
  const stack: Node[][] = [root];
  const ranges: Extract<Node, { t: 'range' }>[] = [];
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    if (open < 0) {
      stack[stack.length - 1].push({ t: 'text', text: template.slice(i) });
      break;
    }
    if (open > i) stack[stack.length - 1].push({ t: 'text', text: template.slice(i, open) });
    // Find the closing brace, skipping quoted text.
    let j = open + 1;
    let quote = '';
    while (j < template.length) {
      const ch = template[j];
      if (quote) {
        if (ch === '\\') j++;
        else if (ch === quote) quote = '';
      } else if (ch === '"' || ch === "'") quote = ch;
      else if (ch === '}') break;
      j++;
    }
    if (j >= template.length) throw new JsonPathError(template, 'unclosed action');
    const expr = template.slice(open + 1, j).trim();
    i = j + 1;
    const top = stack[stack.length - 1];
    if (expr.startsWith('range ')) {
      const node: Extract<Node, { t: 'range' }> = {
        t: 'range',
        path: parsePath(expr.slice(6).trim(), template),
        body: [],
      };
      top.push(node);
      ranges.push(node);
      stack.push(node.body);
    } else if (expr === 'end') {
      if (ranges.length === 0) throw new JsonPathError(template, 'not in range, nothing to end');
      ranges.pop();
      stack.pop();
    } else if ((expr.startsWith('"') && expr.endsWith('"')) || (expr.startsWith("'") && expr.endsWith("'"))) {
      top.push({ t: 'text', text: unquote(expr) });
    } else {
      top.push({ t: 'path', path: parsePath(expr, template) });
    }
  }
  if (ranges.length > 0) throw new JsonPathError(template, 'unclosed range');
  return root;
}

/** How one value prints: strings bare, other scalars as text, objects as JSON. */
export function formatValue(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(sortKeys(v));
}

function execute(nodes: readonly Node[], data: unknown): string {
  let out = '';
  for (const n of nodes) {
    if (n.t === 'text') out += n.text;
    else if (n.t === 'path') out += evaluate(n.path, data).map(formatValue).join(' ');
    else
      for (const item of evaluate(n.path, data).flatMap((v) => (Array.isArray(v) ? v : [v])))
        out += execute(n.body, item);
  }
  return out;
}

/** Renders a kubectl JSONPath template against an object. */
export function renderJsonPath(template: string, data: unknown): string {
  return execute(parseTemplate(template), data);
}

/** A "relaxed" path as --sort-by and custom-columns take it: `.a.b`, `a.b` or `{.a.b}`. */
export function relaxedPath(expr: string): Segment[] {
  let e = expr.trim();
  if (e.startsWith('{') && e.endsWith('}')) e = e.slice(1, -1).trim();
  if (!e.startsWith('.') && !e.startsWith('$') && !e.startsWith('[')) e = `.${e}`;
  return parsePath(e, expr);
}
