// What an object counts against a ResourceQuota, shared by the apiserver's
// ResourceQuota admission and the controller manager's resourcequota
// controller (which keeps status.used), as Kubernetes' quota evaluators
// (pkg/quota/v1/evaluator/core) count: object counts by resource name and by
// count/<resource>[.<group>], a pod's compute requests and limits, a claim's
// storage request.
import { parseQuantity, type Quantity, tryParseQuantity } from './quantity.js';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The core resources counted by their plain names (besides count/<resource>). */
const CORE_COUNTED = new Set([
  'pods',
  'services',
  'configmaps',
  'secrets',
  'persistentvolumeclaims',
  'replicationcontrollers',
  'resourcequotas',
]);

const COMPUTE = ['cpu', 'memory', 'ephemeral-storage'];

/** A pod that ended no longer uses what it asked for (Kubernetes' QuotaV1Pod). */
export function podIsTerminal(pod: Obj): boolean {
  const phase = obj(pod.status).phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/** The sum of containers' values of `kind` (requests, limits), at least each init container's (the pod's effective value). */
function podResources(pod: Obj, kind: 'requests' | 'limits'): Map<string, Quantity> {
  const spec = obj(pod.spec);
  const sum = new Map<string, Quantity>();
  for (const c of arr(spec.containers)) {
    for (const [k, v] of Object.entries(obj(obj(obj(c).resources)[kind]))) {
      const q = tryParseQuantity(String(v));
      if (!q) continue;
      const prev = sum.get(k);
      sum.set(k, prev ? prev.add(q) : q);
    }
  }
  for (const c of arr(spec.initContainers)) {
    for (const [k, v] of Object.entries(obj(obj(obj(c).resources)[kind]))) {
      const q = tryParseQuantity(String(v));
      if (!q) continue;
      const prev = sum.get(k);
      if (!prev || q.cmp(prev) > 0) sum.set(k, q);
    }
  }
  return sum;
}

/** What one object of `group`/`resource` adds to each quota resource name. */
export function quotaUsage(group: string, resource: string, o: Obj): Map<string, Quantity> {
  const out = new Map<string, Quantity>();
  const one = parseQuantity('1');
  if (group === '' && resource === 'pods' && podIsTerminal(o)) return out;
  out.set(group ? `count/${resource}.${group}` : `count/${resource}`, one);
  if (group !== '') return out;
  if (CORE_COUNTED.has(resource)) out.set(resource, one);
  if (resource === 'services') {
    const type = obj(o.spec).type;
    if (type === 'LoadBalancer') out.set('services.loadbalancers', one);
    if (type === 'NodePort' || type === 'LoadBalancer') {
      const ports = arr(obj(o.spec).ports).length;
      if (type === 'NodePort' || ports > 0) out.set('services.nodeports', parseQuantity(String(ports)));
    }
  }
  if (resource === 'pods') {
    for (const [k, q] of podResources(o, 'requests')) {
      if (!COMPUTE.includes(k)) continue;
      out.set(`requests.${k}`, q);
      out.set(k, q);
    }
    for (const [k, q] of podResources(o, 'limits')) if (COMPUTE.includes(k)) out.set(`limits.${k}`, q);
  }
  if (resource === 'persistentvolumeclaims') {
    const storage = tryParseQuantity(String(obj(obj(obj(o.spec).resources).requests).storage ?? ''));
    if (storage) out.set('requests.storage', storage);
    const cls = obj(o.spec).storageClassName;
    if (typeof cls === 'string' && cls) {
      out.set(`${cls}.storageclass.storage.k8s.io/persistentvolumeclaims`, one);
      if (storage) out.set(`${cls}.storageclass.storage.k8s.io/requests.storage`, storage);
    }
  }
  return out;
}

/**
 * The compute resources a quota tracks that a pod's containers leave unset: such a pod
 * cannot be admitted ("must specify"), since its use could not be counted.
 */
export function podMissingResources(pod: Obj, hard: Iterable<string>): string[] {
  const missing: string[] = [];
  const containers = [...arr(obj(pod.spec).containers), ...arr(obj(pod.spec).initContainers)].map(obj);
  for (const name of hard) {
    const m =
      /^(requests|limits)\.(cpu|memory|ephemeral-storage)$/.exec(name) ?? /^()(cpu|memory)$/.exec(name);
    if (!m) continue;
    const kind = m[1] === 'limits' ? 'limits' : 'requests';
    if (containers.some((c) => obj(obj(c.resources)[kind])[m[2]] === undefined)) missing.push(name);
  }
  return missing.sort();
}

/** Adds `more` into `into`, name by name. */
export function addUsage(into: Map<string, Quantity>, more: Map<string, Quantity>): void {
  for (const [k, q] of more) {
    const prev = into.get(k);
    into.set(k, prev ? prev.add(q) : q);
  }
}

/** "pods=1,requests.cpu=500m", sorted by name, as Kubernetes prints a ResourceList. */
export function formatResourceList(list: Map<string, Quantity | string>): string {
  return [...list.keys()]
    .sort()
    .map((k) => `${k}=${String(list.get(k))}`)
    .join(',');
}

/** Which group/resource a quota resource name counts: "pods" → core pods, "count/deployments.apps" → apps deployments. */
export function quotaResourceOf(name: string): { group: string; resource: string } | undefined {
  if (name.startsWith('count/')) {
    const rest = name.slice('count/'.length);
    const dot = rest.indexOf('.');
    return dot < 0
      ? { group: '', resource: rest }
      : { group: rest.slice(dot + 1), resource: rest.slice(0, dot) };
  }
  if (CORE_COUNTED.has(name)) return { group: '', resource: name };
  if (name.startsWith('services.')) return { group: '', resource: 'services' };
  if (/^(requests\.|limits\.)?(cpu|memory|ephemeral-storage)$/.test(name))
    return { group: '', resource: 'pods' };
  if (name === 'requests.storage' || name.includes('.storageclass.storage.k8s.io/')) {
    return { group: '', resource: 'persistentvolumeclaims' };
  }
  return undefined;
}

/** A pod with no cpu or memory requests or limits in any container (Kubernetes' BestEffort QoS). */
function isBestEffort(pod: Obj): boolean {
  const spec = obj(pod.spec);
  for (const c of [...arr(spec.containers), ...arr(spec.initContainers)].map(obj)) {
    const r = obj(c.resources);
    for (const list of [obj(r.requests), obj(r.limits)]) {
      if (list.cpu !== undefined || list.memory !== undefined) return false;
    }
  }
  return true;
}

function scopeMatches(scope: string, operator: string, values: string[], pod: Obj): boolean {
  const spec = obj(pod.spec);
  switch (scope) {
    case 'Terminating':
      return typeof spec.activeDeadlineSeconds === 'number';
    case 'NotTerminating':
      return typeof spec.activeDeadlineSeconds !== 'number';
    case 'BestEffort':
      return isBestEffort(pod);
    case 'NotBestEffort':
      return !isBestEffort(pod);
    case 'PriorityClass': {
      const pc = typeof spec.priorityClassName === 'string' ? spec.priorityClassName : '';
      if (operator === 'Exists') return pc !== '';
      if (operator === 'DoesNotExist') return pc === '';
      if (operator === 'NotIn') return !values.includes(pc);
      return values.includes(pc);
    }
    default:
      return false;
  }
}

/**
 * Whether a quota's scopes (spec.scopes and spec.scopeSelector) take in this object: a quota
 * without them takes in everything; one with them only the pods that match every scope.
 */
export function quotaScopesMatch(quotaSpec: Obj, group: string, resource: string, o: Obj): boolean {
  const scopes = arr(quotaSpec.scopes).map(String);
  const exprs = arr(obj(quotaSpec.scopeSelector).matchExpressions).map(obj);
  if (scopes.length === 0 && exprs.length === 0) return true;
  if (group !== '' || resource !== 'pods') return false;
  for (const s of scopes) if (!scopeMatches(s, 'Exists', [], o)) return false;
  for (const e of exprs) {
    const values = arr(e.values).map(String);
    if (!scopeMatches(String(e.scopeName ?? ''), String(e.operator ?? ''), values, o)) return false;
  }
  return true;
}
