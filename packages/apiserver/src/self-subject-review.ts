// authentication.k8s.io/v1 SelfSubjectReview (`kubectl auth whoami`): who the
// request is, as authentication (and impersonation) made it. Nothing is stored.
import { badRequest, methodNotSupported, notFoundPath } from '@kubit/api';
import { nowRfc3339 } from './objects.js';
import { BODY_MEDIA_TYPES, bodyFormat, parseBody, type ResourceRequest } from './request.js';
import type { Ctx, Result } from './rest.js';

export function serveSelfSubjectReview(info: ResourceRequest, ctx: Ctx): Result {
  if (info.name || info.subresource) throw notFoundPath();
  if (info.verb !== 'create')
    throw methodNotSupported({ group: info.group, resource: info.resource }, info.verb);
  // The body says nothing the answer depends on; it must still be a SelfSubjectReview.
  const raw = ctx.body?.length
    ? parseBody(ctx.body, bodyFormat(ctx.contentType, BODY_MEDIA_TYPES), 'SelfSubjectReview')
    : {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw badRequest('SelfSubjectReview cannot be decoded: the body must be a JSON object');
  const u = ctx.user;
  return {
    code: 201,
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
      metadata: { creationTimestamp: nowRfc3339() },
      status: {
        userInfo: {
          username: u.name,
          ...(u.uid ? { uid: u.uid } : {}),
          groups: u.groups,
          ...(u.extra ? { extra: u.extra } : {}),
        },
      },
    },
  };
}
