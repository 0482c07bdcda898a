// Label selectors for the scheduler's hot path: @kubit/api compiles them (the
// same semantics and errors as the apiserver's: a null selector matches
// nothing, an empty one everything); this adds what the plugins index by.
import {
  type Selector as ApiSelector,
  everything as apiEverything,
  nothing as apiNothing,
  labelSelectorAsSelector,
} from '@kubit/api';
import type { LabelSelector } from './types.js';

export type Labels = Readonly<Record<string, string>>;

export interface Selector {
  matches(labels: Labels): boolean;
  /** When the selector is exactly one key=value pair, that pair ("k=v"): lets callers use label counts. */
  readonly singlePair: string | null;
  readonly empty: boolean;
}

function adapt(sel: ApiSelector): Selector {
  const reqs = sel.requirements;
  const only = reqs.length === 1 ? reqs[0] : undefined;
  const pinned =
    only &&
    (only.operator === '=' || only.operator === '==' || only.operator === 'in') &&
    only.values.length === 1;
  return {
    matches: (labels) => sel.matches(labels),
    singlePair: pinned ? `${only.key}=${only.values[0]}` : null,
    empty: sel.empty(),
  };
}

const nothing = adapt(apiNothing());
const everything = adapt(apiEverything());

export function selectorNothing(): Selector {
  return nothing;
}

export function selectorEverything(): Selector {
  return everything;
}

/** Compiles a LabelSelector once; throws (naming the problem) on an invalid operator or value. */
export function compileLabelSelector(sel: LabelSelector | null | undefined): Selector {
  if (sel === null || sel === undefined) return nothing;
  return adapt(labelSelectorAsSelector(sel));
}
