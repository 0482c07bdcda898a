// pods/<name>/eviction: the API-initiated delete `kubectl drain` uses. A
// policy/v1 Eviction carries the DeleteOptions; the pod is then deleted as a
// DELETE with those options would (dry run included). PodDisruptionBudgets,
// which may refuse an eviction with 429, come with the disruption budgets.
import { badRequest, methodNotSupported, successStatus } from '@kubit/api';
import type { KindDef, SubresourceDef, SubresourceRequest } from '../kinds/types.js';
import { schemas } from '../model/schema.js';
import { decodeObject, parseFieldValidation } from '../objects.js';
import { checkDeleteOptions, queryDryRun } from '../options.js';
import { BODY_MEDIA_TYPES, bodyFormat, parseBody, queryString } from '../request.js';
import type { Result } from '../rest.js';

const EVICTION_KIND = { group: 'policy', version: 'v1', kind: 'Eviction' };
const EVICTION_DEF: Pick<KindDef, 'group' | 'version' | 'kind' | 'schema'> = {
  ...EVICTION_KIND,
  schema: schemas.eviction,
};

async function evict({ rest, def, ri, ctx }: SubresourceRequest): Promise<Result> {
  const queryDry = queryDryRun(ctx.query, 'CreateOptions');
  const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
  const raw = parseBody(ctx.body, bodyFormat(ctx.contentType, BODY_MEDIA_TYPES), 'Eviction');
  // policy/v1beta1 Evictions have the same fields; older clients still send them.
  if (raw && typeof raw === 'object' && (raw as { apiVersion?: unknown }).apiVersion === 'policy/v1beta1') {
    (raw as { apiVersion?: unknown }).apiVersion = 'policy/v1';
  }
  const eviction = decodeObject(EVICTION_DEF, raw, fv, ctx.warnings);
  const name = eviction.metadata?.name;
  if (name !== undefined && name !== ri.name) {
    throw badRequest('name in URL does not match name in Eviction object');
  }
  const opts = checkDeleteOptions((eviction.deleteOptions ?? {}) as Record<string, unknown>);
  // dryRun may come with the request (CreateOptions) or inside the DeleteOptions.
  opts.dryRun ||= queryDry;
  await rest.deleteOne(def, ri.namespace, ri.name, opts, ctx);
  return { code: 201, body: { ...successStatus(), code: 201 } };
}

export const evictionSubresource: SubresourceDef = {
  name: 'eviction',
  verbs: ['create'],
  kind: EVICTION_KIND,
  serve(verb, req) {
    if (verb === 'create') return evict(req);
    throw methodNotSupported({ group: '', resource: 'pods/eviction' }, verb);
  },
  exampleBody(verb, parent) {
    if (verb !== 'create') return undefined;
    return {
      body: {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: parent.metadata?.name, namespace: parent.metadata?.namespace },
      },
    };
  },
};
