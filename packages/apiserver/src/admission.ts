// Admission rules beyond defaulting and validation: NamespaceLifecycle and
// NodeRestriction.
import { forbiddenWithMessage, notFound } from '@kubit/api';
import type { UserInfo } from './authn.js';
import { nodeNameOf } from './authz.js';
import type { KindDef } from './kinds/types.js';
import { obj, str } from './kinds/types.js';
import type { KObject, Store } from './storage.js';
import type { WatchCache } from './watchcache.js';

/** Namespaces that always exist and may not be deleted. */
export const IMMORTAL_NAMESPACES = ['default', 'kube-system', 'kube-public'];
export const SYSTEM_NAMESPACES = [...IMMORTAL_NAMESPACES, 'kube-node-lease'];

/** NamespaceLifecycle: nothing is created in a namespace that is missing or being deleted. */
export async function checkNamespaceForCreate(
  def: KindDef,
  ns: string,
  namespaces: WatchCache,
  store: Store,
): Promise<void> {
  if (!def.namespaced) return;
  const key = `/registry/namespaces/${ns}`;
  // The cache may lag a namespace created a moment ago: ask the store before saying no.
  const n = namespaces.objects.get(key) ?? (await store.get(key))?.obj;
  if (!n) throw notFound({ group: '', resource: 'namespaces' }, ns);
  if (n.metadata?.deletionTimestamp || obj(n.status).phase === 'Terminating') {
    // Events about the namespace's own cleanup are still allowed, as in Kubernetes.
    if (def.resource === 'events') return;
    throw forbiddenWithMessage(
      { group: def.group, resource: def.resource },
      '',
      `unable to create new content in namespace ${ns} because it is being terminated`,
    );
  }
}

/**
 * NodeRestriction: a kubelet may only write its own Node and Lease, and only
 * the pods bound to it.
 */
export function nodeRestriction(
  user: UserInfo,
  def: KindDef,
  subresource: string,
  verb: string,
  name: string,
  current: KObject | undefined,
  incoming: KObject | undefined,
): void {
  const node = nodeNameOf(user);
  if (!node) return;
  const deny = (why: string) =>
    forbiddenWithMessage({ group: def.group, resource: def.resource }, name, `node "${node}" ${why}`);
  if (def.group === '' && def.resource === 'nodes') {
    const target = str(incoming?.metadata?.name) || name;
    if (target !== node) throw deny(`is not allowed to modify node "${target}"`);
    return;
  }
  if (def.group === '' && def.resource === 'pods') {
    if (verb === 'create') throw deny('can only create mirror pods, which Kubit does not support');
    if ((subresource === 'status' || verb === 'delete') && current) {
      if (str(obj(current.spec).nodeName) !== node) {
        throw deny(
          `can only ${verb === 'delete' ? 'delete' : 'update'} pods with spec.nodeName set to itself`,
        );
      }
    }
    return;
  }
  if (def.group === 'coordination.k8s.io' && def.resource === 'leases') {
    const target = str(incoming?.metadata?.name) || name;
    if (target !== node) throw deny(`is not allowed to modify lease "${target}"`);
  }
}
