// serviceaccounts/<name>/token: the TokenRequest API. It signs a token for the
// ServiceAccount, bound (when asked) to a Pod or Secret of its namespace whose uid
// it checks, so the token dies with that object (sa-tokens.ts). Nothing is stored.
import {
  badRequest,
  conflict,
  fieldErrors,
  forbiddenWithMessage,
  invalid,
  methodNotSupported,
  notFound,
} from '@kubit/api';
import { nodeNameOf } from '../authz.js';
import { type KindDef, obj, type SubresourceDef, type SubresourceRequest, str } from '../kinds/types.js';
import { schemas } from '../model/schema.js';
import { decodeObject, nowRfc3339, parseFieldValidation } from '../objects.js';
import { queryDryRun } from '../options.js';
import { BODY_MEDIA_TYPES, bodyFormat, parseBody, queryString } from '../request.js';
import type { Result } from '../rest.js';
import type { BoundObject, ServiceAccountTokens } from '../sa-tokens.js';

const TOKEN_REQUEST_KIND = { group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest' };
const TOKEN_REQUEST_DEF: Pick<KindDef, 'group' | 'version' | 'kind' | 'schema'> = {
  ...TOKEN_REQUEST_KIND,
  schema: schemas.tokenRequest,
};
/** Kubernetes' bounds: at least ten minutes, at most 2^32 seconds; an hour when not asked. */
const MIN_EXPIRATION_SECONDS = 600;
const MAX_EXPIRATION_SECONDS = 2 ** 32;
const DEFAULT_EXPIRATION_SECONDS = 3600;
const BOUND_KINDS = ['Pod', 'Secret'] as const;
const SA_TOKEN = { group: '', resource: 'serviceaccounts/token' };

async function requestToken(tokens: ServiceAccountTokens, req: SubresourceRequest): Promise<Result> {
  const { rest, def, ri, ctx } = req;
  const dryRun = queryDryRun(ctx.query, 'CreateOptions');
  const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
  const raw = parseBody(ctx.body, bodyFormat(ctx.contentType, BODY_MEDIA_TYPES), 'TokenRequest');
  const tr = decodeObject(TOKEN_REQUEST_DEF, raw, fv, ctx.warnings);
  const spec = obj(tr.spec);
  const requested =
    typeof spec.expirationSeconds === 'number' ? spec.expirationSeconds : DEFAULT_EXPIRATION_SECONDS;
  if (requested < MIN_EXPIRATION_SECONDS) {
    throw invalid(TOKEN_REQUEST_KIND, ri.name, [
      fieldErrors.invalid(
        'spec.expirationSeconds',
        requested,
        'may not specify a duration less than 10 minutes',
      ),
    ]);
  }
  if (requested > MAX_EXPIRATION_SECONDS) {
    throw invalid(TOKEN_REQUEST_KIND, ri.name, [
      fieldErrors.invalid(
        'spec.expirationSeconds',
        requested,
        'may not specify a duration larger than 2^32 seconds',
      ),
    ]);
  }
  const expirationSeconds = Math.min(requested, tokens.maxExpirationSeconds);
  const sa = await rest.store.get(rest.key(def, ri.namespace, ri.name));
  if (!sa) throw notFound({ group: '', resource: 'serviceaccounts' }, ri.name);
  const ref = obj(spec.boundObjectRef);
  if (nodeNameOf(ctx.user) && Object.keys(ref).length === 0) {
    throw forbiddenWithMessage(
      SA_TOKEN,
      ri.name,
      `node "${nodeNameOf(ctx.user)}" requested token not bound to a pod`,
    );
  }
  let bound: BoundObject | undefined;
  let node: { name: string; uid: string } | undefined;
  if (Object.keys(ref).length > 0) {
    const kind = str(ref.kind);
    if (!(BOUND_KINDS as readonly string[]).includes(kind) || (str(ref.apiVersion) || 'v1') !== 'v1') {
      throw badRequest(
        `cannot bind token for serviceaccount "${ri.name}" to object of kind ${str(ref.apiVersion)}, Kind=${kind}`,
      );
    }
    const resource = kind === 'Pod' ? 'pods' : 'secrets';
    const target = await rest.store.get(`/registry/${resource}/${ri.namespace}/${str(ref.name)}`);
    if (!target) throw notFound({ group: '', resource }, str(ref.name));
    const uid = str(target.obj.metadata?.uid);
    if (str(ref.uid) && str(ref.uid) !== uid) {
      throw conflict(
        { group: '', resource: kind },
        str(ref.name),
        `the UID in the bound object reference (${str(ref.uid)}) does not match the UID in record. The object might have been deleted and then recreated`,
      );
    }
    // NodeRestriction: a kubelet asks only for tokens bound to pods it runs.
    const asNode = nodeNameOf(ctx.user);
    if (asNode && kind !== 'Pod') {
      throw forbiddenWithMessage(SA_TOKEN, ri.name, `node "${asNode}" requested token not bound to a pod`);
    }
    if (kind === 'Pod') {
      const podSpec = obj(target.obj.spec);
      if (asNode && str(podSpec.nodeName) !== asNode) {
        throw forbiddenWithMessage(
          SA_TOKEN,
          ri.name,
          `node "${asNode}" requested token bound to a pod scheduled on a different node`,
        );
      }
      if ((str(podSpec.serviceAccountName) || 'default') !== ri.name) {
        throw badRequest(
          `cannot bind token for serviceaccount "${ri.name}" to pod running with different serviceaccount name.`,
        );
      }
      const nodeName = str(podSpec.nodeName);
      const n = nodeName ? await rest.store.get(`/registry/nodes/${nodeName}`).catch(() => null) : null;
      if (nodeName) node = { name: nodeName, uid: str(n?.obj.metadata?.uid) };
    }
    bound = { kind: kind as BoundObject['kind'], name: str(ref.name), uid };
  }
  const audiences =
    Array.isArray(spec.audiences) && spec.audiences.length ? spec.audiences.map(str) : tokens.apiAudiences;
  const answer = {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    metadata: { name: ri.name, namespace: ri.namespace, creationTimestamp: nowRfc3339() },
    spec: { ...spec, audiences, expirationSeconds },
    status: { token: '', expirationTimestamp: '' },
  };
  if (dryRun) return { code: 201, body: answer };
  const issued = tokens.issue(
    {
      namespace: ri.namespace,
      serviceAccount: { name: ri.name, uid: str(sa.obj.metadata?.uid) },
      bound,
      node,
    },
    audiences,
    expirationSeconds,
  );
  answer.status = {
    token: issued.token,
    expirationTimestamp: issued.expiresAt.toISOString().replace(/\.\d+Z$/, 'Z'),
  };
  return { code: 201, body: answer };
}

export function tokenSubresource(tokens: ServiceAccountTokens): SubresourceDef {
  return {
    name: 'token',
    verbs: ['create'],
    kind: TOKEN_REQUEST_KIND,
    serve(verb, req) {
      if (verb === 'create') return requestToken(tokens, req);
      throw methodNotSupported({ group: '', resource: 'serviceaccounts/token' }, verb);
    },
    exampleBody(verb) {
      if (verb !== 'create') return undefined;
      return {
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { expirationSeconds: 600 },
        },
      };
    },
  };
}
