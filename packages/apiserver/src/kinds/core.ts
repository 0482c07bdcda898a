// The other built-in kinds: namespaces, nodes, configmaps, secrets,
// serviceaccounts, events (core and events.k8s.io), leases and RBAC.
import { forbiddenWithMessage } from '@kubit/api';
import { IMMORTAL_NAMESPACES } from '../admission.js';
import { normalizeTime } from '../model/names.js';
import { schemas } from '../model/schema.js';
import { nowRfc3339 } from '../objects.js';
import type { KObject } from '../storage.js';
import { finalizeSubresource } from '../subresources/finalize.js';
import { nodeProxySubresource } from '../subresources/proxy.js';
import { statusSubresource } from '../subresources/status.js';
import { age, humanDuration } from '../table.js';
import { arr, type KindDef, meta, obj, str } from './types.js';

const AGE = { name: 'Age', type: 'string' as const, description: 'CreationTimestamp', priority: 0 };

export const namespaces: KindDef = {
  group: '',
  version: 'v1',
  kind: 'Namespace',
  resource: 'namespaces',
  singular: 'namespace',
  namespaced: false,
  shortNames: ['ns'],
  schema: schemas.namespace,
  nameRule: 'label',
  subresources: [statusSubresource, finalizeSubresource],
  example: {},
  deletion: {
    admit(name) {
      if (IMMORTAL_NAMESPACES.includes(name)) {
        throw forbiddenWithMessage(
          { group: '', resource: 'namespaces' },
          name,
          'this namespace may not be deleted',
        );
      }
    },
    // A namespace is not removed by its delete: it turns Terminating, the namespace
    // controller empties it and then clears spec.finalizers through /finalize.
    mark(ns, now) {
      if (meta(ns).deletionTimestamp) return 'unchanged';
      const marked = structuredClone(ns);
      const m = meta(marked);
      m.deletionTimestamp = nowRfc3339(now);
      m.deletionGracePeriodSeconds = 0;
      marked.status = { ...obj(marked.status), phase: 'Terminating' };
      return marked;
    },
    stillWaiting: (ns) => arr(obj(ns.spec).finalizers).length > 0,
    // NamespaceLifecycle reads namespaces from this apiserver's cache: once the client
    // hears "Terminating", a create in the namespace through this apiserver is refused.
    waitForCache: true,
  },
  prepareForCreate(ns) {
    ns.status = { phase: 'Active' };
    ns.spec = { finalizers: ['kubernetes'] };
  },
  prepareForUpdate(ns, old) {
    ns.status = old.status;
    ns.spec = old.spec;
  },
  prepareForStatusUpdate(ns, old) {
    ns.spec = old.spec;
  },
  defaults(ns) {
    const m = meta(ns);
    m.labels = { ...obj(m.labels), 'kubernetes.io/metadata.name': str(m.name) };
  },
  fields: (ns) => ({ 'status.phase': str(obj(ns.status).phase) }),
  table: {
    columns: [
      { name: 'Status', type: 'string', description: 'The status of the namespace', priority: 0 },
      AGE,
    ],
    cells: (ns, now) => [str(obj(ns.status).phase), age(ns, now)],
  },
};

function nodeStatusText(node: KObject): string {
  const conds = arr(obj(node.status).conditions).map(obj);
  const ready = conds.find((c) => c.type === 'Ready');
  const parts = [!ready ? 'Unknown' : ready.status === 'True' ? 'Ready' : 'NotReady'];
  if (obj(node.spec).unschedulable === true) parts.push('SchedulingDisabled');
  return parts.join(',');
}

function nodeRoles(node: KObject): string {
  const roles: string[] = [];
  for (const [k, v] of Object.entries(obj(meta(node).labels))) {
    if (k.startsWith('node-role.kubernetes.io/')) roles.push(k.slice('node-role.kubernetes.io/'.length));
    else if (k === 'kubernetes.io/role') roles.push(str(v));
  }
  return (
    roles
      .filter((r) => r)
      .sort()
      .join(',') || '<none>'
  );
}

function nodeAddress(node: KObject, type: string): string {
  const a = arr(obj(node.status).addresses)
    .map(obj)
    .find((x) => x.type === type);
  return a ? str(a.address) : '<none>';
}

export const nodes: KindDef = {
  group: '',
  version: 'v1',
  kind: 'Node',
  resource: 'nodes',
  singular: 'node',
  namespaced: false,
  shortNames: ['no'],
  schema: schemas.node,
  nameRule: 'subdomain',
  subresources: [statusSubresource, nodeProxySubresource],
  example: {},
  prepareForUpdate(node, old) {
    node.status = old.status;
  },
  prepareForStatusUpdate(node, old) {
    node.spec = old.spec;
  },
  fields: (node) => ({ 'spec.unschedulable': String(obj(node.spec).unschedulable === true) }),
  table: {
    columns: [
      { name: 'Status', type: 'string', description: 'The status of the node', priority: 0 },
      { name: 'Roles', type: 'string', description: 'The roles of the node', priority: 0 },
      AGE,
      { name: 'Version', type: 'string', description: 'Kubelet Version reported by the node.', priority: 0 },
      { name: 'Internal-IP', type: 'string', description: 'List of internal IPs in the node.', priority: 1 },
      { name: 'External-IP', type: 'string', description: 'List of external IPs in the node.', priority: 1 },
      { name: 'OS-Image', type: 'string', description: 'OS Image reported by the node.', priority: 1 },
      {
        name: 'Kernel-Version',
        type: 'string',
        description: 'Kernel Version reported by the node.',
        priority: 1,
      },
      {
        name: 'Container-Runtime',
        type: 'string',
        description: 'Container Runtime Version reported by the node.',
        priority: 1,
      },
    ],
    cells(node, now) {
      const info = obj(obj(node.status).nodeInfo);
      return [
        nodeStatusText(node),
        nodeRoles(node),
        age(node, now),
        str(info.kubeletVersion),
        nodeAddress(node, 'InternalIP'),
        nodeAddress(node, 'ExternalIP'),
        str(info.osImage) || '<unknown>',
        str(info.kernelVersion) || '<unknown>',
        str(info.containerRuntimeVersion) || '<unknown>',
      ];
    },
  },
};

export const configmaps: KindDef = {
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  resource: 'configmaps',
  singular: 'configmap',
  namespaced: true,
  shortNames: ['cm'],
  schema: schemas.configMap,
  nameRule: 'subdomain',
  subresources: [],
  example: { data: { greeting: 'hello' } },
  table: {
    columns: [{ name: 'Data', type: 'integer', description: 'Number of data entries', priority: 0 }, AGE],
    cells: (cm, now) => [
      Object.keys(obj(cm.data)).length + Object.keys(obj(cm.binaryData)).length,
      age(cm, now),
    ],
  },
};

export const secrets: KindDef = {
  group: '',
  version: 'v1',
  kind: 'Secret',
  resource: 'secrets',
  singular: 'secret',
  namespaced: true,
  schema: schemas.secret,
  nameRule: 'subdomain',
  subresources: [],
  example: { data: { password: 'aHVudGVyMg==' } },
  defaults(s) {
    s.type ??= 'Opaque';
    // stringData is write-only: it lands base64-encoded in data.
    if (s.stringData) {
      const data = { ...obj(s.data) };
      for (const [k, v] of Object.entries(obj(s.stringData)))
        data[k] = Buffer.from(str(v)).toString('base64');
      s.data = data;
      delete s.stringData;
    }
  },
  fields: (s) => ({ type: str(s.type) }),
  table: {
    columns: [
      { name: 'Type', type: 'string', description: 'The type of the secret', priority: 0 },
      { name: 'Data', type: 'integer', description: 'Number of data entries', priority: 0 },
      AGE,
    ],
    cells: (s, now) => [str(s.type), Object.keys(obj(s.data)).length, age(s, now)],
  },
};

export const serviceaccounts: KindDef = {
  group: '',
  version: 'v1',
  kind: 'ServiceAccount',
  resource: 'serviceaccounts',
  singular: 'serviceaccount',
  namespaced: true,
  shortNames: ['sa'],
  schema: schemas.serviceAccount,
  nameRule: 'subdomain',
  subresources: [],
  example: {},
  table: {
    columns: [{ name: 'Secrets', type: 'string', description: 'Number of secrets', priority: 0 }, AGE],
    cells: (sa, now) => [String(arr(sa.secrets).length), age(sa, now)],
  },
};

function eventObjectText(ev: KObject): string {
  const io = obj(ev.involvedObject);
  return `${str(io.kind).toLowerCase()}/${str(io.name)}`;
}

function lastSeen(ev: KObject, now: number): string {
  const ts = str(ev.lastTimestamp) || str(ev.eventTime) || str(meta(ev).creationTimestamp);
  return ts ? humanDuration(now - Date.parse(ts)) : '<unknown>';
}

export const events: KindDef = {
  group: '',
  version: 'v1',
  kind: 'Event',
  resource: 'events',
  singular: 'event',
  namespaced: true,
  shortNames: ['ev'],
  schema: schemas.event,
  nameRule: 'subdomain',
  subresources: [],
  example: {
    involvedObject: { kind: 'Pod', name: 'example', apiVersion: 'v1' },
    reason: 'Example',
    message: 'an example event',
    type: 'Normal',
    source: { component: 'example' },
  },
  defaults(ev) {
    setTime(ev, 'eventTime', true);
    setTime(ev, 'firstTimestamp', false);
    setTime(ev, 'lastTimestamp', false);
    if (ev.series) setTime(obj(ev.series), 'lastObservedTime', true);
  },
  fields(ev) {
    const io = obj(ev.involvedObject);
    const src = obj(ev.source);
    return {
      'involvedObject.kind': str(io.kind),
      'involvedObject.namespace': str(io.namespace),
      'involvedObject.name': str(io.name),
      'involvedObject.uid': str(io.uid),
      'involvedObject.apiVersion': str(io.apiVersion),
      'involvedObject.resourceVersion': str(io.resourceVersion),
      'involvedObject.fieldPath': str(io.fieldPath),
      reason: str(ev.reason),
      reportingComponent: str(ev.reportingComponent),
      source: str(src.component),
      type: str(ev.type),
    };
  },
  table: {
    columns: [
      { name: 'Last Seen', type: 'string', description: 'When the event was last seen', priority: 0 },
      { name: 'Type', type: 'string', description: 'Type of this event', priority: 0 },
      { name: 'Reason', type: 'string', description: 'Why the action was taken', priority: 0 },
      { name: 'Object', type: 'string', description: 'The object this event is about', priority: 0 },
      { name: 'Message', type: 'string', description: 'A human-readable description', priority: 0 },
      { name: 'Source', type: 'string', description: 'The component reporting this event', priority: 1 },
      { name: 'Count', type: 'integer', description: 'How many times this event happened', priority: 1 },
    ],
    nameLast: true,
    cells: (ev, now) => [
      lastSeen(ev, now),
      str(ev.type),
      str(ev.reason),
      eventObjectText(ev),
      str(ev.message),
      str(obj(ev.source).component) || str(ev.reportingComponent),
      Number(ev.count ?? 1),
    ],
  },
};

/** events.k8s.io/v1 Events are stored as core v1 Events and converted on the way in and out. */
export const eventsV1: KindDef = {
  ...events,
  group: 'events.k8s.io',
  version: 'v1',
  shortNames: ['ev'],
  schema: schemas.eventV1,
  storageResource: 'events',
  example: {
    eventTime: '2026-01-01T00:00:00.000000Z',
    reportingController: 'example.com/controller',
    reportingInstance: 'example-1',
    action: 'Example',
    reason: 'Example',
    type: 'Normal',
    regarding: { kind: 'Pod', name: 'example', apiVersion: 'v1' },
  },
  defaults(ev) {
    setTime(ev, 'eventTime', true);
    setTime(ev, 'deprecatedFirstTimestamp', false);
    setTime(ev, 'deprecatedLastTimestamp', false);
    if (ev.series) setTime(obj(ev.series), 'lastObservedTime', true);
  },
  fields: (ev) => events.fields!(ev),
  toStorage(ev) {
    const out: KObject = { apiVersion: 'v1', kind: 'Event', metadata: ev.metadata };
    const map: Record<string, string> = {
      regarding: 'involvedObject',
      note: 'message',
      deprecatedSource: 'source',
      deprecatedFirstTimestamp: 'firstTimestamp',
      deprecatedLastTimestamp: 'lastTimestamp',
      deprecatedCount: 'count',
      reportingController: 'reportingComponent',
    };
    for (const [k, v] of Object.entries(ev)) {
      if (k === 'apiVersion' || k === 'kind' || k === 'metadata') continue;
      out[map[k] ?? k] = v;
    }
    return out;
  },
  fromStorage(ev) {
    const out: KObject = { apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: ev.metadata };
    const map: Record<string, string> = {
      involvedObject: 'regarding',
      message: 'note',
      source: 'deprecatedSource',
      firstTimestamp: 'deprecatedFirstTimestamp',
      lastTimestamp: 'deprecatedLastTimestamp',
      count: 'deprecatedCount',
      reportingComponent: 'reportingController',
    };
    for (const [k, v] of Object.entries(ev)) {
      if (k === 'apiVersion' || k === 'kind' || k === 'metadata') continue;
      out[map[k] ?? k] = v;
    }
    return out;
  },
};

function setTime(o: Record<string, unknown>, field: string, micro: boolean): void {
  const v = normalizeTime(o[field], micro, field);
  if (v === undefined) delete o[field];
  else o[field] = v;
}

export const leases: KindDef = {
  group: 'coordination.k8s.io',
  version: 'v1',
  kind: 'Lease',
  resource: 'leases',
  singular: 'lease',
  namespaced: true,
  schema: schemas.lease,
  nameRule: 'subdomain',
  subresources: [],
  example: { spec: { holderIdentity: 'example', leaseDurationSeconds: 15 } },
  defaults(l) {
    if (!l.spec) return;
    setTime(obj(l.spec), 'acquireTime', true);
    setTime(obj(l.spec), 'renewTime', true);
  },
  table: {
    columns: [{ name: 'Holder', type: 'string', description: 'The holder of the lease', priority: 0 }, AGE],
    cells: (l, now) => [str(obj(l.spec).holderIdentity), age(l, now)],
  },
};

const CREATED_AT = {
  name: 'Created At',
  type: 'date' as const,
  description: 'CreationTimestamp',
  priority: 0,
};

function subjectsText(o: KObject, kind: string): string {
  return arr(o.subjects)
    .map(obj)
    .filter((s) => s.kind === kind)
    .map((s) => (kind === 'ServiceAccount' ? `${str(s.namespace)}/${str(s.name)}` : str(s.name)))
    .join(', ');
}

const bindingTable = {
  columns: [
    { name: 'Role', type: 'string' as const, description: 'RoleRef', priority: 0 },
    AGE,
    { name: 'Users', type: 'string' as const, description: 'Users', priority: 1 },
    { name: 'Groups', type: 'string' as const, description: 'Groups', priority: 1 },
    { name: 'ServiceAccounts', type: 'string' as const, description: 'ServiceAccounts', priority: 1 },
  ],
  cells: (o: KObject, now: number) => [
    `${str(obj(o.roleRef).kind)}/${str(obj(o.roleRef).name)}`,
    age(o, now),
    subjectsText(o, 'User'),
    subjectsText(o, 'Group'),
    subjectsText(o, 'ServiceAccount'),
  ],
};

const rbacBase = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  nameRule: 'path' as const,
  subresources: [],
};

const ruleExample = { rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }] };
const bindingExample = {
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
  subjects: [{ kind: 'User', name: 'example', apiGroup: 'rbac.authorization.k8s.io' }],
};

export const roles: KindDef = {
  ...rbacBase,
  kind: 'Role',
  resource: 'roles',
  singular: 'role',
  namespaced: true,
  schema: schemas.role,
  example: ruleExample,
  table: { columns: [CREATED_AT], cells: (o) => [str(meta(o).creationTimestamp)] },
};

export const clusterroles: KindDef = {
  ...rbacBase,
  kind: 'ClusterRole',
  resource: 'clusterroles',
  singular: 'clusterrole',
  namespaced: false,
  schema: schemas.role,
  example: ruleExample,
  table: { columns: [CREATED_AT], cells: (o) => [str(meta(o).creationTimestamp)] },
};

export const rolebindings: KindDef = {
  ...rbacBase,
  kind: 'RoleBinding',
  resource: 'rolebindings',
  singular: 'rolebinding',
  namespaced: true,
  schema: schemas.roleBinding,
  example: bindingExample,
  table: bindingTable,
};

export const clusterrolebindings: KindDef = {
  ...rbacBase,
  kind: 'ClusterRoleBinding',
  resource: 'clusterrolebindings',
  singular: 'clusterrolebinding',
  namespaced: false,
  schema: schemas.roleBinding,
  example: bindingExample,
  table: bindingTable,
};
