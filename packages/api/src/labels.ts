// Label selectors, equality- and set-based, in both forms Kubernetes accepts: the
// query string (`app=web,tier in (a,b),!canary`) and the structured LabelSelector
// (matchLabels / matchExpressions). Either is compiled once into a Selector whose
// `matches` does no parsing and no allocation.

import { isQualifiedName, isValidLabelValue } from './validation/names.js';

export type LabelOperator = 'in' | 'notin' | '=' | '==' | '!=' | 'exists' | '!' | 'gt' | 'lt';

export type Labels = Readonly<Record<string, string>> | undefined | null;

export interface Requirement {
  readonly key: string;
  readonly operator: LabelOperator;
  /** Values in the order given (sorted for printing). */
  readonly values: readonly string[];
}

export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

/** metav1.LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export class LabelSelectorParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LabelSelectorParseError';
  }
}

/** A compiled selector. */
export interface Selector {
  /** True if the labels satisfy every requirement. */
  matches(labels: Labels): boolean;
  /** True if the selector selects everything. */
  empty(): boolean;
  /** Canonical string form, requirements sorted by key. */
  toString(): string;
  readonly requirements: readonly Requirement[];
  /** The value a key must equal, if some requirement pins it to exactly one value. */
  requiresExactMatch(key: string): string | undefined;
}

function get(labels: Labels, key: string): string | undefined {
  // Own properties only: "constructor" or "__proto__" must never read Object.prototype.
  if (!labels || !Object.hasOwn(labels, key)) return undefined;
  const v = labels[key];
  return typeof v === 'string' ? v : undefined;
}

type Matcher = (labels: Labels) => boolean;

function compileRequirement(r: Requirement): Matcher {
  const { key } = r;
  switch (r.operator) {
    case '=':
    case '==': {
      const want = r.values[0];
      return (l) => get(l, key) === want;
    }
    case 'in': {
      if (r.values.length === 1) {
        const want = r.values[0];
        return (l) => get(l, key) === want;
      }
      const set = new Set(r.values);
      return (l) => {
        const v = get(l, key);
        return v !== undefined && set.has(v);
      };
    }
    case '!=': {
      const not = r.values[0];
      return (l) => get(l, key) !== not;
    }
    case 'notin': {
      const set = new Set(r.values);
      return (l) => {
        const v = get(l, key);
        return v === undefined || !set.has(v);
      };
    }
    case 'exists':
      return (l) => get(l, key) !== undefined;
    case '!':
      return (l) => get(l, key) === undefined;
    case 'gt':
    case 'lt': {
      const bound = Number.parseInt(r.values[0], 10);
      const gt = r.operator === 'gt';
      return (l) => {
        const v = get(l, key);
        if (v === undefined || !/^-?[0-9]+$/.test(v)) return false;
        const n = Number.parseInt(v, 10);
        return gt ? n > bound : n < bound;
      };
    }
  }
}

function requirementString(r: Requirement): string {
  switch (r.operator) {
    case 'exists':
      return r.key;
    case '!':
      return `!${r.key}`;
    case 'in':
    case 'notin':
      return `${r.key} ${r.operator} (${[...new Set(r.values)].sort().join(',')})`;
    case 'gt':
      return `${r.key}>${r.values[0]}`;
    case 'lt':
      return `${r.key}<${r.values[0]}`;
    default:
      return `${r.key}${r.operator}${r.values[0]}`;
  }
}

class CompiledSelector implements Selector {
  private readonly matchers: Matcher[];
  private text: string | undefined;

  constructor(
    readonly requirements: readonly Requirement[],
    private readonly nothing = false,
  ) {
    this.matchers = requirements.map(compileRequirement);
  }

  matches(labels: Labels): boolean {
    if (this.nothing) return false;
    for (const m of this.matchers) if (!m(labels)) return false;
    return true;
  }

  empty(): boolean {
    return !this.nothing && this.requirements.length === 0;
  }

  requiresExactMatch(key: string): string | undefined {
    for (const r of this.requirements) {
      if (r.key !== key) continue;
      if (r.operator === '=' || r.operator === '==') return r.values[0];
      if (r.operator === 'in' && r.values.length === 1) return r.values[0];
    }
    return undefined;
  }

  toString(): string {
    if (this.text === undefined) {
      const sorted = [...this.requirements].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      this.text = sorted.map(requirementString).join(',');
    }
    return this.text;
  }
}

/** A selector from already checked requirements; `matchNothing` makes it select nothing. */
export function selectorOf(requirements: readonly Requirement[], matchNothing = false): Selector {
  return new CompiledSelector(requirements, matchNothing);
}

/** A selector that matches every object. */
export function everything(): Selector {
  return new CompiledSelector([]);
}

/** A selector that matches no object (what a nil LabelSelector means). */
export function nothing(): Selector {
  return new CompiledSelector([], true);
}

/** Quotes a value for an error message, cut short so huge input makes a small message. */
function quoted(v: string): string {
  return JSON.stringify(v.length > 100 ? `${v.slice(0, 100)}...` : v);
}

function validateKey(key: string): void {
  const errs = isQualifiedName(key);
  if (errs.length > 0) {
    throw new LabelSelectorParseError(
      `unable to parse requirement: key: Invalid value: ${quoted(key)}: ${errs.join('; ')}`,
    );
  }
}

function validateValue(key: string, index: number, value: string): void {
  const errs = isValidLabelValue(value);
  if (errs.length > 0) {
    throw new LabelSelectorParseError(
      `unable to parse requirement: values[${index}][${key}]: Invalid value: ${quoted(value)}: ${errs.join('; ')}`,
    );
  }
}

/** Checks a requirement as Kubernetes' NewRequirement does and returns it frozen. */
export function newRequirement(key: string, operator: LabelOperator, values: readonly string[]): Requirement {
  validateKey(key);
  switch (operator) {
    case 'in':
    case 'notin':
      if (values.length === 0) {
        throw new LabelSelectorParseError("for 'in', 'notin' operators, values set can't be empty");
      }
      break;
    case '=':
    case '==':
    case '!=':
      if (values.length !== 1) {
        throw new LabelSelectorParseError('exact-match compatibility requires one single value');
      }
      break;
    case 'exists':
    case '!':
      if (values.length !== 0) {
        throw new LabelSelectorParseError('values set must be empty for exists and does not exist');
      }
      break;
    case 'gt':
    case 'lt':
      if (values.length !== 1) {
        throw new LabelSelectorParseError("for 'Gt', 'Lt' operators, exactly one value is required");
      }
      if (!/^-?[0-9]{1,15}$/.test(values[0])) {
        throw new LabelSelectorParseError("for 'Gt', 'Lt' operators, the value must be an integer");
      }
      return Object.freeze({ key, operator, values: Object.freeze([...values]) });
  }
  for (let i = 0; i < values.length; i++) validateValue(key, i, values[i]);
  return Object.freeze({ key, operator, values: Object.freeze([...values]) });
}

// ---- the string form --------------------------------------------------------------

type TokenKind = 'ident' | 'end' | ',' | '(' | ')' | '!' | '=' | '==' | '!=' | 'in' | 'notin' | '>' | '<';

interface Token {
  kind: TokenKind;
  text: string;
}

const SPECIAL = new Set(['!', '=', ',', '(', ')', '<', '>']);

function isSpace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v';
}

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i];
    if (isSpace(c)) {
      i++;
      continue;
    }
    if (SPECIAL.has(c)) {
      const two = input.slice(i, i + 2);
      if (two === '==' || two === '!=') {
        tokens.push({ kind: two, text: two });
        i += 2;
      } else {
        tokens.push({ kind: c as TokenKind, text: c });
        i++;
      }
      continue;
    }
    let j = i;
    while (j < input.length && !isSpace(input[j]) && !SPECIAL.has(input[j])) j++;
    const word = input.slice(i, j);
    const kind: TokenKind = word === 'in' ? 'in' : word === 'notin' ? 'notin' : 'ident';
    tokens.push({ kind, text: word });
    i = j;
  }
  tokens.push({ kind: 'end', text: '' });
  return tokens;
}

function clip(text: string): string {
  return text.length > 100 ? `${text.slice(0, 100)}...` : text;
}

class Parser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.pos];
  }

  private next(): Token {
    const t = this.tokens[this.pos];
    if (t.kind !== 'end') this.pos++;
    return t;
  }

  parse(): Requirement[] {
    const reqs: Requirement[] = [];
    for (;;) {
      const t = this.peek();
      if (t.kind === 'end') return reqs;
      if (t.kind !== 'ident' && t.kind !== '!') {
        throw new LabelSelectorParseError(
          `found '${clip(t.text)}', expected: !, identifier, or 'end of string'`,
        );
      }
      reqs.push(this.requirement());
      const after = this.next();
      if (after.kind === 'end') return reqs;
      if (after.kind !== ',') {
        throw new LabelSelectorParseError(`found '${clip(after.text)}', expected: ',' or 'end of string'`);
      }
      // A trailing comma must still be followed by a requirement.
      const following = this.peek();
      if (following.kind !== 'ident' && following.kind !== '!') {
        throw new LabelSelectorParseError(`found '${clip(following.text)}', expected: identifier after ','`);
      }
    }
  }

  private requirement(): Requirement {
    let negated = false;
    let t = this.next();
    if (t.kind === '!') {
      negated = true;
      t = this.next();
    }
    if (t.kind !== 'ident')
      throw new LabelSelectorParseError(`found '${clip(t.text)}', expected: identifier`);
    const key = t.text;
    const look = this.peek();
    if (look.kind === 'end' || look.kind === ',') return newRequirement(key, negated ? '!' : 'exists', []);
    if (negated) {
      throw new LabelSelectorParseError(`found '${clip(look.text)}', expected: ',' or 'end of string'`);
    }
    const op = this.next();
    switch (op.kind) {
      case 'in':
      case 'notin':
        return newRequirement(key, op.kind, this.valueSet());
      case '=':
      case '==':
      case '!=':
        return newRequirement(key, op.kind, [this.exactValue()]);
      case '>':
      case '<':
        return newRequirement(key, op.kind === '>' ? 'gt' : 'lt', [this.exactValue()]);
      default:
        throw new LabelSelectorParseError(
          `found '${clip(op.text)}', expected: '=', '!=', '==', 'in', 'notin'`,
        );
    }
  }

  private exactValue(): string {
    const t = this.peek();
    if (t.kind === 'end' || t.kind === ',') return '';
    if (t.kind === 'ident' || t.kind === 'in' || t.kind === 'notin') {
      this.next();
      return t.text;
    }
    throw new LabelSelectorParseError(`found '${clip(t.text)}', expected: identifier`);
  }

  private valueSet(): string[] {
    const open = this.next();
    if (open.kind !== '(') throw new LabelSelectorParseError(`found '${clip(open.text)}', expected: '('`);
    const values: string[] = [];
    let expectValue = true;
    for (;;) {
      const t = this.next();
      if (t.kind === ')') {
        // "(a,)" carries an empty value after the comma, as Kubernetes reads it.
        if (expectValue && values.length > 0) values.push('');
        return values;
      }
      if (t.kind === ',') {
        if (expectValue) values.push('');
        expectValue = true;
        continue;
      }
      if ((t.kind === 'ident' || t.kind === 'in' || t.kind === 'notin') && expectValue) {
        values.push(t.text);
        expectValue = false;
        continue;
      }
      throw new LabelSelectorParseError(`found '${clip(t.text)}', expected: ',', ')' or identifier`);
    }
  }
}

/** Parses the string form of a label selector; "" selects everything. */
export function parseLabelSelector(text: string): Selector {
  try {
    return new CompiledSelector(new Parser(tokenize(text)).parse());
  } catch (e) {
    if (e instanceof LabelSelectorParseError) {
      const shown = text.length > 200 ? `${text.slice(0, 200)}...` : text;
      throw new LabelSelectorParseError(
        `unable to parse label selector ${JSON.stringify(shown)}: ${e.message}`,
      );
    }
    throw e;
  }
}

/** A selector requiring every key=value of the set (how matchLabels and Services select). */
export function selectorFromSet(set: Readonly<Record<string, string>> | undefined | null): Selector {
  if (!set) return everything();
  const reqs = Object.keys(set).map((k) => newRequirement(k, '=', [set[k]]));
  return new CompiledSelector(reqs);
}

const STRUCTURED_OPERATORS: Record<string, LabelOperator> = {
  In: 'in',
  NotIn: 'notin',
  Exists: 'exists',
  DoesNotExist: '!',
};

/**
 * Compiles a structured LabelSelector. As in Kubernetes, null/undefined selects nothing
 * and an empty selector selects everything.
 */
export function labelSelectorAsSelector(ls: LabelSelector | null | undefined): Selector {
  if (ls === null || ls === undefined) return nothing();
  const reqs: Requirement[] = [];
  const matchLabels = ls.matchLabels ?? {};
  for (const k of Object.keys(matchLabels)) reqs.push(newRequirement(k, '=', [matchLabels[k]]));
  for (const expr of ls.matchExpressions ?? []) {
    const op = Object.hasOwn(STRUCTURED_OPERATORS, expr.operator)
      ? STRUCTURED_OPERATORS[expr.operator]
      : undefined;
    if (op === undefined) {
      throw new LabelSelectorParseError(
        `${quoted(String(expr.operator))} is not a valid label selector operator`,
      );
    }
    reqs.push(newRequirement(expr.key, op, expr.values ?? []));
  }
  return new CompiledSelector(reqs);
}

/** Whether the labels match a structured selector (compiles it; cache the Selector in hot paths). */
export function matchesLabelSelector(ls: LabelSelector | null | undefined, labels: Labels): boolean {
  return labelSelectorAsSelector(ls).matches(labels);
}
