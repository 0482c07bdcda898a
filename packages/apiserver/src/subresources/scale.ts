// <resource>/scale: autoscaling/v1 Scale over spec.replicas, for kinds with
// replicas and a pod selector (ReplicaSets, Deployments, ReplicationControllers).
import { badRequest, fieldErrors, invalid, methodNotSupported } from '@kubit/api';
import { type KindDef, obj, type SubresourceDef, str } from '../kinds/types.js';
import { applyPatchOfFormat } from '../model/patch.js';
import { schemas } from '../model/schema.js';
import { selectorText } from '../model/selectors.js';
import { decodeObject, parseFieldValidation } from '../objects.js';
import { BODY_MEDIA_TYPES, bodyFormat, PATCH_MEDIA_TYPES, parseBody, queryString } from '../request.js';
import { gr, type Rest, type Result } from '../rest.js';
import type { KObject } from '../storage.js';

const SCALE_KIND = { group: 'autoscaling', version: 'v1', kind: 'Scale' };

/** The Scale body, decoded like a kind (unknown fields, wrong types). */
const SCALE_DEF: Pick<KindDef, 'group' | 'version' | 'kind' | 'schema'> = {
  ...SCALE_KIND,
  schema: schemas.scale,
};

/** core/v1's scalable kind (ReplicationController) selects with a plain label map. */
const mapSelector = (def: Pick<KindDef, 'group'>): boolean => def.group === '';

/** The Scale view of a scalable object: desired replicas, observed replicas and the pod selector. */
export function toScale(o: KObject, def: Pick<KindDef, 'group'>): KObject {
  const m = o.metadata ?? {};
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    // Only the fields the object has: a patch sees no resourceVersion unless it sets one.
    metadata: Object.fromEntries(
      Object.entries({
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resourceVersion: m.resourceVersion,
        creationTimestamp: m.creationTimestamp,
      }).filter(([, v]) => v !== undefined),
    ),
    spec: { replicas: Number(obj(o.spec).replicas ?? 0) },
    status: { replicas: Number(obj(o.status).replicas ?? 0), selector: selectorText(o, mapSelector(def)) },
  };
}

/** PUT or PATCH of .../scale: only spec.replicas of the object changes. */
async function updateScale(rest: Rest, def: KindDef, req: Parameters<SubresourceDef['serve']>[1]) {
  const { ri, ctx } = req;
  const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
  const isPatch = ri.verb === 'patch';
  const format = bodyFormat(ctx.contentType, isPatch ? PATCH_MEDIA_TYPES : BODY_MEDIA_TYPES);
  const body = parseBody(ctx.body, format, 'Scale');
  const r = await rest.updateWith(def, ri, ctx, (current) => {
    const raw = isPatch ? applyPatchOfFormat(format, toScale(current, def), body) : body;
    const scale = decodeObject(SCALE_DEF, raw, fv, ctx.warnings);
    const replicas = obj(scale.spec).replicas;
    if (typeof replicas === 'number' && replicas < 0) {
      throw invalid({ group: 'autoscaling', kind: 'Scale' }, ri.name, [
        fieldErrors.invalid('spec.replicas', replicas, 'must be greater than or equal to 0'),
      ]);
    }
    const sm = scale.metadata ?? {};
    if (sm.name !== undefined && sm.name !== ri.name) {
      throw badRequest(
        `the name of the object (${str(sm.name)}) does not match the name on the URL (${ri.name})`,
      );
    }
    current.spec = { ...obj(current.spec), replicas: typeof replicas === 'number' ? replicas : 0 };
    current.metadata ??= {};
    // A client-supplied resourceVersion on the Scale is a precondition on the object.
    if (str(sm.resourceVersion)) current.metadata.resourceVersion = sm.resourceVersion;
    return current;
  });
  return { code: r.code, body: toScale(r.body as KObject, def) };
}

export const scaleSubresource: SubresourceDef = {
  name: 'scale',
  verbs: ['get', 'patch', 'update'],
  kind: SCALE_KIND,
  async serve(verb, req): Promise<Result> {
    const { rest, def, ri } = req;
    if (verb === 'get') return { code: 200, body: toScale((await rest.get(def, ri)).body as KObject, def) };
    if (verb === 'update' || verb === 'patch') return updateScale(rest, def, req);
    throw methodNotSupported({ ...gr(def), resource: `${def.resource}/scale` }, verb);
  },
  exampleBody(verb, parent) {
    const replicas = Number(obj(parent.spec).replicas ?? 0) + 2;
    const apiVersion = str(parent.apiVersion);
    const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
    if (verb === 'update') return { body: { ...toScale(parent, { group }), spec: { replicas } } };
    if (verb === 'patch') return { body: { spec: { replicas } } };
    return undefined;
  },
};
