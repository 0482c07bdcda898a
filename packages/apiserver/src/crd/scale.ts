// <plural>/scale of a custom resource: autoscaling/v1 Scale over the paths its
// CRD names (specReplicasPath, statusReplicasPath, labelSelectorPath).
import { badRequest, fieldErrors, invalid, methodNotSupported } from '@kubit/api';
import { type KindDef, type SubresourceDef, str } from '../kinds/types.js';
import { applyPatchOfFormat } from '../model/patch.js';
import { schemas } from '../model/schema.js';
import { decodeObject, parseFieldValidation } from '../objects.js';
import { BODY_MEDIA_TYPES, bodyFormat, PATCH_MEDIA_TYPES, parseBody, queryString } from '../request.js';
import { gr, type Result } from '../rest.js';
import type { KObject } from '../storage.js';
import { getPath, setPath } from './jsonpath.js';

export interface ScalePaths {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string;
}

const SCALE_KIND = { group: 'autoscaling', version: 'v1', kind: 'Scale' };
const SCALE_DEF: Pick<KindDef, 'group' | 'version' | 'kind' | 'schema'> = {
  ...SCALE_KIND,
  schema: schemas.scale,
};

function toScale(o: KObject, paths: ScalePaths): KObject {
  const m = o.metadata ?? {};
  const num = (v: unknown) => (typeof v === 'number' ? v : 0);
  const selector = paths.labelSelectorPath ? getPath(o, paths.labelSelectorPath) : undefined;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: Object.fromEntries(
      Object.entries({
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resourceVersion: m.resourceVersion,
        creationTimestamp: m.creationTimestamp,
      }).filter(([, v]) => v !== undefined),
    ),
    spec: { replicas: num(getPath(o, paths.specReplicasPath)) },
    status: {
      replicas: num(getPath(o, paths.statusReplicasPath)),
      ...(typeof selector === 'string' ? { selector } : {}),
    },
  };
}

export function customScaleSubresource(paths: ScalePaths): SubresourceDef {
  return {
    name: 'scale',
    verbs: ['get', 'patch', 'update'],
    kind: SCALE_KIND,
    async serve(verb, { rest, def, ri, ctx }): Promise<Result> {
      if (verb === 'get')
        return { code: 200, body: toScale((await rest.get(def, ri)).body as KObject, paths) };
      if (verb !== 'update' && verb !== 'patch') {
        throw methodNotSupported({ ...gr(def), resource: `${def.resource}/scale` }, verb);
      }
      const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
      const isPatch = verb === 'patch';
      const format = bodyFormat(ctx.contentType, isPatch ? PATCH_MEDIA_TYPES : BODY_MEDIA_TYPES);
      const body = parseBody(ctx.body, format, 'Scale');
      const r = await rest.updateWith(def, ri, ctx, (current) => {
        const raw = isPatch ? applyPatchOfFormat(format, toScale(current, paths), body) : body;
        const scale = decodeObject(SCALE_DEF, raw, fv, ctx.warnings);
        const replicas = (scale.spec as Record<string, unknown> | undefined)?.replicas;
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
        setPath(
          current as Record<string, unknown>,
          paths.specReplicasPath,
          typeof replicas === 'number' ? replicas : 0,
        );
        current.metadata ??= {};
        if (str(sm.resourceVersion)) current.metadata.resourceVersion = sm.resourceVersion;
        return current;
      });
      return { code: r.code, body: toScale(r.body as KObject, paths) };
    },
    exampleBody(verb, parent) {
      const replicas = Number(getPath(parent, paths.specReplicasPath) ?? 0) + 1;
      if (verb === 'update') return { body: { ...toScale(parent, paths), spec: { replicas } } };
      if (verb === 'patch') return { body: { spec: { replicas } } };
      return undefined;
    },
  };
}
