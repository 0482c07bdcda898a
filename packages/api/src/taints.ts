// Taints and tolerations, node selector requirements and pod resource requests: the
// small pieces of Kubernetes' API helpers that the scheduler, the kubelet and the
// controllers all need to agree on.

import type { NodeSelectorRequirement, PodSpec, Taint, Toleration } from 'kubernetes-types/core/v1.js';
import {
  LabelSelectorParseError,
  newRequirement,
  type Requirement,
  type Selector,
  selectorOf,
} from './labels.js';
import { parseQuantity, Quantity } from './quantity.js';

/** Whether one toleration tolerates the taint (empty effect/key match any; Exists ignores the value). */
export function toleratesTaint(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  switch (toleration.operator ?? 'Equal') {
    case 'Exists':
      return true;
    case 'Equal':
    case '':
      return (toleration.value ?? '') === (taint.value ?? '');
    default:
      return false;
  }
}

export function tolerationsTolerateTaint(
  tolerations: readonly Toleration[] | undefined,
  taint: Taint,
): boolean {
  return (tolerations ?? []).some((t) => toleratesTaint(t, taint));
}

/** The first taint (optionally only of the effects given) that no toleration tolerates. */
export function findUntoleratedTaint(
  taints: readonly Taint[] | undefined,
  tolerations: readonly Toleration[] | undefined,
  effects?: readonly string[],
): Taint | undefined {
  for (const taint of taints ?? []) {
    if (effects && !effects.includes(taint.effect)) continue;
    if (!tolerationsTolerateTaint(tolerations, taint)) return taint;
  }
  return undefined;
}

const NODE_SELECTOR_OPERATORS = {
  In: 'in',
  NotIn: 'notin',
  Exists: 'exists',
  DoesNotExist: '!',
  Gt: 'gt',
  Lt: 'lt',
} as const;

/**
 * Compiles node selector requirements (node affinity matchExpressions, with Gt and Lt)
 * into a Selector over node labels. No requirements selects nothing, as in Kubernetes.
 */
export function nodeSelectorRequirementsAsSelector(
  reqs: readonly NodeSelectorRequirement[] | undefined,
): Selector {
  if (!reqs || reqs.length === 0) return selectorOf([], true);
  const compiled: Requirement[] = reqs.map((r) => {
    const op = Object.hasOwn(NODE_SELECTOR_OPERATORS, r.operator)
      ? NODE_SELECTOR_OPERATORS[r.operator as keyof typeof NODE_SELECTOR_OPERATORS]
      : undefined;
    if (!op)
      throw new LabelSelectorParseError(
        `${JSON.stringify(r.operator)} is not a valid node selector operator`,
      );
    return newRequirement(r.key, op, r.values ?? []);
  });
  return selectorOf(compiled);
}

/** Requests of one container (defaulting has already copied limits into missing requests). */
function containerRequests(c: { resources?: { requests?: Record<string, string> } }): Map<string, Quantity> {
  const out = new Map<string, Quantity>();
  const requests = c.resources?.requests ?? {};
  for (const k of Object.keys(requests)) out.set(k, parseQuantity(String(requests[k])));
  return out;
}

function addInto(total: Map<string, Quantity>, add: Map<string, Quantity>): void {
  for (const [k, q] of add) total.set(k, (total.get(k) ?? Quantity.zero(q.format)).add(q));
}

function maxInto(total: Map<string, Quantity>, other: Map<string, Quantity>): void {
  for (const [k, q] of other) {
    const cur = total.get(k);
    if (!cur || q.cmp(cur) > 0) total.set(k, q);
  }
}

/**
 * What a pod asks of a node, as the scheduler counts it: the sum of its containers,
 * or the largest init container if that is more (sidecars, restartPolicy Always,
 * count for the rest of the pod's life), plus the pod overhead.
 */
export function podResourceRequests(spec: PodSpec | undefined): Map<string, Quantity> {
  const total = new Map<string, Quantity>();
  if (!spec) return total;
  for (const c of spec.containers ?? []) addInto(total, containerRequests(c));
  const sidecars = new Map<string, Quantity>();
  const initMax = new Map<string, Quantity>();
  for (const c of spec.initContainers ?? []) {
    const req = containerRequests(c);
    if (c.restartPolicy === 'Always') {
      addInto(sidecars, req);
      continue;
    }
    // A regular init container runs alongside the sidecars started before it.
    const running = new Map(sidecars);
    addInto(running, req);
    maxInto(initMax, running);
  }
  addInto(total, sidecars);
  maxInto(total, initMax);
  const overhead = spec.overhead ?? {};
  for (const k of Object.keys(overhead)) addInto(total, new Map([[k, parseQuantity(String(overhead[k]))]]));
  return total;
}
