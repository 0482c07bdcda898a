// authentication.k8s.io/v1 TokenReview: "who is this token?", answered by the
// same checks a request with the token meets (sa-tokens.ts, and the static
// --token-auth-file tokens). Nothing is stored; the answer is the review with status.
import { badRequest, methodNotSupported, notFoundPath } from '@kubit/api';
import type { UserInfo } from './authn.js';
import { obj, str } from './kinds/types.js';
import { conform, schemas } from './model/schema.js';
import { BODY_MEDIA_TYPES, bodyFormat, parseBody, type ResourceRequest } from './request.js';
import type { Ctx, Result } from './rest.js';
import { type BoundObjectLookup, type ServiceAccountTokens, TokenVerificationError } from './sa-tokens.js';

export interface TokenReviewer {
  tokens?: ServiceAccountTokens;
  lookup: BoundObjectLookup;
  /** The users of --token-auth-file, by token. */
  staticUser(token: string): UserInfo | undefined;
}

function userJson(u: UserInfo) {
  return {
    username: u.name,
    ...(u.uid ? { uid: u.uid } : {}),
    groups: u.groups,
    ...(u.extra ? { extra: u.extra } : {}),
  };
}

export async function serveTokenReview(
  info: ResourceRequest,
  ctx: Ctx,
  reviewer: TokenReviewer,
): Promise<Result> {
  if (info.resource !== 'tokenreviews' || info.name || info.subresource) throw notFoundPath();
  if (info.verb !== 'create')
    throw methodNotSupported({ group: info.group, resource: info.resource }, info.verb);
  const raw = parseBody(ctx.body, bodyFormat(ctx.contentType, BODY_MEDIA_TYPES), 'TokenReview');
  const probs = { unknown: [] as string[], types: [] as string[] };
  const review = conform(raw, schemas.tokenReview, '', probs);
  if (probs.types.length > 0 || typeof review !== 'object' || review === null || Array.isArray(review)) {
    throw badRequest(`TokenReview cannot be decoded: ${probs.types[0] ?? 'the body must be a JSON object'}`);
  }
  const r = review as Record<string, unknown>;
  const spec = obj(r.spec);
  const token = str(spec.token);
  if (!token) throw badRequest('TokenReview spec.token: Required value: token is required');
  const wanted = Array.isArray(spec.audiences) ? spec.audiences.map(str).filter(Boolean) : [];
  let status: Record<string, unknown>;
  const known = reviewer.staticUser(token);
  if (known) {
    status = {
      authenticated: true,
      user: userJson(known),
      audiences: wanted.length ? wanted : (reviewer.tokens?.apiAudiences ?? []),
    };
  } else if (!reviewer.tokens) {
    status = { authenticated: false, error: 'invalid bearer token' };
  } else {
    try {
      const v = await reviewer.tokens.verify(
        token,
        reviewer.lookup,
        wanted.length ? wanted : reviewer.tokens.apiAudiences,
      );
      status = { authenticated: true, user: userJson(v.user), audiences: v.audiences };
    } catch (err) {
      if (!(err instanceof TokenVerificationError)) throw err;
      status = { authenticated: false, error: `invalid bearer token, ${err.message}` };
    }
  }
  return {
    code: 201,
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      metadata: { creationTimestamp: null },
      spec: { token, ...(wanted.length ? { audiences: wanted } : {}) },
      status,
    },
  };
}
