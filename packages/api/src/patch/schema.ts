// Patch metadata for strategic merge patch: which lists merge by which key, which
// merge as sets of scalars, and which maps honour $retainKeys. These are the
// patchStrategy / patchMergeKey tags of the Kubernetes types Kubit serves; every list
// not named here is atomic (a patch replaces it whole).

export interface FieldMeta {
  /** 'merge' merges lists (by mergeKey for lists of objects, as a set for scalars). */
  strategy?: 'merge';
  /** Maps (or list elements) of this field honour $retainKeys. */
  retainKeys?: boolean;
  mergeKey?: string;
  /** Schema of the field's value, or of each element for lists. */
  schema?: PatchSchema;
}

export interface PatchSchema {
  readonly fields: Readonly<Record<string, FieldMeta>>;
}

// Null-prototype, frozen field maps: looking up "constructor" or "__proto__" finds nothing.
const s = (fields: Record<string, FieldMeta>): PatchSchema =>
  Object.freeze({
    fields: Object.freeze(Object.assign(Object.create(null) as Record<string, FieldMeta>, fields)),
  });
const mergeBy = (mergeKey: string, schema?: PatchSchema, retainKeys = false): FieldMeta => ({
  strategy: 'merge',
  mergeKey,
  schema,
  retainKeys,
});
const mergeScalars: FieldMeta = { strategy: 'merge' };
const nested = (schema: PatchSchema, retainKeys = false): FieldMeta => ({ schema, retainKeys });

const conditions = mergeBy('type');

export const OBJECT_META = s({
  finalizers: mergeScalars,
  ownerReferences: mergeBy('uid'),
});

const PROBE = s({});

export const CONTAINER = s({
  ports: mergeBy('containerPort'),
  env: mergeBy('name'),
  volumeMounts: mergeBy('mountPath'),
  volumeDevices: mergeBy('devicePath'),
  livenessProbe: nested(PROBE),
  readinessProbe: nested(PROBE),
  startupProbe: nested(PROBE),
});

export const POD_SPEC = s({
  volumes: mergeBy('name', undefined, true),
  initContainers: mergeBy('name', CONTAINER),
  containers: mergeBy('name', CONTAINER),
  ephemeralContainers: mergeBy('name', CONTAINER),
  imagePullSecrets: mergeBy('name'),
  hostAliases: mergeBy('ip'),
  topologySpreadConstraints: mergeBy('topologyKey'),
  schedulingGates: mergeBy('name'),
  resourceClaims: mergeBy('name', undefined, true),
});

const POD_STATUS = s({
  conditions,
  podIPs: mergeBy('ip'),
  hostIPs: mergeBy('ip'),
});

const POD_TEMPLATE = s({ metadata: nested(OBJECT_META), spec: nested(POD_SPEC) });

const withMeta = (fields: Record<string, FieldMeta>): PatchSchema =>
  s({ metadata: nested(OBJECT_META), ...fields });

export const POD = withMeta({ spec: nested(POD_SPEC), status: nested(POD_STATUS) });

export const NODE = withMeta({
  spec: nested(s({ podCIDRs: mergeScalars })),
  status: nested(s({ conditions, addresses: mergeBy('type') })),
});

const NAMESPACE = withMeta({ status: nested(s({ conditions })) });
const SERVICE_ACCOUNT = withMeta({ secrets: mergeBy('name') });

const DEPLOYMENT = withMeta({
  spec: nested(s({ template: nested(POD_TEMPLATE), strategy: nested(s({}), true) })),
  status: nested(s({ conditions })),
});

const REPLICA_SET = withMeta({
  spec: nested(s({ template: nested(POD_TEMPLATE) })),
  status: nested(s({ conditions })),
});

const DAEMON_SET = withMeta({
  spec: nested(s({ template: nested(POD_TEMPLATE) })),
  status: nested(s({ conditions })),
});

/** Objects with no list tags beyond their metadata. */
const PLAIN = withMeta({});

/** Schemas keyed by "apiVersion/kind". */
const SCHEMAS: Readonly<Record<string, PatchSchema>> = {
  'v1/Pod': POD,
  'v1/Node': NODE,
  'v1/Namespace': NAMESPACE,
  'v1/ServiceAccount': SERVICE_ACCOUNT,
  'v1/ConfigMap': PLAIN,
  'v1/Secret': PLAIN,
  'v1/Event': PLAIN,
  'v1/Binding': PLAIN,
  'coordination.k8s.io/v1/Lease': PLAIN,
  'rbac.authorization.k8s.io/v1/Role': PLAIN,
  'rbac.authorization.k8s.io/v1/ClusterRole': PLAIN,
  'rbac.authorization.k8s.io/v1/RoleBinding': PLAIN,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': PLAIN,
  'v1/ReplicationController': REPLICA_SET,
  'apps/v1/ReplicaSet': REPLICA_SET,
  'apps/v1/Deployment': DEPLOYMENT,
  'apps/v1/DaemonSet': DAEMON_SET,
  'apps/v1/ControllerRevision': PLAIN,
  'events.k8s.io/v1/Event': PLAIN,
};

/** The strategic-merge schema for a kind, or undefined if Kubit has none (patch falls back to plain merging). */
export function patchSchemaFor(apiVersion: string, kind: string): PatchSchema | undefined {
  const key = `${apiVersion}/${kind}`;
  return Object.hasOwn(SCHEMAS, key) ? SCHEMAS[key] : undefined;
}

export const EMPTY_SCHEMA: PatchSchema = s({});
