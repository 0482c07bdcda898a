// Label selectors compiled once into predicates, so matching in the hot path is a
// few map lookups. Semantics are Kubernetes': a null selector matches nothing,
// an empty one matches everything.
import type { LabelSelector } from './types.js';

export type Labels = Readonly<Record<string, string>>;

export interface Selector {
  matches(labels: Labels): boolean;
  /** When the selector is exactly one key=value pair, that pair ("k=v"): lets callers use label counts. */
  readonly singlePair: string | null;
  readonly empty: boolean;
}

const nothing: Selector = { matches: () => false, singlePair: null, empty: false };
const everything: Selector = { matches: () => true, singlePair: null, empty: true };

type Requirement = {
  key: string;
  op: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values: ReadonlySet<string>;
};

export function selectorNothing(): Selector {
  return nothing;
}

export function selectorEverything(): Selector {
  return everything;
}

export function compileLabelSelector(sel: LabelSelector | null | undefined): Selector {
  if (sel === null || sel === undefined) return nothing;
  const reqs: Requirement[] = [];
  for (const [key, value] of Object.entries(sel.matchLabels ?? {})) {
    reqs.push({ key, op: 'In', values: new Set([value]) });
  }
  for (const e of sel.matchExpressions ?? []) {
    const op = e.operator;
    if (op !== 'In' && op !== 'NotIn' && op !== 'Exists' && op !== 'DoesNotExist') {
      throw new Error(`invalid label selector operator "${op}": expected In, NotIn, Exists or DoesNotExist`);
    }
    if ((op === 'In' || op === 'NotIn') && (e.values ?? []).length === 0) {
      throw new Error(
        `label selector requirement on "${e.key}" with operator ${op} needs at least one value`,
      );
    }
    reqs.push({ key: e.key, op, values: new Set(e.values ?? []) });
  }
  if (reqs.length === 0) return everything;
  let singlePair: string | null = null;
  if (reqs.length === 1 && reqs[0].op === 'In' && reqs[0].values.size === 1) {
    singlePair = `${reqs[0].key}=${[...reqs[0].values][0]}`;
  }
  return {
    singlePair,
    empty: false,
    matches(labels: Labels): boolean {
      for (const r of reqs) {
        const v = Object.hasOwn(labels, r.key) ? labels[r.key] : undefined;
        switch (r.op) {
          case 'In':
            if (v === undefined || !r.values.has(v)) return false;
            break;
          case 'NotIn':
            if (v !== undefined && r.values.has(v)) return false;
            break;
          case 'Exists':
            if (v === undefined) return false;
            break;
          case 'DoesNotExist':
            if (v !== undefined) return false;
            break;
        }
      }
      return true;
    },
  };
}
