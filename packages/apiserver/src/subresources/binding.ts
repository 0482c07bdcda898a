// pods/<name>/binding: the scheduler's POST that puts a pod on a node — one
// guarded write of spec.nodeName and the PodScheduled condition.
import {
  badRequest,
  conflict,
  fieldErrors,
  invalid,
  methodNotSupported,
  notFound,
  type StatusError,
  successStatus,
} from '@kubit/api';
import { arr, type KindDef, obj, type SubresourceDef, type SubresourceRequest, str } from '../kinds/types.js';
import { schemas } from '../model/schema.js';
import { decodeObject, nowRfc3339, parseFieldValidation } from '../objects.js';
import { queryDryRun } from '../options.js';
import { BODY_MEDIA_TYPES, bodyFormat, parseBody, queryString } from '../request.js';
import type { Result } from '../rest.js';
import type { KObject, StoredObject } from '../storage.js';

const PODS = { group: '', resource: 'pods' };
const BINDING_KIND = { group: '', version: 'v1', kind: 'Binding' };
const BINDING_DEF: Pick<KindDef, 'group' | 'version' | 'kind' | 'schema'> = {
  ...BINDING_KIND,
  schema: schemas.binding,
};

async function bind({ rest, def, ri, ctx }: SubresourceRequest): Promise<Result> {
  const dryRun = queryDryRun(ctx.query, 'CreateOptions');
  const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
  const raw = parseBody(ctx.body, bodyFormat(ctx.contentType, BODY_MEDIA_TYPES), 'Binding');
  const b = decodeObject(BINDING_DEF, raw, fv, ctx.warnings);
  const podName = ri.name;
  if (b.metadata?.name && b.metadata.name !== ri.name) {
    throw badRequest(
      `the name of the object (${str(b.metadata.name)}) does not match the name on the URL (${ri.name})`,
    );
  }
  const target = obj(b.target);
  const node = str(target.name);
  if (!node) {
    throw invalid({ group: '', kind: 'Binding' }, podName, [fieldErrors.required('target.name')]);
  }
  if (target.kind !== undefined && target.kind !== '' && target.kind !== 'Node') {
    throw invalid({ group: '', kind: 'Binding' }, podName, [
      fieldErrors.notSupported('target.kind', target.kind, ['Node']),
    ]);
  }
  const key = rest.key(def, ri.namespace, podName);
  // Start from the watch cache's copy: the write is guarded on its revision, so a
  // stale copy costs a failed guard (whose reply carries the current object), never
  // a wrong write; this saves the store a read per binding. A refusal is only ever
  // decided on a copy read from the store itself.
  let cur: StoredObject | null = dryRun ? null : rest.cachedObject(def, key);
  let fresh = false;
  for (let conflicts = 0; ; ) {
    if (!cur) {
      cur = await rest.store.get(key);
      fresh = true;
    }
    if (!cur) throw notFound(PODS, podName);
    const refusal = bindingRefusal(cur.obj, podName, str(b.metadata?.uid));
    if (refusal) {
      if (fresh) throw refusal;
      cur = null;
      continue;
    }
    if (dryRun) break;
    // A new object sharing what the binding leaves alone: the cached copy is never mutated.
    const pod: KObject = {
      ...cur.obj,
      spec: { ...obj(cur.obj.spec), nodeName: node },
      status: withPodScheduled(obj(cur.obj.status)),
    };
    const w = await rest.store.update(key, pod, cur.rev);
    if (w.ok) break;
    if (++conflicts >= 5) throw conflict(PODS, podName);
    // The failed guard's reply holds the object as it is now (null: deleted meanwhile).
    cur = w.current;
    fresh = true;
  }
  return { code: 201, body: { ...successStatus(), code: 201 } };
}

/** Why a pod cannot be bound (a 409 Status), or null when it can. */
function bindingRefusal(pod: KObject, podName: string, wantUid: string): StatusError | null {
  const meta = pod.metadata ?? {};
  if (wantUid && wantUid !== meta.uid) {
    return conflict(
      PODS,
      podName,
      `Precondition failed: UID in precondition: ${wantUid}, UID in object meta: ${str(meta.uid)}`,
    );
  }
  if (meta.deletionTimestamp) {
    return conflict(PODS, podName, `pod ${podName} is being deleted, cannot be assigned to a host`);
  }
  const nodeName = str(obj(pod.spec).nodeName);
  if (nodeName) return conflict(PODS, podName, `pod ${podName} is already assigned to node "${nodeName}"`);
  return null;
}

/** The pod's status with PodScheduled=True (a new object; `status` is left as it was). */
function withPodScheduled(status: Record<string, unknown>): Record<string, unknown> {
  const conditions = arr(status.conditions)
    .map(obj)
    .filter((c) => c.type !== 'PodScheduled');
  conditions.push({
    type: 'PodScheduled',
    status: 'True',
    lastProbeTime: null,
    lastTransitionTime: nowRfc3339(),
  });
  return { ...status, conditions };
}

export const bindingSubresource: SubresourceDef = {
  name: 'binding',
  verbs: ['create'],
  kind: BINDING_KIND,
  serve(verb, req) {
    if (verb === 'create') return bind(req);
    throw methodNotSupported({ group: '', resource: 'pods/binding' }, verb);
  },
  exampleBody(verb, parent) {
    if (verb !== 'create') return undefined;
    return {
      body: {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: parent.metadata?.name, uid: parent.metadata?.uid },
        target: { name: 'n1' },
      },
    };
  },
};
