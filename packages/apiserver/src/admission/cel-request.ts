// What CEL admission expressions see of a request: `object`, `oldObject` and
// `request` (Kubernetes' admission request: kind, resource, subresource, name,
// namespace, operation, userInfo, dryRun, options), with the objects in the
// version the rules matched them as, as ValidatingAdmissionPolicy and webhook
// matchConditions give them.
import type { Authorizer } from '../authz.js';
import { groupVersion, type KindDef, str } from '../kinds/types.js';
import type { KObject } from '../storage.js';
import { CelAuthorizer } from './cel-authorizer.js';
import type { AdmissionAttributes } from './webhooks.js';

/** `o` (stored or sent as kind `from`) converted to kind `to` (kinds sharing storage), as a copy. */
export function asMatchedKind(to: KindDef, from: KindDef, o: KObject): KObject {
  if (to === from) {
    const x = structuredClone(o);
    // Expressions and webhooks read the type meta, which a client may have left out.
    x.apiVersion ??= groupVersion(to);
    x.kind ??= to.kind;
    return x;
  }
  const stored = from.toStorage ? from.toStorage(structuredClone(o)) : structuredClone(o);
  const x = to.fromStorage ? to.fromStorage(stored) : stored;
  x.apiVersion = groupVersion(to);
  x.kind = to.kind;
  return x;
}

/** The `request` variable: an admission.k8s.io/v1 AdmissionRequest without uid. */
export function celRequest(a: AdmissionAttributes, matched: KindDef): Record<string, unknown> {
  const kindOf = (d: KindDef) => ({ group: d.group, version: d.version, kind: d.kind });
  const resourceOf = (d: KindDef) => ({ group: d.group, version: d.version, resource: d.resource });
  const userInfo: Record<string, unknown> = { username: a.user.name, groups: a.user.groups ?? [] };
  if (a.user.uid) userInfo.uid = a.user.uid;
  if (a.user.extra) userInfo.extra = a.user.extra;
  const req: Record<string, unknown> = {
    kind: kindOf(matched),
    resource: resourceOf(matched),
    subResource: a.subresource,
    requestKind: kindOf(a.def),
    requestResource: resourceOf(a.def),
    requestSubResource: a.subresource,
    name: a.name,
    namespace: a.def.namespaced ? a.namespace : '',
    operation: a.operation,
    userInfo,
    dryRun: a.dryRun,
    options: a.options ?? null,
  };
  return req;
}

/** object, oldObject and request, as CEL variables (objects in the matched version, null when absent). */
export function celRequestVariables(a: AdmissionAttributes, matched: KindDef): Record<string, unknown> {
  return {
    object: a.object ? asMatchedKind(matched, a.def, a.object) : null,
    oldObject: a.oldObject ? asMatchedKind(matched, a.def, a.oldObject) : null,
    request: celRequest(a, matched),
  };
}

/** The `authorizer` variable: checks as the requesting user, `requestResource` the request's own. */
export function celAuthorizer(authz: Authorizer, a: AdmissionAttributes): CelAuthorizer {
  return new CelAuthorizer(authz, a.user, {
    group: a.def.group,
    resource: a.def.resource,
    subresource: a.subresource,
    namespace: a.def.namespaced ? a.namespace : '',
    name: a.name,
  });
}

export const nameOf = (o: KObject) => str(o.metadata?.name);
