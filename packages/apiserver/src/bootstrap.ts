// What exists from the first start: the system namespaces, the bootstrap RBAC
// policy (cluster-admin for system:masters, roles for the scheduler, the controller
// manager and nodes, discovery for everyone authenticated), the two storage classes and
// the built-in priority classes (system-node-critical, system-cluster-critical).
// Roles and bindings marked autoupdate get this version's rules on every start.
// Other objects that exist are left alone, so an operator's edits survive restarts.

import { randomUUID } from 'node:crypto';
import {
  DEFAULT_STORAGE_CLASS_ANNOTATION,
  DISK_PROVISIONER,
  DISK_STORAGE_CLASS,
  LOCAL_PATH_PROVISIONER,
  LOCAL_PATH_STORAGE_CLASS,
} from '@kubit/api';
import type { Logger } from '@kubit/daemon';
import { SYSTEM_NAMESPACES } from './admission.js';
import { systemPriorityClassObjects } from './kinds/scheduling.js';
import { nowRfc3339 } from './objects.js';
import type { KObject, Store } from './storage.js';

const RBAC = 'rbac.authorization.k8s.io/v1';
const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'update', 'patch', 'delete'];

function clusterRole(name: string, rules: unknown[]): KObject {
  return {
    apiVersion: RBAC,
    kind: 'ClusterRole',
    metadata: {
      name,
      labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    rules,
  };
}

function binding(name: string, role: string, subjects: { kind: string; name: string }[]): KObject {
  return {
    apiVersion: RBAC,
    kind: 'ClusterRoleBinding',
    metadata: {
      name,
      labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: subjects.map((s) => ({ ...s, apiGroup: 'rbac.authorization.k8s.io' })),
  };
}

const eventsRule = {
  apiGroups: ['', 'events.k8s.io'],
  resources: ['events'],
  verbs: ['create', 'patch', 'update'],
};

export const bootstrapClusterRoles: KObject[] = [
  clusterRole('cluster-admin', [
    { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
    { nonResourceURLs: ['*'], verbs: ['*'] },
  ]),
  clusterRole('system:discovery', [
    {
      nonResourceURLs: [
        '/api',
        '/api/*',
        '/apis',
        '/apis/*',
        '/openapi',
        '/openapi/*',
        '/version',
        '/version/',
        '/healthz',
        '/livez',
        '/readyz',
      ],
      verbs: ['get'],
    },
  ]),
  clusterRole('system:public-info-viewer', [
    { nonResourceURLs: ['/healthz', '/livez', '/readyz', '/version', '/version/'], verbs: ['get'] },
  ]),
  clusterRole('system:basic-user', [
    { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
    {
      apiGroups: ['authorization.k8s.io'],
      resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'],
      verbs: ['create'],
    },
  ]),
  clusterRole('system:kube-scheduler', [
    eventsRule,
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: ['kube-scheduler'],
      verbs: ['get', 'update', 'patch'],
    },
    { apiGroups: [''], resources: ['nodes', 'namespaces'], verbs: READ },
    { apiGroups: [''], resources: ['pods'], verbs: [...READ, 'delete'] },
    { apiGroups: [''], resources: ['bindings', 'pods/binding'], verbs: ['create'] },
    // Preemption weighs victims against their PodDisruptionBudgets.
    { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: READ },
    { apiGroups: [''], resources: ['pods/status'], verbs: ['patch', 'update'] },
    // Volume binding: the selected node is written on a WaitForFirstConsumer claim, and a
    // static volume chosen for one is pre-bound to it (claimRef).
    {
      apiGroups: [''],
      resources: ['persistentvolumeclaims', 'persistentvolumes'],
      verbs: ['patch', 'update'],
    },
    {
      apiGroups: ['storage.k8s.io'],
      resources: ['storageclasses', 'csinodes', 'csidrivers', 'csistoragecapacities'],
      verbs: READ,
    },
    {
      apiGroups: ['', 'apps'],
      resources: [
        'replicationcontrollers',
        'services',
        'replicasets',
        'statefulsets',
        'persistentvolumeclaims',
        'persistentvolumes',
        'configmaps',
      ],
      verbs: READ,
    },
  ]),
  // Kubernetes gives each controller its own role; Kubit's controller manager runs
  // them all under one identity, so their rules are folded into this one role.
  clusterRole('system:kube-controller-manager', [
    // Events from every controller (core and events.k8s.io).
    eventsRule,
    // Shared informers list and watch everything; the garbage collector reads any owner.
    { apiGroups: ['*'], resources: ['*'], verbs: READ },
    // Leader election: list/watch here (node leases too); get/create/update of its own
    // Lease is granted in kube-system only (system::leader-locking-kube-controller-manager).
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['list', 'watch'] },
    // Replica set and deployment controllers, node lifecycle (eviction), pod GC.
    { apiGroups: [''], resources: ['pods'], verbs: [...READ, 'create', 'delete', 'patch', 'update'] },
    { apiGroups: [''], resources: ['pods/status'], verbs: ['update', 'patch'] },
    // Resource quota controller; the namespace controller deletes quotas and limit ranges
    // with their namespace.
    { apiGroups: [''], resources: ['resourcequotas/status'], verbs: ['update', 'patch'] },
    {
      apiGroups: [''],
      resources: ['resourcequotas', 'limitranges'],
      verbs: [...READ, 'delete', 'deletecollection'],
    },
    // Node lifecycle (taints, conditions) and node IPAM (podCIDR).
    { apiGroups: [''], resources: ['nodes'], verbs: [...READ, 'update', 'patch'] },
    { apiGroups: [''], resources: ['nodes/status'], verbs: ['update', 'patch'] },
    // Replication controller (core/v1 ReplicationControllers).
    {
      apiGroups: [''],
      resources: ['replicationcontrollers', 'replicationcontrollers/status', 'replicationcontrollers/scale'],
      verbs: [...READ, ...WRITE, 'deletecollection'],
    },
    {
      apiGroups: ['apps'],
      resources: [
        'replicasets',
        'replicasets/status',
        'replicasets/scale',
        'deployments',
        'deployments/status',
        'deployments/scale',
        'daemonsets',
        'daemonsets/status',
        'statefulsets',
        'statefulsets/status',
        'statefulsets/scale',
        'controllerrevisions',
      ],
      verbs: [...READ, ...WRITE, 'deletecollection'],
    },
    // Job, CronJob and TTL-after-finished controllers (finalizers: the Job's pods'
    // tracking finalizer is removed through them as in Kubernetes' job controller role).
    {
      apiGroups: ['batch'],
      resources: ['jobs', 'jobs/status', 'jobs/finalizers', 'cronjobs', 'cronjobs/status'],
      verbs: [...READ, ...WRITE, 'deletecollection'],
    },
    // Disruption controller: each PodDisruptionBudget's status; the namespace controller
    // deletes them with their namespace.
    {
      apiGroups: ['policy'],
      resources: ['poddisruptionbudgets'],
      verbs: [...READ, 'delete', 'deletecollection'],
    },
    { apiGroups: ['policy'], resources: ['poddisruptionbudgets/status'], verbs: ['update', 'patch'] },
    // HorizontalPodAutoscaler controller: its objects' status, the scale subresource of
    // whatever they target (a custom resource's too) and the pods' resource metrics.
    {
      apiGroups: ['autoscaling'],
      resources: ['horizontalpodautoscalers'],
      verbs: [...READ, 'delete', 'deletecollection'],
    },
    {
      apiGroups: ['autoscaling'],
      resources: ['horizontalpodautoscalers/status'],
      verbs: ['update', 'patch'],
    },
    { apiGroups: ['*'], resources: ['*/scale'], verbs: ['get', 'update'] },
    { apiGroups: ['metrics.k8s.io'], resources: ['pods'], verbs: ['get', 'list'] },
    // Namespace controller: marks, empties and finalizes namespaces.
    { apiGroups: [''], resources: ['namespaces'], verbs: [...READ, 'delete'] },
    { apiGroups: [''], resources: ['namespaces/finalize', 'namespaces/status'], verbs: ['update'] },
    // What the namespace controller empties and the garbage collector updates (owner
    // references, finalizers) or deletes.
    {
      apiGroups: [''],
      resources: ['services', 'endpoints', 'configmaps', 'secrets', 'serviceaccounts'],
      verbs: [...READ, ...WRITE, 'deletecollection'],
    },
    {
      apiGroups: ['', 'events.k8s.io'],
      resources: ['events'],
      verbs: ['delete', 'deletecollection'],
    },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['delete', 'deletecollection'],
    },
    { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
    // Endpoints and EndpointSlice controllers; the load-balancer address allocator writes
    // services/status.
    {
      apiGroups: ['discovery.k8s.io'],
      resources: ['endpointslices'],
      verbs: [...READ, ...WRITE, 'deletecollection'],
    },
    { apiGroups: [''], resources: ['services/status'], verbs: ['update', 'patch'] },
    // Persistent-volume binder and expander, pvc/pv protection, ephemeral volumes.
    {
      apiGroups: [''],
      resources: [
        'persistentvolumes',
        'persistentvolumes/status',
        'persistentvolumeclaims',
        'persistentvolumeclaims/status',
      ],
      verbs: [...READ, ...WRITE, 'deletecollection'],
    },
    {
      apiGroups: ['storage.k8s.io'],
      resources: ['storageclasses', 'csistoragecapacities'],
      verbs: [...READ, ...WRITE, 'deletecollection'],
    },
  ]),
  // Delegated authentication and authorization: who a token is, what a user may do.
  clusterRole('system:auth-delegator', [
    { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
    { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
  ]),
  // What every node's kubit-proxy reads, as Kubernetes' role for kube-proxy.
  clusterRole('system:node-proxier', [
    eventsRule,
    { apiGroups: [''], resources: ['services', 'endpoints'], verbs: ['list', 'watch'] },
    { apiGroups: [''], resources: ['nodes'], verbs: READ },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
  ]),
  // kubit-dns reads the cluster's names everywhere; its writes (the kube-dns Service and
  // each instance's own EndpointSlice) are granted in kube-system only (bootstrapRoles).
  clusterRole('system:kubit-dns', [
    { apiGroups: [''], resources: ['services', 'endpoints', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
    { apiGroups: [''], resources: ['nodes'], verbs: ['get'] },
    { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
  ]),
  // kubit-net, on every node: it reads the Nodes (their pod subnets and tunnel endpoints), the
  // Pods, Namespaces and NetworkPolicies it enforces, and writes its own node's tunnel endpoint
  // annotations (as flannel's ClusterRole grants patch on nodes).
  clusterRole('system:kubit-net', [
    eventsRule,
    { apiGroups: [''], resources: ['nodes'], verbs: [...READ, 'patch'] },
    { apiGroups: [''], resources: ['pods', 'namespaces'], verbs: ['list', 'watch'] },
    { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['list', 'watch'] },
  ]),
  // Kubelets are authorized by the Node authorizer; this role documents what a node does
  // and is left unbound, as in Kubernetes.
  clusterRole('system:node', [
    eventsRule,
    { apiGroups: [''], resources: ['nodes'], verbs: [...READ, 'create', 'update', 'patch'] },
    { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch', 'update'] },
    { apiGroups: [''], resources: ['pods'], verbs: [...READ, 'delete'] },
    { apiGroups: [''], resources: ['pods/status'], verbs: ['patch', 'update'] },
    { apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['get', 'list', 'watch'] },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['create', 'delete', 'get', 'patch', 'update'],
    },
  ]),
  // Full use of the kubelets' API through the apiserver (nodes/<node>/proxy/stats/summary, …), as
  // metrics-server's role of that name: reading metrics.k8s.io (kubectl top). Labelled to
  // join the admin, edit and view roles where those aggregate; bind it to grant `top`.
  {
    ...clusterRole('system:aggregated-metrics-reader', [
      { apiGroups: ['metrics.k8s.io'], resources: ['pods', 'nodes'], verbs: ['get', 'list', 'watch'] },
    ]),
    metadata: {
      name: 'system:aggregated-metrics-reader',
      labels: {
        'kubernetes.io/bootstrapping': 'rbac-defaults',
        'rbac.authorization.k8s.io/aggregate-to-admin': 'true',
        'rbac.authorization.k8s.io/aggregate-to-edit': 'true',
        'rbac.authorization.k8s.io/aggregate-to-view': 'true',
      },
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
  },
  // Kubernetes' role of that name; unbound: cluster admins have it, others are granted it.
  clusterRole('system:kubelet-api-admin', [
    { apiGroups: [''], resources: ['nodes'], verbs: [...READ, 'proxy'] },
    {
      apiGroups: [''],
      resources: ['nodes/proxy', 'nodes/metrics', 'nodes/spec', 'nodes/stats', 'nodes/log'],
      verbs: ['*'],
    },
  ]),
  // What every kubelet does as the provisioner of its own node's volumes (local-path,
  // kubit-disk): the Node authorizer decides nothing here, so RBAC answers.
  clusterRole('system:kubit-node-volume-provisioner', [
    { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['list', 'watch', 'patch', 'update'] },
    // A kubit-disk grown on its node: the claim's new capacity and the end of FileSystemResizePending.
    { apiGroups: [''], resources: ['persistentvolumeclaims/status'], verbs: ['patch', 'update'] },
    {
      apiGroups: [''],
      resources: ['persistentvolumes'],
      verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'],
    },
    { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: READ },
  ]),
];

export const bootstrapBindings: KObject[] = [
  binding('cluster-admin', 'cluster-admin', [{ kind: 'Group', name: 'system:masters' }]),
  binding('system:discovery', 'system:discovery', [{ kind: 'Group', name: 'system:authenticated' }]),
  binding('system:public-info-viewer', 'system:public-info-viewer', [
    { kind: 'Group', name: 'system:authenticated' },
  ]),
  binding('system:basic-user', 'system:basic-user', [{ kind: 'Group', name: 'system:authenticated' }]),
  binding('system:kube-scheduler', 'system:kube-scheduler', [
    { kind: 'User', name: 'system:kube-scheduler' },
  ]),
  binding('system:kube-controller-manager', 'system:kube-controller-manager', [
    { kind: 'User', name: 'system:kube-controller-manager' },
  ]),
  binding('system:node-proxier', 'system:node-proxier', [{ kind: 'User', name: 'system:kube-proxy' }]),
  binding('system:kubit-dns', 'system:kubit-dns', [{ kind: 'User', name: 'system:kubit-dns' }]),
  binding('system:kubit-net', 'system:kubit-net', [{ kind: 'User', name: 'system:kubit-net' }]),
  binding('system:kubit-node-volume-provisioner', 'system:kubit-node-volume-provisioner', [
    { kind: 'Group', name: 'system:nodes' },
  ]),
];

/** Namespaced bootstrap policy: the controller manager's own leader Lease in kube-system. */
export const bootstrapRoles: KObject[] = [
  {
    apiVersion: RBAC,
    kind: 'Role',
    metadata: {
      name: 'system::leader-locking-kube-controller-manager',
      namespace: 'kube-system',
      labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    rules: [
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'create', 'update', 'patch'],
      },
    ],
  },
  // Each node publishes its free space per node-local class in kube-system.
  kubeSystemRole('system:kubit-node-storage-capacity', [
    {
      apiGroups: ['storage.k8s.io'],
      resources: ['csistoragecapacities'],
      verbs: ['get', 'list', 'watch', 'create', 'patch', 'update'],
    },
  ]),
  kubeSystemRole('system:kubit-dns', [
    { apiGroups: [''], resources: ['services'], verbs: ['get', 'create', 'update', 'patch'] },
    {
      apiGroups: ['discovery.k8s.io'],
      resources: ['endpointslices'],
      verbs: ['get', 'create', 'update', 'patch', 'delete'],
    },
  ]),
];

export const bootstrapRoleBindings: KObject[] = [
  {
    apiVersion: RBAC,
    kind: 'RoleBinding',
    metadata: {
      name: 'system::leader-locking-kube-controller-manager',
      namespace: 'kube-system',
      labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'system::leader-locking-kube-controller-manager',
    },
    subjects: [
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'system:kube-controller-manager' },
    ],
  },
  kubeSystemRoleBinding('system:kubit-dns', 'system:kubit-dns', 'system:kubit-dns'),
  {
    ...kubeSystemRoleBinding(
      'system:kubit-node-storage-capacity',
      'system:kubit-node-storage-capacity',
      'system:nodes',
    ),
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:nodes' }],
  },
];

/** The two classes every Kubit cluster has; an operator's edits (or deletion of the default mark) survive restarts. */
export const bootstrapStorageClasses: KObject[] = [
  {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: LOCAL_PATH_STORAGE_CLASS, annotations: { [DEFAULT_STORAGE_CLASS_ANNOTATION]: 'true' } },
    provisioner: LOCAL_PATH_PROVISIONER,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'WaitForFirstConsumer',
  },
  {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: DISK_STORAGE_CLASS },
    provisioner: DISK_PROVISIONER,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'WaitForFirstConsumer',
    allowVolumeExpansion: true,
  },
];

function kubeSystemRole(name: string, rules: unknown[]): KObject {
  return {
    apiVersion: RBAC,
    kind: 'Role',
    metadata: {
      name,
      namespace: 'kube-system',
      labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    rules,
  };
}

function kubeSystemRoleBinding(name: string, role: string, user: string): KObject {
  return {
    apiVersion: RBAC,
    kind: 'RoleBinding',
    metadata: {
      name,
      namespace: 'kube-system',
      labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
  };
}

function withMeta(o: KObject): KObject {
  return { ...o, metadata: { ...o.metadata, uid: randomUUID(), creationTimestamp: nowRfc3339() } };
}

export async function bootstrap(store: Store, log: Logger): Promise<void> {
  const created: string[] = [];
  const updated: string[] = [];
  const ensure = async (key: string, o: KObject, reconcile?: 'rules' | 'subjects') => {
    const r = await store.create(key, withMeta(o));
    if (r.ok) {
      created.push(key);
      return;
    }
    // As Kubernetes reconciles its bootstrap policy: a role marked autoupdate gets this
    // version's rules (a binding its subjects), so an upgrade grants what new code needs.
    if (!reconcile) return;
    const cur = await store.get(key);
    const annotations = (cur?.obj.metadata?.annotations ?? {}) as Record<string, unknown>;
    if (!cur || annotations['rbac.authorization.kubernetes.io/autoupdate'] !== 'true') return;
    if (JSON.stringify(cur.obj[reconcile]) === JSON.stringify(o[reconcile])) return;
    const w = await store.update(key, { ...cur.obj, [reconcile]: o[reconcile] }, cur.rev);
    if (w.ok) updated.push(key);
  };
  for (const ns of SYSTEM_NAMESPACES) {
    await ensure(`/registry/namespaces/${ns}`, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: ns, labels: { 'kubernetes.io/metadata.name': ns } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    });
  }
  for (const r of bootstrapClusterRoles)
    await ensure(`/registry/clusterroles/${String(r.metadata?.name)}`, r, 'rules');
  for (const b of bootstrapBindings)
    await ensure(`/registry/clusterrolebindings/${String(b.metadata?.name)}`, b, 'subjects');
  const nsKey = (o: KObject) => `${String(o.metadata?.namespace)}/${String(o.metadata?.name)}`;
  for (const r of bootstrapRoles) await ensure(`/registry/roles/${nsKey(r)}`, r, 'rules');
  for (const b of bootstrapRoleBindings) await ensure(`/registry/rolebindings/${nsKey(b)}`, b, 'subjects');
  for (const sc of bootstrapStorageClasses)
    await ensure(`/registry/storageclasses/${String(sc.metadata?.name)}`, sc);
  for (const pc of systemPriorityClassObjects())
    await ensure(`/registry/priorityclasses/${String(pc.metadata?.name)}`, pc);
  if (created.length > 0) log.info({ created }, 'bootstrap objects created');
  if (updated.length > 0) log.info({ updated }, 'bootstrap policy reconciled');
}
