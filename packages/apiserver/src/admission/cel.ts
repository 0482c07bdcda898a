// CEL for admission: the environments ValidatingAdmissionPolicy expressions and
// webhook matchConditions compile in (the variables Kubernetes declares for each),
// compiled programs cached by expression text, request values turned into CEL
// values (JSON integers as CEL ints), and a cost bound so that no expression can
// keep the apiserver busy: the library cannot stop an evaluation once it runs, so
// the bound is decided before it runs, from the expression's nesting of
// comprehensions and the size of the data it may iterate.
import { type FieldError, fieldErrors, isQualifiedName } from '@kubit/api';
import { Environment } from '@marcbachmann/cel-js';
import safeRegex from 'safe-regex2';
import type { Schema } from '../model/schema.js';
import { registerAuthorizerLibrary } from './cel-authorizer.js';
import { registerKubernetesLibrary } from './cel-library.js';

/** The variables an expression may name, by where it is written. */
export type CelScope = 'policy' | 'matchCondition';

const SCOPE_VARIABLES: Record<CelScope, string[]> = {
  // ValidatingAdmissionPolicy validations, messageExpressions, variables and matchConditions.
  policy: ['object', 'oldObject', 'request', 'params', 'namespaceObject', 'variables'],
  // A webhook's matchConditions see the request only (and, as policies, `authorizer`).
  matchCondition: ['object', 'oldObject', 'request'],
};

/** Kubernetes' structural bounds on one expression, kept well inside what a request can afford. */
const LIMITS = { maxAstNodes: 10_000, maxDepth: 64, maxListElements: 1000, maxMapEntries: 1000 };

/**
 * The most work one evaluation may do, in "steps": the expression's size times the
 * number of values each comprehension level could visit. Kubernetes' per-call runtime
 * limit is 1,000,000 cost units; a step here is about one CEL operation.
 */
export const MAX_EVALUATION_STEPS = 1_000_000;

const environments = new Map<CelScope, Environment>();
function environment(scope: CelScope): Environment {
  let env = environments.get(scope);
  if (!env) {
    env = new Environment({ enableOptionalTypes: true, homogeneousAggregateLiterals: false, limits: LIMITS });
    for (const v of SCOPE_VARIABLES[scope]) env.registerVariable(v, 'dyn');
    registerKubernetesLibrary(env);
    registerAuthorizerLibrary(env);
    env.registerVariable('authorizer', 'Authorizer');
    environments.set(scope, env);
  }
  return env;
}

type Evaluate = (ctx: Record<string, unknown>) => unknown;

export interface CompiledExpression {
  expression: string;
  /** What the type checker infers (bool, string, dyn, ...). */
  type: string;
  /** AST nodes: the per-iteration cost of the expression. */
  size: number;
  /** How deeply comprehensions (all, exists, map, filter, ...) nest. */
  loopDepth: number;
  evaluate: Evaluate;
}

const cache = new Map<string, CompiledExpression | string>();

/**
 * Compiles (parse and type-check) an expression, or returns the compiler's message.
 * `want` is the type the result must have where the type checker can tell (dyn passes).
 */
export function compileCel(
  expression: string,
  scope: CelScope,
  want?: 'bool' | 'string',
): CompiledExpression | string {
  const key = `${scope}\u0000${want ?? ''}\u0000${expression}`;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const out = compileUncached(expression, scope, want);
  // The cache is bounded by the expressions configurations hold; a flood of distinct ones starts it anew.
  if (cache.size > 10_000) cache.clear();
  cache.set(key, out);
  return out;
}

function compileUncached(
  expression: string,
  scope: CelScope,
  want?: 'bool' | 'string',
): CompiledExpression | string {
  const env = environment(scope);
  let parsed: ReturnType<Environment['parse']>;
  try {
    parsed = env.parse(expression);
  } catch (err) {
    return firstLine(err);
  }
  // Measured before the checker annotates the tree.
  const { size, loopDepth, patterns } = measure(parsed.ast);
  // Kubernetes' RE2 runs in linear time; JavaScript's backtracking engine does not, so a
  // pattern that could backtrack exponentially is refused here rather than run in admission.
  for (const p of patterns) {
    if (!safeRegex(p))
      return `regular expression '${p}' could take exponential time (a repeated group of repetitions)`;
  }
  const checked = env.check(expression);
  if (!checked.valid) return firstLine(checked.error);
  const type = String(checked.type ?? 'dyn');
  if (want && type !== want && type !== 'dyn') {
    return `must evaluate to ${want === 'bool' ? 'bool' : 'string'}, but evaluates to ${type}`;
  }
  return { expression, type, size, loopDepth, evaluate: parsed as unknown as Evaluate };
}

function firstLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.split('\n')[0].trim();
}

/**
 * Counts the AST's nodes and the deepest nesting of comprehensions (macros that iterate),
 * and collects the literal patterns given to `matches`.
 */
function measure(ast: unknown): { size: number; loopDepth: number; patterns: string[] } {
  let size = 0;
  let loopDepth = 0;
  const patterns: string[] = [];
  const seen = new Set<unknown>();
  const walk = (n: unknown, depth: number) => {
    if (n === null || typeof n !== 'object' || seen.has(n)) return;
    seen.add(n);
    const node = n as { op?: unknown; args?: unknown };
    let d = depth;
    if (typeof node.op === 'string') {
      size++;
      // Macro calls carry their method name; the library expands them into comprehensions.
      if ((node.op === 'rcall' || node.op === 'call') && isLoopCall(node.args)) d++;
      const pattern = matchesPattern(node);
      if (pattern !== undefined) patterns.push(pattern);
    }
    if (d > loopDepth) loopDepth = d;
    if (Array.isArray(n)) for (const x of n) walk(x, d);
    else for (const v of Object.values(n)) walk(v, d);
  };
  walk(ast, 0);
  return { size, loopDepth, patterns };
}

/** The literal pattern of `s.matches('<p>')` or `matches(s, '<p>')`. */
function matchesPattern(node: { op?: unknown; args?: unknown }): string | undefined {
  if (!Array.isArray(node.args) || node.args[0] !== 'matches') return undefined;
  const args = node.op === 'rcall' ? node.args[2] : node.op === 'call' ? node.args[1] : undefined;
  const last = Array.isArray(args) ? (args[args.length - 1] as { op?: unknown; args?: unknown }) : undefined;
  return last?.op === 'value' && typeof last.args === 'string' ? last.args : undefined;
}

const LOOP_MACROS = new Set(['all', 'exists', 'exists_one', 'map', 'filter', 'sort', 'join']);
function isLoopCall(args: unknown): boolean {
  return Array.isArray(args) && typeof args[0] === 'string' && LOOP_MACROS.has(args[0]);
}

/** Counts the values in `v` (each list item, map entry and scalar), stopping past `limit`. */
export function countValues(v: unknown, limit: number): number {
  let n = 0;
  const stack: unknown[] = [v];
  while (stack.length > 0 && n <= limit) {
    const x = stack.pop();
    n++;
    if (typeof x === 'string') n += Math.floor(x.length / 64);
    else if (Array.isArray(x)) for (const y of x) stack.push(y);
    else if (x !== null && typeof x === 'object') for (const y of Object.values(x)) stack.push(y);
  }
  return n;
}

/**
 * Whether evaluating `c` over data of `values` values could exceed the bound: each level
 * of comprehension may visit every value once per outer visit.
 */
export function exceedsCost(c: CompiledExpression, values: number): boolean {
  return estimatedCost(c, values) > MAX_EVALUATION_STEPS;
}

/** The most steps evaluating `c` over data of `values` values could take. */
export function estimatedCost(c: CompiledExpression, values: number): number {
  return c.size * Math.max(1, values) ** c.loopDepth;
}

/**
 * What all the expressions of one policy evaluation (one binding, one param) may
 * spend together, as Kubernetes' RuntimeCELCostBudget (ten expressions at the limit).
 */
export const MAX_POLICY_STEPS = 10 * MAX_EVALUATION_STEPS;

/**
 * A JSON value as CEL sees it: integers as ints (BigInt), where the kind's schema says
 * number as doubles. Without a schema (CRDs, open fields) a whole number is an int, as
 * Kubernetes' objects keep their numbers integral but for a few quantities.
 */
export function toCel(v: unknown, s?: Schema): unknown {
  if (typeof v === 'number') {
    if (s?.t === 'number') return v;
    return Number.isInteger(v) ? BigInt(v) : v;
  }
  if (Array.isArray(v)) return v.map((x) => toCel(x, s?.t === 'list' ? s.items : undefined));
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const child = s?.t === 'object' ? s.fields[k] : s?.t === 'map' ? s.values : undefined;
      out[k] = toCel(x, child);
    }
    return out;
  }
  return v;
}

/** A CEL result back as JSON-ish text for messages (BigInts as numbers). */
export function celString(v: unknown): string {
  if (typeof v === 'string') return v;
  return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : x)) ?? String(v);
}

/**
 * The field error of an expression that does not compile, as Kubernetes words it
 * (`Invalid value: "<expr>": compilation failed: <the compiler's message>`).
 */
export function expressionErrors(
  expression: unknown,
  path: string,
  scope: CelScope,
  want: 'bool' | 'string' | undefined,
  errs: FieldError[],
): void {
  const text = typeof expression === 'string' ? expression : '';
  if (!text.trim()) {
    errs.push(fieldErrors.required(path));
    return;
  }
  const c = compileCel(text, scope, want);
  if (typeof c === 'string') errs.push(fieldErrors.invalid(path, text, `compilation failed: ${c}`));
}

const MAX_MATCH_CONDITIONS = 64;

/** matchConditions of a policy or a webhook: at most 64, names qualified and unique, each a bool. */
export function matchConditionErrors(list: unknown, path: string, scope: CelScope, errs: FieldError[]): void {
  const conditions = Array.isArray(list) ? list : [];
  if (conditions.length > MAX_MATCH_CONDITIONS)
    errs.push(fieldErrors.tooMany(path, conditions.length, MAX_MATCH_CONDITIONS));
  const names = new Set<string>();
  conditions.forEach((c, i) => {
    const cc = (c ?? {}) as Record<string, unknown>;
    const name = typeof cc.name === 'string' ? cc.name : '';
    if (!name) errs.push(fieldErrors.required(`${path}[${i}].name`));
    else {
      for (const msg of isQualifiedName(name))
        errs.push(fieldErrors.invalid(`${path}[${i}].name`, name, msg));
      if (names.has(name)) errs.push(fieldErrors.duplicate(`${path}[${i}].name`, name));
    }
    names.add(name);
    expressionErrors(cc.expression, `${path}[${i}].expression`, scope, 'bool', errs);
  });
}

export type CelOutcome = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * Evaluates a compiled expression over variables already in CEL form. `values` is the
 * size of the data (countValues) the cost bound weighs the expression against; an
 * error reads as Kubernetes': `expression '<expr>' resulted in error: <why>`.
 */
export function runCel(c: CompiledExpression, vars: Record<string, unknown>, values: number): CelOutcome {
  const failed = (why: string): CelOutcome => ({
    ok: false,
    error: `expression '${c.expression}' resulted in error: ${why}`,
  });
  if (exceedsCost(c, values)) return failed('operation cancelled: actual cost limit exceeded');
  try {
    return { ok: true, value: c.evaluate(vars) };
  } catch (err) {
    return failed(firstLine(err));
  }
}
