// Label selectors, compiled once per selector object by @kubit/api. An empty
// selector matches everything; a missing one matches nothing (a controller must
// never claim every pod by accident).
import { labelSelectorAsSelector } from '@kubit/api';
import type { LabelSelector } from './types.js';

export type Labels = { [key: string]: string };

export type Matcher = (labels: Labels | undefined) => boolean;

// Cached objects from informers are replaced, never mutated, so the selector
// object itself is a safe cache key.
const compiled = new WeakMap<LabelSelector, Matcher>();
const nothing: Matcher = () => false;

/** Compiles a selector (or returns the cached matcher); throws on an unknown operator. */
export function compileSelector(sel: LabelSelector | undefined | null): Matcher {
  if (!sel) return nothing;
  let m = compiled.get(sel);
  if (!m) {
    const s = labelSelectorAsSelector(sel);
    m = (labels) => s.matches(labels);
    compiled.set(sel, m);
  }
  return m;
}

export function selectorMatches(sel: LabelSelector | undefined | null, labels: Labels | undefined): boolean {
  return compileSelector(sel)(labels);
}

/** Every label of `subset` is on `labels` with the same value. */
export function labelsContain(labels: Labels | undefined, subset: Labels | undefined): boolean {
  return Object.entries(subset ?? {}).every(([k, v]) => labels?.[k] === v);
}
