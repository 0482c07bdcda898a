// Authorization: the Node authorizer (what a kubelet may touch) then RBAC, as
// --authorization-mode=Node,RBAC. Both read policy from the watch caches, so a
// decision never waits for the store.
import { forbidden, forbiddenPath } from '@kubit/api';
import type { UserInfo } from './authn.js';
import { arr, obj, str } from './kinds/types.js';
import type { RequestInfo } from './request.js';
import type { KObject } from './storage.js';
import type { WatchCache } from './watchcache.js';

export interface Attributes {
  user: UserInfo;
  verb: string;
  resourceRequest: boolean;
  path: string;
  group: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

export type Decision = { decision: 'allow' | 'deny' | 'noopinion'; reason: string };

export interface Authorizer {
  authorize(a: Attributes): Decision;
}

// These run for every rule of every binding on every request: loops without
// copies, as they were a visible share of a small request's CPU.
function matches(list: unknown, value: string): boolean {
  for (const x of arr(list)) if (x === '*' || x === value) return true;
  return false;
}

function resourceMatches(list: unknown, resource: string, sub: string): boolean {
  const full = sub ? `${resource}/${sub}` : resource;
  for (const x of arr(list)) {
    const r = str(x);
    if (r === '*' || r === full) return true;
    if (sub && r === `*/${sub}`) return true;
  }
  return false;
}

function nonResourceMatches(list: unknown, path: string): boolean {
  for (const x of arr(list)) {
    const p = str(x);
    if (p === '*' || p === path) return true;
    if (p.endsWith('*') && path.startsWith(p.slice(0, -1))) return true;
  }
  return false;
}

export function ruleAllows(rule: unknown, a: Attributes): boolean {
  const r = obj(rule);
  if (!matches(r.verbs, a.verb)) return false;
  if (!a.resourceRequest) return nonResourceMatches(r.nonResourceURLs, a.path);
  if (!matches(r.apiGroups, a.group)) return false;
  if (!resourceMatches(r.resources, a.resource, a.subresource)) return false;
  const names = arr(r.resourceNames);
  return names.length === 0 || names.includes(a.name);
}

function subjectMatches(subject: unknown, user: UserInfo, bindingNs: string): boolean {
  const s = obj(subject);
  switch (s.kind) {
    case 'User':
      return s.name === user.name;
    case 'Group':
      return user.groups.includes(str(s.name));
    case 'ServiceAccount': {
      const ns = str(s.namespace) || bindingNs;
      return user.name === `system:serviceaccount:${ns}:${str(s.name)}`;
    }
    default:
      return false;
  }
}

export class RbacAuthorizer implements Authorizer {
  constructor(
    private readonly caches: {
      roles: WatchCache;
      clusterroles: WatchCache;
      rolebindings: WatchCache;
      clusterrolebindings: WatchCache;
    },
  ) {}

  private rulesOf(ref: unknown, ns: string): unknown[] {
    const r = obj(ref);
    const name = str(r.name);
    const role: KObject | undefined =
      r.kind === 'ClusterRole'
        ? this.caches.clusterroles.objects.get(`/registry/clusterroles/${name}`)
        : this.caches.roles.objects.get(`/registry/roles/${ns}/${name}`);
    return role ? arr(role.rules) : [];
  }

  authorize(a: Attributes): Decision {
    for (const b of this.caches.clusterrolebindings.objects.values()) {
      if (!arr(b.subjects).some((s) => subjectMatches(s, a.user, ''))) continue;
      if (this.rulesOf(b.roleRef, '').some((r) => ruleAllows(r, a))) {
        return {
          decision: 'allow',
          reason: `RBAC: allowed by ClusterRoleBinding "${str(b.metadata?.name)}"`,
        };
      }
    }
    if (a.namespace && a.resourceRequest) {
      const prefix = `/registry/rolebindings/${a.namespace}/`;
      for (const [key, b] of this.caches.rolebindings.objects) {
        if (!key.startsWith(prefix)) continue;
        if (!arr(b.subjects).some((s) => subjectMatches(s, a.user, a.namespace))) continue;
        if (this.rulesOf(b.roleRef, a.namespace).some((r) => ruleAllows(r, a))) {
          return { decision: 'allow', reason: `RBAC: allowed by RoleBinding "${str(b.metadata?.name)}"` };
        }
      }
    }
    return { decision: 'noopinion', reason: '' };
  }

  /** Every rule that applies to a user in a namespace (for SelfSubjectRulesReview). */
  rulesFor(user: UserInfo, namespace: string): unknown[] {
    const out: unknown[] = [];
    for (const b of this.caches.clusterrolebindings.objects.values()) {
      if (arr(b.subjects).some((s) => subjectMatches(s, user, ''))) out.push(...this.rulesOf(b.roleRef, ''));
    }
    const prefix = `/registry/rolebindings/${namespace}/`;
    for (const [key, b] of this.caches.rolebindings.objects) {
      if (key.startsWith(prefix) && arr(b.subjects).some((s) => subjectMatches(s, user, namespace))) {
        out.push(...this.rulesOf(b.roleRef, namespace));
      }
    }
    return out;
  }
}

/** The node a user is the kubelet of, if it is one (system:node:<name> in group system:nodes). */
export function nodeNameOf(user: UserInfo): string | undefined {
  if (!user.groups.includes('system:nodes') || !user.name.startsWith('system:node:')) return undefined;
  const n = user.name.slice('system:node:'.length);
  return n || undefined;
}

const READ = ['get', 'list', 'watch'];

/**
 * The Node authorizer: a kubelet reads what it needs to run its pods and writes
 * only its own Node and Lease, the status of its pods, and events. Which object
 * a write touches is checked again by NodeRestriction admission.
 */
export class NodeAuthorizer implements Authorizer {
  constructor(private readonly pods: WatchCache) {}

  authorize(a: Attributes): Decision {
    const node = nodeNameOf(a.user);
    if (!node) return { decision: 'noopinion', reason: '' };
    const allow = (why: string): Decision => ({ decision: 'allow', reason: `node authorizer: ${why}` });
    if (!a.resourceRequest) {
      return READ.includes(a.verb) || a.verb === 'get'
        ? allow('non-resource read')
        : { decision: 'noopinion', reason: '' };
    }
    const g = a.group;
    const r = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    if (g === '' && r === 'nodes' && (READ.includes(a.verb) || a.verb === 'create')) return allow('nodes');
    if (g === '' && (r === 'nodes' || r === 'nodes/status') && ['update', 'patch'].includes(a.verb)) {
      return a.name === node ? allow('own node') : deny(`can only modify node "${node}"`);
    }
    if (g === '' && r === 'pods' && (READ.includes(a.verb) || a.verb === 'delete')) return allow('pods');
    if (g === '' && r === 'pods/status' && ['update', 'patch', 'get'].includes(a.verb))
      return allow('pod status');
    if (
      (g === '' || g === 'events.k8s.io') &&
      r === 'events' &&
      ['create', 'update', 'patch'].includes(a.verb)
    ) {
      return allow('events');
    }
    if (g === 'coordination.k8s.io' && r === 'leases' && a.namespace === 'kube-node-lease') {
      if (a.verb === 'create') return allow('node lease');
      if (['get', 'update', 'patch', 'delete'].includes(a.verb)) {
        return a.name === node ? allow('own lease') : deny(`can only access lease "${node}"`);
      }
    }
    if (g === '' && ['services', 'endpoints', 'namespaces'].includes(r) && READ.includes(a.verb))
      return allow(r);
    // A projected token for a pod on this node (which pod is checked by the token request itself).
    if (g === '' && r === 'serviceaccounts/token' && a.verb === 'create') {
      return this.referencedByOwnPod(node, 'serviceaccounts', a.namespace, a.name)
        ? allow('a token for a service account of a pod on this node')
        : deny(`no relationship found between node '${node}' and this object`);
    }
    if (
      g === '' &&
      ['configmaps', 'secrets', 'serviceaccounts', 'persistentvolumeclaims'].includes(r) &&
      a.verb === 'get'
    ) {
      return this.referencedByOwnPod(node, r, a.namespace, a.name)
        ? allow(`${r} used by a pod on this node`)
        : deny(`no relationship found between node '${node}' and this object`);
    }
    return { decision: 'noopinion', reason: '' };
  }

  /** Whether a pod bound to `node` references this configmap/secret/serviceaccount. */
  private referencedByOwnPod(node: string, resource: string, ns: string, name: string): boolean {
    const prefix = `/registry/pods/${ns}/`;
    for (const [key, pod] of this.pods.objects) {
      if (!key.startsWith(prefix)) continue;
      const spec = obj(pod.spec);
      if (spec.nodeName !== node) continue;
      if (resource === 'serviceaccounts' && spec.serviceAccountName === name) return true;
      // An ephemeral volume's claim is named after its pod and volume.
      if (resource === 'persistentvolumeclaims' && ephemeralClaimNames(pod).includes(name)) return true;
      if (JSON.stringify(spec).includes(JSON.stringify(name)) && podReferences(spec, resource, name))
        return true;
    }
    return false;
  }
}

function ephemeralClaimNames(pod: KObject): string[] {
  const podName = str(pod.metadata?.name);
  return arr(obj(pod.spec).volumes)
    .map(obj)
    .filter((v) => v.ephemeral !== undefined)
    .map((v) => `${podName}-${str(v.name)}`);
}

function podReferences(spec: Record<string, unknown>, resource: string, name: string): boolean {
  const want = resource === 'secrets' ? ['secretName', 'name'] : ['name'];
  const keyName =
    resource === 'secrets'
      ? ['secret', 'secretRef', 'secretKeyRef']
      : resource === 'configmaps'
        ? ['configMap', 'configMapRef', 'configMapKeyRef']
        : ['persistentVolumeClaim'];
  let found = false;
  const visit = (v: unknown, parentKey: string) => {
    if (found) return;
    if (Array.isArray(v)) {
      for (const x of v) visit(x, parentKey);
    } else if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (keyName.includes(parentKey)) {
        for (const w of want) if (o[w] === name || o.claimName === name) found = true;
      }
      for (const [k, x] of Object.entries(o)) visit(x, k);
    }
  };
  visit(spec, '');
  if (resource === 'secrets') {
    for (const s of arr(spec.imagePullSecrets)) if (obj(s).name === name) found = true;
  }
  return found;
}

function deny(reason: string): Decision {
  return { decision: 'deny', reason };
}

/** Runs authorizers in order; the first allow or deny wins. */
export class UnionAuthorizer implements Authorizer {
  constructor(private readonly chain: Authorizer[]) {}
  authorize(a: Attributes): Decision {
    const reasons: string[] = [];
    for (const z of this.chain) {
      const d = z.authorize(a);
      if (d.decision !== 'noopinion') return d;
      if (d.reason) reasons.push(d.reason);
    }
    return { decision: 'noopinion', reason: reasons.join('; ') };
  }
}

/**
 * Authorizes a parsed request: returns when it is allowed, else throws the 403 that
 * names the user, verb and resource (or path) as Kubernetes words it.
 */
export function authorizeRequest(authz: Authorizer, user: UserInfo, info: RequestInfo): void {
  const a: Attributes =
    info.kind === 'resource'
      ? {
          user,
          verb: info.verb,
          resourceRequest: true,
          path: info.path,
          group: info.group,
          resource: info.resource,
          subresource: info.subresource,
          namespace: info.namespace,
          name: info.name,
        }
      : {
          user,
          verb: info.verb,
          resourceRequest: false,
          path: info.path,
          group: '',
          resource: '',
          subresource: '',
          namespace: '',
          name: '',
        };
  const d = authz.authorize(a);
  if (d.decision === 'allow') return;
  if (info.kind === 'nonresource') throw forbiddenPath(user.name, info.verb, info.path);
  const res = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
  throw forbidden(
    user.name,
    info.verb,
    res,
    info.group,
    info.name || undefined,
    info.namespace || undefined,
    d.reason || undefined,
  );
}
