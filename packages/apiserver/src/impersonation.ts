// Impersonation, as Kubernetes' WithImpersonation filter: a request carrying
// Impersonate-User (and optionally Impersonate-Group, Impersonate-Uid,
// Impersonate-Extra-<key>) runs as that user once the requester is authorized
// for the `impersonate` verb on each part: users (or serviceaccounts, for
// system:serviceaccount:<ns>:<name>) and groups in the core group, uids and
// userextras/<key> in authentication.k8s.io. A part it may not take is the 403
// Kubernetes gives, naming it; groups, a uid or extras without a user are refused.
import type { IncomingHttpHeaders } from 'node:http';
import { forbidden, internalError } from '@kubit/api';
import type { UserInfo } from './authn.js';
import type { Attributes, Authorizer } from './authz.js';

const USER = 'impersonate-user';
const UID = 'impersonate-uid';
const GROUP = 'impersonate-group';
const EXTRA_PREFIX = 'impersonate-extra-';
const SA_PREFIX = 'system:serviceaccount:';

/** One thing the requester asks to act as, and the attributes it is authorized with. */
interface ImpersonationRequest {
  group: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

const values = (v: string | string[] | undefined): string[] =>
  v === undefined ? [] : (Array.isArray(v) ? v : [v]).flatMap((x) => x.split(',').map((s) => s.trim()));

/** A single-valued header (Impersonate-User, -Uid): its one value, or undefined. */
function single(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  if (v === undefined) return undefined;
  return Array.isArray(v) ? v[0] : v;
}

/** Whether the request asks to impersonate at all (cheap: most requests do not). */
export function wantsImpersonation(headers: IncomingHttpHeaders): boolean {
  for (const k of Object.keys(headers)) if (k.startsWith('impersonate-')) return true;
  return false;
}

/**
 * The user the request runs as: `user` itself without impersonation headers, else
 * the impersonated user, once `authz` allows each part. Throws the 403 (or, for
 * groups or extras without a user, Kubernetes' 500) otherwise.
 */
export function impersonate(user: UserInfo, headers: IncomingHttpHeaders, authz: Authorizer): UserInfo {
  if (!wantsImpersonation(headers)) return user;
  const name = single(headers, USER);
  const uid = single(headers, UID);
  // Node joins repeated Impersonate-Group headers with ", "; group names hold no comma.
  const groups = values(headers[GROUP]).filter((g) => g !== '');
  const extra: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (!k.startsWith(EXTRA_PREFIX) || v === undefined) continue;
    const key = decodeURIComponent(k.slice(EXTRA_PREFIX.length));
    extra[key] = [...(extra[key] ?? []), ...values(v)];
  }
  const requests: ImpersonationRequest[] = [];
  if (name !== undefined) {
    if (name.startsWith(SA_PREFIX) && name.slice(SA_PREFIX.length).split(':').length === 2) {
      const [ns, sa] = name.slice(SA_PREFIX.length).split(':');
      requests.push({ group: '', resource: 'serviceaccounts', subresource: '', namespace: ns, name: sa });
    } else requests.push({ group: '', resource: 'users', subresource: '', namespace: '', name });
  }
  for (const g of groups)
    requests.push({ group: '', resource: 'groups', subresource: '', namespace: '', name: g });
  for (const [key, vs] of Object.entries(extra)) {
    for (const v of vs) {
      requests.push({
        group: 'authentication.k8s.io',
        resource: 'userextras',
        subresource: key,
        namespace: '',
        name: v,
      });
    }
  }
  if (uid !== undefined)
    requests.push({
      group: 'authentication.k8s.io',
      resource: 'uids',
      subresource: '',
      namespace: '',
      name: uid,
    });
  if (name === undefined) {
    const asked = requests.map((r) => `${r.resource}/${r.name}`).join(' ');
    throw internalError(new Error(`requested [${asked}] without impersonating a user`));
  }
  for (const r of requests) {
    const a: Attributes = {
      user,
      verb: 'impersonate',
      resourceRequest: true,
      path: '',
      group: r.group,
      resource: r.resource,
      subresource: r.subresource,
      namespace: r.namespace,
      name: r.name,
    };
    const d = authz.authorize(a);
    if (d.decision === 'allow') continue;
    const resource = r.subresource ? `${r.resource}/${r.subresource}` : r.resource;
    throw forbidden(
      user.name,
      'impersonate',
      resource,
      r.group,
      r.name,
      r.namespace || undefined,
      d.reason || undefined,
    );
  }
  const as = [...groups];
  const sa = requests[0].resource === 'serviceaccounts' ? requests[0] : undefined;
  // A ServiceAccount impersonated without groups gets the groups its token would carry.
  if (sa && groups.length === 0) as.push('system:serviceaccounts', `system:serviceaccounts:${sa.namespace}`);
  const everyone = name === 'system:anonymous' ? 'system:unauthenticated' : 'system:authenticated';
  if (!as.includes(everyone)) as.push(everyone);
  return {
    name,
    groups: as,
    ...(uid !== undefined ? { uid } : {}),
    ...(Object.keys(extra).length > 0 ? { extra } : {}),
  };
}
