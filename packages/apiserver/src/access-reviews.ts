// The access reviews of authorization.k8s.io/v1 (what `kubectl auth can-i`
// asks): SelfSubjectAccessReview, SubjectAccessReview and
// SelfSubjectRulesReview, answered by the same authorizers every request meets.
import {
  badRequest,
  type FieldError,
  fieldErrors,
  invalid,
  methodNotSupported,
  notFoundPath,
} from '@kubit/api';
import type { UserInfo } from './authn.js';
import type { Attributes, Authorizer, RbacAuthorizer } from './authz.js';
import { obj, str } from './kinds/types.js';
import { conform, schemas } from './model/schema.js';
import { BODY_MEDIA_TYPES, bodyFormat, parseBody, type ResourceRequest } from './request.js';
import type { Ctx, Result } from './rest.js';

export function serveAccessReview(
  info: ResourceRequest,
  ctx: Ctx,
  authz: Authorizer,
  rbac: RbacAuthorizer,
): Result {
  const kinds: Record<string, string> = {
    selfsubjectaccessreviews: 'SelfSubjectAccessReview',
    subjectaccessreviews: 'SubjectAccessReview',
    selfsubjectrulesreviews: 'SelfSubjectRulesReview',
  };
  const kind = kinds[info.resource];
  if (!kind || info.name || info.subresource) throw notFoundPath();
  if (info.verb !== 'create')
    throw methodNotSupported({ group: info.group, resource: info.resource }, info.verb);
  // JSON, YAML or protobuf (`kubectl auth can-i` sends protobuf) through the one body parser.
  const raw = parseBody(ctx.body, bodyFormat(ctx.contentType, BODY_MEDIA_TYPES), kind);
  const probs = { unknown: [] as string[], types: [] as string[] };
  const review = conform(
    raw,
    kind === 'SelfSubjectAccessReview' ? schemas.selfSubjectAccessReview : { t: 'any' },
    '',
    probs,
  );
  if (probs.types.length > 0 || typeof review !== 'object' || review === null || Array.isArray(review)) {
    throw badRequest(`${kind} cannot be decoded: ${probs.types[0] ?? 'the body must be a JSON object'}`);
  }
  const r = review as Record<string, unknown>;
  const spec = obj(r.spec);
  let subject: UserInfo = ctx.user;
  if (kind === 'SubjectAccessReview') {
    if (!str(spec.user) && !Array.isArray(spec.groups)) {
      throw invalid({ group: 'authorization.k8s.io', kind }, '', [
        fieldErrors.required('spec.user', 'at least one of user or group must be specified'),
      ]);
    }
    subject = { name: str(spec.user), groups: Array.isArray(spec.groups) ? spec.groups.map(String) : [] };
  }
  if (kind === 'SelfSubjectRulesReview') {
    const ns = str(spec.namespace);
    const rules = rbac.rulesFor(ctx.user, ns).map(obj);
    return answer(r, kind, {
      resourceRules: rules
        .filter((x) => !x.nonResourceURLs)
        .map((x) => ({
          verbs: x.verbs,
          apiGroups: x.apiGroups,
          resources: x.resources,
          resourceNames: x.resourceNames,
        })),
      nonResourceRules: rules
        .filter((x) => x.nonResourceURLs)
        .map((x) => ({ verbs: x.verbs, nonResourceURLs: x.nonResourceURLs })),
      incomplete: false,
    });
  }
  const ra = spec.resourceAttributes ? obj(spec.resourceAttributes) : undefined;
  const na = spec.nonResourceAttributes ? obj(spec.nonResourceAttributes) : undefined;
  if (!ra && !na) {
    const errs: FieldError[] = [
      fieldErrors.required(
        'spec.resourceAttributes',
        'exactly one of nonResourceAttributes or resourceAttributes must be specified',
      ),
    ];
    throw invalid({ group: 'authorization.k8s.io', kind }, '', errs);
  }
  const attrs: Attributes = ra
    ? {
        user: subject,
        verb: str(ra.verb),
        resourceRequest: true,
        path: '',
        group: str(ra.group),
        resource: str(ra.resource),
        subresource: str(ra.subresource),
        namespace: str(ra.namespace),
        name: str(ra.name),
      }
    : {
        user: subject,
        verb: str(na?.verb),
        resourceRequest: false,
        path: str(na?.path),
        group: '',
        resource: '',
        subresource: '',
        namespace: '',
        name: '',
      };
  const d = authz.authorize(attrs);
  return answer(
    r,
    kind,
    {
      allowed: d.decision === 'allow',
      ...(d.decision === 'deny' ? { denied: true } : {}),
      ...(d.reason ? { reason: d.reason } : {}),
    },
    { metadata: { creationTimestamp: null } },
  );
}

/** The review as sent, with its status filled in (201: reviews are created, never stored). */
function answer(
  review: Record<string, unknown>,
  kind: string,
  status: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Result {
  return { code: 201, body: { ...review, apiVersion: 'authorization.k8s.io/v1', kind, ...extra, status } };
}
