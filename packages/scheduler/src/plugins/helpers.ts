// Matching rules several plugins share: tolerations against taints, and node
// selector terms (nodeSelector / required node affinity) against a node.
import type { NodeInfo } from '../node-info.js';
import type { NodeSelectorRequirement, NodeSelectorTerm, Pod, Taint, Toleration } from '../types.js';

/** Kubernetes' toleration rule: effect and key must match (empty means any), then Exists or Equal value. */
export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  if (!t.key && t.operator !== 'Exists') return false;
  if (t.operator === 'Exists') return true;
  if (t.operator === undefined || t.operator === '' || t.operator === 'Equal')
    return (t.value ?? '') === (taint.value ?? '');
  return false;
}

export function toleratesAny(ts: readonly Toleration[], taint: Taint): boolean {
  for (const t of ts) if (tolerates(t, taint)) return true;
  return false;
}

function parseIntStrict(s: string): number | null {
  return /^-?\d+$/.test(s) ? Number(s) : null;
}

function requirementMatches(r: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || values.length !== 1) return false;
      const have = parseIntStrict(value);
      const want = parseIntStrict(values[0]);
      if (have === null || want === null) return false;
      return r.operator === 'Gt' ? have > want : have < want;
    }
    default:
      return false;
  }
}

/** A term matches when all its requirements do; a term with none matches nothing. */
export function nodeSelectorTermMatches(term: NodeSelectorTerm, node: NodeInfo): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  for (const r of exprs) {
    const v = Object.hasOwn(node.labels, r.key) ? node.labels[r.key] : undefined;
    if (!requirementMatches(r, v)) return false;
  }
  for (const r of fields) {
    // metadata.name is the only field Kubernetes supports here.
    const v = r.key === 'metadata.name' ? node.name : undefined;
    if (!requirementMatches(r, v)) return false;
  }
  return true;
}

/** nodeSelector AND (any of the required node affinity terms), as Kubernetes evaluates them. */
export function podMatchesNodeSelectorAndAffinity(pod: Pod, node: NodeInfo): boolean {
  const sel = pod.spec?.nodeSelector;
  if (sel) {
    for (const [k, v] of Object.entries(sel)) {
      if (!Object.hasOwn(node.labels, k) || node.labels[k] !== v) return false;
    }
  }
  const terms =
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms === undefined) return true;
  for (const t of terms) if (nodeSelectorTermMatches(t, node)) return true;
  return false;
}

/** Kubernetes' DefaultNormalizeScore: scale to 0..100 by the maximum, optionally reversed. */
export function defaultNormalize(scores: Float64Array | number[], reverse: boolean): void {
  let max = 0;
  for (const s of scores) if (s > max) max = s;
  if (max === 0) {
    if (reverse) for (let i = 0; i < scores.length; i++) scores[i] = 100;
    return;
  }
  for (let i = 0; i < scores.length; i++) {
    const s = Math.trunc((100 * scores[i]) / max);
    scores[i] = reverse ? 100 - s : s;
  }
}

export function nodeLabel(node: NodeInfo, key: string): string | undefined {
  return Object.hasOwn(node.labels, key) ? node.labels[key] : undefined;
}
