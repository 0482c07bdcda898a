// LimitRanger, as Kubernetes' plugin/pkg/admission/limitranger: a new pod's
// containers get the default requests and limits of their namespace's
// LimitRanges (type Container), noted in the kubernetes.io/limit-ranger
// annotation, and a container, a pod (type Pod: its containers' sum) or a claim
// (type PersistentVolumeClaim: its storage request) outside a range's min, max
// or maxLimitRequestRatio is refused with Kubernetes' messages (403).
import { forbiddenWithMessage, type Quantity, quotaUsage, tryParseQuantity } from '@kubit/api';
import { arr, type KindDef, obj, str } from '../kinds/types.js';
import type { CreateAdmission } from '../rest.js';
import type { KObject } from '../storage.js';
import type { WatchCache } from '../watchcache.js';

type Obj = Record<string, unknown>;
const ANNOTATION = 'kubernetes.io/limit-ranger';

const isPods = (def: KindDef) => def.group === '' && def.resource === 'pods';

interface Container {
  c: Obj;
  what: string;
}

function containersOf(pod: KObject): Container[] {
  const spec = obj(pod.spec);
  return [
    ...arr(spec.initContainers).map((c) => ({ c: obj(c), what: `init container ${str(obj(c).name)}` })),
    ...arr(spec.containers).map((c) => ({ c: obj(c), what: `container ${str(obj(c).name)}` })),
  ];
}

/** Sets the defaults a Container item gives; returns the annotation's parts. */
function applyDefaults(item: Obj, containers: Container[]): string[] {
  const notes: string[] = [];
  for (const { c, what } of containers) {
    const resources = obj(c.resources);
    const requests = obj(resources.requests);
    const limits = obj(resources.limits);
    const setReq: string[] = [];
    const setLim: string[] = [];
    for (const [k, v] of Object.entries(obj(item.defaultRequest))) {
      if (requests[k] === undefined) {
        requests[k] = v;
        setReq.push(k);
      }
    }
    for (const [k, v] of Object.entries(obj(item.default))) {
      if (limits[k] === undefined) {
        limits[k] = v;
        setLim.push(k);
      }
    }
    if (setReq.length === 0 && setLim.length === 0) continue;
    if (Object.keys(requests).length > 0) resources.requests = requests;
    if (Object.keys(limits).length > 0) resources.limits = limits;
    c.resources = resources;
    if (setReq.length > 0) notes.push(`${setReq.join(', ')} request for ${what}`);
    if (setLim.length > 0) notes.push(`${setLim.join(', ')} limit for ${what}`);
  }
  return notes;
}

const q = (v: unknown): Quantity | undefined => (v === undefined ? undefined : tryParseQuantity(String(v)));

/**
 * What is wrong with a container's, a pod's or a claim's requests and limits against one
 * item (Kubernetes' minConstraint, maxConstraint, limitRequestRatioConstraint). A claim has
 * only requests: its max is checked against them.
 */
function violations(item: Obj, type: string, requests: Obj, limits: Obj): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(obj(item.min))) {
    const min = q(v);
    if (!min) continue;
    const req = q(requests[k]);
    const lim = q(limits[k]);
    if (!req) out.push(`minimum ${k} usage per ${type} is ${min}.  No request is specified`);
    else if (req.cmp(min) < 0) out.push(`minimum ${k} usage per ${type} is ${min}, but request is ${req}`);
    else if (lim && lim.cmp(min) < 0)
      out.push(`minimum ${k} usage per ${type} is ${min}, but limit is ${lim}`);
  }
  for (const [k, v] of Object.entries(obj(item.max))) {
    const max = q(v);
    if (!max) continue;
    const req = q(requests[k]);
    const lim = q(limits[k]);
    if (type === 'PersistentVolumeClaim') {
      if (!req) out.push(`maximum ${k} usage per ${type} is ${max}.  No request is specified`);
      else if (req.cmp(max) > 0) out.push(`maximum ${k} usage per ${type} is ${max}, but request is ${req}`);
      continue;
    }
    if (!lim) out.push(`maximum ${k} usage per ${type} is ${max}.  No limit is specified`);
    else if (lim.cmp(max) > 0) out.push(`maximum ${k} usage per ${type} is ${max}, but limit is ${lim}`);
    else if (req && req.cmp(max) > 0)
      out.push(`maximum ${k} usage per ${type} is ${max}, but request is ${req}`);
  }
  for (const [k, v] of Object.entries(obj(item.maxLimitRequestRatio))) {
    const ratio = q(v);
    if (!ratio) continue;
    const req = q(requests[k]);
    const lim = q(limits[k]);
    if (!req || req.isZero()) {
      out.push(
        `${k} max limit to request ratio per ${type} is ${ratio}, but no request is specified or request is 0`,
      );
    } else if (!lim) {
      out.push(`${k} max limit to request ratio per ${type} is ${ratio}, but no limit is specified`);
    } else {
      const actual = lim.milliValue() / req.milliValue();
      if (actual > ratio.milliValue() / 1000) {
        out.push(
          `${k} max limit to request ratio per ${type} is ${ratio}, but provided ratio is ${actual.toFixed(6)}`,
        );
      }
    }
  }
  return out;
}

/** The LimitRanger admission of pod creates, over the LimitRanges' watch cache. */
/** A pod's requests or limits as one (the sum of its containers, at least each init container's). */
function podTotals(pod: KObject, kind: 'requests' | 'limits'): Obj {
  const out: Obj = {};
  for (const [k, v] of quotaUsage('', 'pods', { ...pod, status: {} })) {
    if (k.startsWith(`${kind}.`)) out[k.slice(kind.length + 1)] = String(v);
  }
  return out;
}

/** The LimitRanger admission of pod and claim creates, over the LimitRanges' watch cache. */
export function limitRangerAdmission(limitRanges: WatchCache): CreateAdmission {
  return async (def, o, namespace) => {
    const claims = def.group === '' && def.resource === 'persistentvolumeclaims';
    if (!isPods(def) && !claims) return;
    const ranges = limitRanges
      .list((lr) => str(lr.metadata?.namespace) === namespace)
      .sort((a, b) => str(a.metadata?.name).localeCompare(str(b.metadata?.name)));
    if (ranges.length === 0) return;
    const items = ranges.flatMap((lr) => arr(obj(lr.spec).limits).map(obj));
    const errs: string[] = [];
    const notes: string[] = [];
    if (claims) {
      const requests = obj(obj(obj(o.spec).resources).requests);
      for (const item of items.filter((i) => i.type === 'PersistentVolumeClaim')) {
        errs.push(...violations(item, 'PersistentVolumeClaim', requests, {}));
      }
    } else {
      const containers = containersOf(o);
      const forContainers = items.filter((i) => i.type === 'Container');
      for (const item of forContainers) notes.push(...applyDefaults(item, containers));
      for (const item of forContainers) {
        for (const { c } of containers) {
          errs.push(
            ...violations(item, 'Container', obj(obj(c.resources).requests), obj(obj(c.resources).limits)),
          );
        }
      }
      for (const item of items.filter((i) => i.type === 'Pod')) {
        errs.push(...violations(item, 'Pod', podTotals(o, 'requests'), podTotals(o, 'limits')));
      }
    }
    if (errs.length > 0) {
      throw forbiddenWithMessage(
        { group: '', resource: def.resource },
        str(o.metadata?.name),
        errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`,
      );
    }
    if (notes.length > 0) {
      const m = o.metadata ?? {};
      o.metadata = m;
      m.annotations = { ...obj(m.annotations), [ANNOTATION]: `LimitRanger plugin set: ${notes.join('; ')}` };
    }
  };
}
