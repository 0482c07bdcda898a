// Structural schemas: what fields each kind has and their JSON types. Decoding
// checks a body against its schema so every later step can trust the shapes,
// reports unknown fields (fieldValidation=Strict rejects them, the other modes
// drop them, as Kubernetes' typed decoding does) and names wrong types.

export type Schema =
  | { t: 'string' | 'int' | 'number' | 'bool' | 'any' | 'intOrString' | 'quantity' }
  | { t: 'object'; fields: Record<string, Schema>; open?: boolean }
  | { t: 'map'; values: Schema }
  | { t: 'list'; items: Schema };

export const S = {
  str: { t: 'string' } as Schema,
  int: { t: 'int' } as Schema,
  num: { t: 'number' } as Schema,
  bool: { t: 'bool' } as Schema,
  any: { t: 'any' } as Schema,
  intOrStr: { t: 'intOrString' } as Schema,
  quantity: { t: 'quantity' } as Schema,
  obj: (fields: Record<string, Schema>, open = false): Schema => ({ t: 'object', fields, open }),
  map: (values: Schema): Schema => ({ t: 'map', values }),
  list: (items: Schema): Schema => ({ t: 'list', items }),
};

export interface DecodeProblems {
  unknown: string[];
  types: string[];
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'object';
  return typeof v;
}

function goType(s: Schema): string {
  switch (s.t) {
    case 'string':
      return 'string';
    case 'int':
      return 'int64';
    case 'number':
      return 'float64';
    case 'bool':
      return 'bool';
    case 'object':
      return 'struct';
    case 'map':
      return 'map[string]';
    case 'list':
      return 'slice';
    default:
      return s.t;
  }
}

/**
 * Checks `value` against `schema`, returning a copy without unknown fields and
 * nulls (a null means "unset" to Kubernetes' decoder). Problems go to `probs`.
 */
export function conform(value: unknown, schema: Schema, path: string, probs: DecodeProblems): unknown {
  if (value === null) return undefined;
  const typeError = () => {
    probs.types.push(
      `json: cannot unmarshal ${jsonType(value)} into Go struct field ${path || '.'} of type ${goType(schema)}`,
    );
    return undefined;
  };
  switch (schema.t) {
    case 'any':
      return value;
    case 'string':
      return typeof value === 'string' ? value : typeError();
    case 'int':
      return typeof value === 'number' && Number.isInteger(value) ? value : typeError();
    case 'number':
      return typeof value === 'number' ? value : typeError();
    case 'bool':
      return typeof value === 'boolean' ? value : typeError();
    case 'intOrString':
      return typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value))
        ? value
        : typeError();
    case 'quantity':
      return typeof value === 'string' || typeof value === 'number' ? value : typeError();
    case 'map': {
      if (jsonType(value) !== 'object') return typeError();
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        const c = conform(v, schema.values, `${path}[${k}]`, probs);
        if (c !== undefined) out[k] = c;
      }
      return out;
    }
    case 'list': {
      if (!Array.isArray(value)) return typeError();
      return value.map((v, i) => conform(v, schema.items, `${path}[${i}]`, probs) ?? null);
    }
    case 'object': {
      if (jsonType(value) !== 'object') return typeError();
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        const fs = Object.hasOwn(schema.fields, k) ? schema.fields[k] : undefined;
        const childPath = path ? `${path}.${k}` : k;
        if (!fs) {
          if (schema.open) out[k] = v;
          else probs.unknown.push(childPath);
          continue;
        }
        const c = conform(v, fs, childPath, probs);
        if (c !== undefined) out[k] = c;
      }
      return out;
    }
  }
}

// ---- shared pieces of the built-in kinds ----

const strList = S.list(S.str);
const strMap = S.map(S.str);

export const objectMeta = S.obj({
  name: S.str,
  generateName: S.str,
  namespace: S.str,
  selfLink: S.str,
  uid: S.str,
  resourceVersion: S.str,
  generation: S.int,
  creationTimestamp: S.str,
  deletionTimestamp: S.str,
  deletionGracePeriodSeconds: S.int,
  labels: strMap,
  annotations: strMap,
  ownerReferences: S.list(
    S.obj({
      apiVersion: S.str,
      kind: S.str,
      name: S.str,
      uid: S.str,
      controller: S.bool,
      blockOwnerDeletion: S.bool,
    }),
  ),
  finalizers: strList,
  managedFields: S.list(S.any),
});

const typeMeta = { apiVersion: S.str, kind: S.str, metadata: objectMeta };

const resources = S.obj({ limits: S.map(S.quantity), requests: S.map(S.quantity), claims: S.list(S.any) });

const container = S.obj({
  name: S.str,
  image: S.str,
  command: strList,
  args: strList,
  workingDir: S.str,
  ports: S.list(
    S.obj({ name: S.str, hostPort: S.int, containerPort: S.int, protocol: S.str, hostIP: S.str }),
  ),
  envFrom: S.list(S.any),
  env: S.list(S.obj({ name: S.str, value: S.str, valueFrom: S.any })),
  resources,
  resizePolicy: S.list(S.any),
  restartPolicy: S.str,
  volumeMounts: S.list(
    S.obj({
      name: S.str,
      readOnly: S.bool,
      recursiveReadOnly: S.str,
      mountPath: S.str,
      subPath: S.str,
      mountPropagation: S.str,
      subPathExpr: S.str,
    }),
  ),
  volumeDevices: S.list(S.any),
  livenessProbe: S.any,
  readinessProbe: S.any,
  startupProbe: S.any,
  lifecycle: S.any,
  terminationMessagePath: S.str,
  terminationMessagePolicy: S.str,
  imagePullPolicy: S.str,
  securityContext: S.any,
  stdin: S.bool,
  stdinOnce: S.bool,
  tty: S.bool,
});

const toleration = S.obj({
  key: S.str,
  operator: S.str,
  value: S.str,
  effect: S.str,
  tolerationSeconds: S.int,
});

export const podSpec = S.obj({
  volumes: S.list(S.any),
  initContainers: S.list(container),
  containers: S.list(container),
  ephemeralContainers: S.list(S.any),
  restartPolicy: S.str,
  terminationGracePeriodSeconds: S.int,
  activeDeadlineSeconds: S.int,
  dnsPolicy: S.str,
  nodeSelector: strMap,
  serviceAccountName: S.str,
  serviceAccount: S.str,
  automountServiceAccountToken: S.bool,
  nodeName: S.str,
  hostNetwork: S.bool,
  hostPID: S.bool,
  hostIPC: S.bool,
  shareProcessNamespace: S.bool,
  securityContext: S.any,
  imagePullSecrets: S.list(S.obj({ name: S.str })),
  hostname: S.str,
  subdomain: S.str,
  affinity: S.any,
  schedulerName: S.str,
  tolerations: S.list(toleration),
  hostAliases: S.list(S.any),
  priorityClassName: S.str,
  priority: S.int,
  dnsConfig: S.any,
  readinessGates: S.list(S.obj({ conditionType: S.str })),
  runtimeClassName: S.str,
  enableServiceLinks: S.bool,
  preemptionPolicy: S.str,
  overhead: S.map(S.quantity),
  topologySpreadConstraints: S.list(S.any),
  setHostnameAsFQDN: S.bool,
  os: S.obj({ name: S.str }),
  hostUsers: S.bool,
  schedulingGates: S.list(S.obj({ name: S.str })),
  resourceClaims: S.list(S.any),
  resources: S.any,
});

export const labelSelector = S.obj({
  matchLabels: strMap,
  matchExpressions: S.list(S.obj({ key: S.str, operator: S.str, values: strList })),
});

const networkPolicyPort = S.obj({ protocol: S.str, port: S.intOrStr, endPort: S.int });
const networkPolicyPeer = S.obj({
  podSelector: labelSelector,
  namespaceSelector: labelSelector,
  ipBlock: S.obj({ cidr: S.str, except: strList }),
});

const podTemplateSpec = S.obj({ metadata: objectMeta, spec: podSpec });

const replicaSetSpec = S.obj({
  replicas: S.int,
  minReadySeconds: S.int,
  selector: labelSelector,
  template: podTemplateSpec,
});

/** core/v1 ReplicationControllerSpec: a plain label map for a selector. */
const replicationControllerSpec = S.obj({
  replicas: S.int,
  minReadySeconds: S.int,
  selector: strMap,
  template: podTemplateSpec,
});

const deploymentSpec = S.obj({
  replicas: S.int,
  selector: labelSelector,
  template: podTemplateSpec,
  strategy: S.obj({
    type: S.str,
    rollingUpdate: S.obj({ maxUnavailable: S.intOrStr, maxSurge: S.intOrStr }),
  }),
  minReadySeconds: S.int,
  revisionHistoryLimit: S.int,
  paused: S.bool,
  progressDeadlineSeconds: S.int,
});

const daemonSetSpec = S.obj({
  selector: labelSelector,
  template: podTemplateSpec,
  updateStrategy: S.obj({
    type: S.str,
    rollingUpdate: S.obj({ maxUnavailable: S.intOrStr, maxSurge: S.intOrStr }),
  }),
  minReadySeconds: S.int,
  revisionHistoryLimit: S.int,
});

/** A claim template: ObjectMeta and a PersistentVolumeClaimSpec (kept open for the storage kinds' fields). */
const claimTemplate = S.obj({
  apiVersion: S.str,
  kind: S.str,
  metadata: objectMeta,
  spec: S.obj(
    {
      accessModes: strList,
      storageClassName: S.str,
      volumeMode: S.str,
      volumeName: S.str,
      resources: S.obj({ limits: S.map(S.quantity), requests: S.map(S.quantity) }),
      selector: labelSelector,
    },
    true,
  ),
  status: S.obj({}, true),
});

const statefulSetSpec = S.obj({
  replicas: S.int,
  selector: labelSelector,
  template: podTemplateSpec,
  volumeClaimTemplates: S.list(claimTemplate),
  serviceName: S.str,
  podManagementPolicy: S.str,
  updateStrategy: S.obj({
    type: S.str,
    rollingUpdate: S.obj({ partition: S.int, maxUnavailable: S.intOrStr }),
  }),
  revisionHistoryLimit: S.int,
  minReadySeconds: S.int,
  persistentVolumeClaimRetentionPolicy: S.obj({ whenDeleted: S.str, whenScaled: S.str }),
  ordinals: S.obj({ start: S.int }),
});

/** A PersistentVolumeClaimSpec (also an ephemeral volume's and a StatefulSet's claim template). */
const persistentVolumeClaimSpec = S.obj({
  accessModes: strList,
  selector: labelSelector,
  resources: S.obj({ limits: S.map(S.quantity), requests: S.map(S.quantity) }),
  volumeName: S.str,
  storageClassName: S.str,
  volumeMode: S.str,
  dataSource: S.obj({ apiGroup: S.str, kind: S.str, name: S.str }),
  dataSourceRef: S.obj({ apiGroup: S.str, kind: S.str, name: S.str, namespace: S.str }),
  volumeAttributesClassName: S.str,
});

const nodeSelectorRequirement = S.obj({ key: S.str, operator: S.str, values: strList });
const nodeSelector = S.obj({
  nodeSelectorTerms: S.list(
    S.obj({
      matchExpressions: S.list(nodeSelectorRequirement),
      matchFields: S.list(nodeSelectorRequirement),
    }),
  ),
});

/** A PersistentVolumeSpec: the sources Kubit mounts are typed, the others kept as given. */
const persistentVolumeSpec = S.obj({
  capacity: S.map(S.quantity),
  accessModes: strList,
  claimRef: S.obj({
    kind: S.str,
    namespace: S.str,
    name: S.str,
    uid: S.str,
    apiVersion: S.str,
    resourceVersion: S.str,
    fieldPath: S.str,
  }),
  persistentVolumeReclaimPolicy: S.str,
  storageClassName: S.str,
  mountOptions: strList,
  volumeMode: S.str,
  nodeAffinity: S.obj({ required: nodeSelector }),
  volumeAttributesClassName: S.str,
  hostPath: S.obj({ path: S.str, type: S.str }),
  local: S.obj({ path: S.str, fsType: S.str }),
  nfs: S.obj({ server: S.str, path: S.str, readOnly: S.bool }),
  csi: S.obj({
    driver: S.str,
    volumeHandle: S.str,
    readOnly: S.bool,
    fsType: S.str,
    volumeAttributes: strMap,
    controllerPublishSecretRef: S.any,
    nodeStageSecretRef: S.any,
    nodePublishSecretRef: S.any,
    controllerExpandSecretRef: S.any,
    nodeExpandSecretRef: S.any,
  }),
  gcePersistentDisk: S.any,
  awsElasticBlockStore: S.any,
  glusterfs: S.any,
  rbd: S.any,
  iscsi: S.any,
  cinder: S.any,
  cephfs: S.any,
  fc: S.any,
  flocker: S.any,
  flexVolume: S.any,
  azureFile: S.any,
  vsphereVolume: S.any,
  quobyte: S.any,
  azureDisk: S.any,
  photonPersistentDisk: S.any,
  portworxVolume: S.any,
  scaleIO: S.any,
  storageos: S.any,
});

const objectReference = S.obj({
  kind: S.str,
  namespace: S.str,
  name: S.str,
  uid: S.str,
  apiVersion: S.str,
  resourceVersion: S.str,
  fieldPath: S.str,
});

const serviceSpec = S.obj({
  ports: S.list(
    S.obj({
      name: S.str,
      protocol: S.str,
      appProtocol: S.str,
      port: S.int,
      targetPort: S.intOrStr,
      nodePort: S.int,
    }),
  ),
  selector: strMap,
  clusterIP: S.str,
  clusterIPs: strList,
  type: S.str,
  externalIPs: strList,
  sessionAffinity: S.str,
  loadBalancerIP: S.str,
  loadBalancerSourceRanges: strList,
  externalName: S.str,
  externalTrafficPolicy: S.str,
  healthCheckNodePort: S.int,
  publishNotReadyAddresses: S.bool,
  sessionAffinityConfig: S.obj({ clientIP: S.obj({ timeoutSeconds: S.int }) }),
  ipFamilies: strList,
  ipFamilyPolicy: S.str,
  allocateLoadBalancerNodePorts: S.bool,
  loadBalancerClass: S.str,
  internalTrafficPolicy: S.str,
  trafficDistribution: S.str,
});

const portStatus = S.obj({ port: S.int, protocol: S.str, error: S.str });

const serviceStatus = S.obj({
  loadBalancer: S.obj({
    ingress: S.list(S.obj({ ip: S.str, hostname: S.str, ipMode: S.str, ports: S.list(portStatus) })),
  }),
  conditions: S.list(S.any),
});

const endpointAddress = S.obj({ ip: S.str, hostname: S.str, nodeName: S.str, targetRef: objectReference });

const endpointSubset = S.obj({
  addresses: S.list(endpointAddress),
  notReadyAddresses: S.list(endpointAddress),
  ports: S.list(S.obj({ name: S.str, port: S.int, protocol: S.str, appProtocol: S.str })),
});

const sliceEndpoint = S.obj({
  addresses: strList,
  conditions: S.obj({ ready: S.bool, serving: S.bool, terminating: S.bool }),
  hostname: S.str,
  targetRef: objectReference,
  deprecatedTopology: strMap,
  nodeName: S.str,
  zone: S.str,
  hints: S.obj({ forZones: S.list(S.obj({ name: S.str })), forNodes: S.list(S.obj({ name: S.str })) }),
});

const deleteOptions = S.obj({
  apiVersion: S.str,
  kind: S.str,
  gracePeriodSeconds: S.int,
  preconditions: S.obj({ uid: S.str, resourceVersion: S.str }),
  orphanDependents: S.bool,
  propagationPolicy: S.str,
  dryRun: strList,
});

/** batch/v1 JobSpec, shared by Jobs and CronJobs' jobTemplate. */
const jobSpec = S.obj({
  parallelism: S.int,
  completions: S.int,
  activeDeadlineSeconds: S.int,
  podFailurePolicy: S.obj({
    rules: S.list(
      S.obj({
        action: S.str,
        onExitCodes: S.obj({ containerName: S.str, operator: S.str, values: S.list(S.int) }),
        onPodConditions: S.list(S.obj({ type: S.str, status: S.str })),
      }),
    ),
  }),
  successPolicy: S.obj({ rules: S.list(S.obj({ succeededIndexes: S.str, succeededCount: S.int })) }),
  backoffLimit: S.int,
  backoffLimitPerIndex: S.int,
  maxFailedIndexes: S.int,
  selector: labelSelector,
  manualSelector: S.bool,
  template: podTemplateSpec,
  ttlSecondsAfterFinished: S.int,
  completionMode: S.str,
  suspend: S.bool,
  podReplacementPolicy: S.str,
  managedBy: S.str,
});

const jobStatus = S.obj({
  conditions: S.list(
    S.obj({
      type: S.str,
      status: S.str,
      lastProbeTime: S.str,
      lastTransitionTime: S.str,
      reason: S.str,
      message: S.str,
    }),
  ),
  startTime: S.str,
  completionTime: S.str,
  active: S.int,
  succeeded: S.int,
  failed: S.int,
  terminating: S.int,
  completedIndexes: S.str,
  failedIndexes: S.str,
  uncountedTerminatedPods: S.obj({ succeeded: strList, failed: strList }),
  ready: S.int,
});

const cronJobSpec = S.obj({
  schedule: S.str,
  timeZone: S.str,
  startingDeadlineSeconds: S.int,
  concurrencyPolicy: S.str,
  suspend: S.bool,
  jobTemplate: S.obj({ metadata: objectMeta, spec: jobSpec }),
  successfulJobsHistoryLimit: S.int,
  failedJobsHistoryLimit: S.int,
});

const cronJobStatus = S.obj({
  active: S.list(objectReference),
  lastScheduleTime: S.str,
  lastSuccessfulTime: S.str,
});

export const schemas = {
  pod: S.obj({ ...typeMeta, spec: podSpec, status: S.obj({}, true) }),
  podTemplateSpec,
  replicaSet: S.obj({ ...typeMeta, spec: replicaSetSpec, status: S.obj({}, true) }),
  deployment: S.obj({ ...typeMeta, spec: deploymentSpec, status: S.obj({}, true) }),
  replicationController: S.obj({ ...typeMeta, spec: replicationControllerSpec, status: S.obj({}, true) }),
  daemonSet: S.obj({ ...typeMeta, spec: daemonSetSpec, status: S.obj({}, true) }),
  statefulSet: S.obj({ ...typeMeta, spec: statefulSetSpec, status: S.obj({}, true) }),
  /** apps/v1 ControllerRevision: data is any object (a patch of the owner's spec). */
  controllerRevision: S.obj({ ...typeMeta, data: S.any, revision: S.int }),
  job: S.obj({ ...typeMeta, spec: jobSpec, status: jobStatus }),
  cronJob: S.obj({ ...typeMeta, spec: cronJobSpec, status: cronJobStatus }),
  persistentVolume: S.obj({ ...typeMeta, spec: persistentVolumeSpec, status: S.obj({}, true) }),
  persistentVolumeClaim: S.obj({ ...typeMeta, spec: persistentVolumeClaimSpec, status: S.obj({}, true) }),
  storageClass: S.obj({
    ...typeMeta,
    provisioner: S.str,
    parameters: strMap,
    reclaimPolicy: S.str,
    mountOptions: strList,
    allowVolumeExpansion: S.bool,
    volumeBindingMode: S.str,
    allowedTopologies: S.list(
      S.obj({ matchLabelExpressions: S.list(S.obj({ key: S.str, values: strList })) }),
    ),
  }),
  csiStorageCapacity: S.obj({
    ...typeMeta,
    nodeTopology: labelSelector,
    storageClassName: S.str,
    capacity: S.quantity,
    maximumVolumeSize: S.quantity,
  }),
  /** autoscaling/v1 Scale, the body of the scale subresource. */
  scale: S.obj({
    ...typeMeta,
    spec: S.obj({ replicas: S.int }),
    status: S.obj({ replicas: S.int, selector: S.str }),
  }),
  node: S.obj({
    ...typeMeta,
    spec: S.obj({
      podCIDR: S.str,
      podCIDRs: strList,
      providerID: S.str,
      unschedulable: S.bool,
      taints: S.list(S.obj({ key: S.str, value: S.str, effect: S.str, timeAdded: S.str })),
      configSource: S.any,
      externalID: S.str,
    }),
    status: S.obj({}, true),
  }),
  namespace: S.obj({ ...typeMeta, spec: S.obj({ finalizers: strList }), status: S.obj({}, true) }),
  configMap: S.obj({ ...typeMeta, data: strMap, binaryData: strMap, immutable: S.bool }),
  secret: S.obj({ ...typeMeta, data: strMap, stringData: strMap, type: S.str, immutable: S.bool }),
  serviceAccount: S.obj({
    ...typeMeta,
    secrets: S.list(S.any),
    imagePullSecrets: S.list(S.obj({ name: S.str })),
    automountServiceAccountToken: S.bool,
  }),
  service: S.obj({ ...typeMeta, spec: serviceSpec, status: serviceStatus }),
  endpoints: S.obj({ ...typeMeta, subsets: S.list(endpointSubset) }),
  endpointSlice: S.obj({
    ...typeMeta,
    addressType: S.str,
    endpoints: S.list(sliceEndpoint),
    ports: S.list(S.obj({ name: S.str, protocol: S.str, port: S.int, appProtocol: S.str })),
  }),
  lease: S.obj({
    ...typeMeta,
    spec: S.obj({
      holderIdentity: S.str,
      leaseDurationSeconds: S.int,
      acquireTime: S.str,
      renewTime: S.str,
      leaseTransitions: S.int,
      strategy: S.str,
      preferredHolder: S.str,
    }),
  }),
  event: S.obj({
    ...typeMeta,
    involvedObject: S.any,
    reason: S.str,
    message: S.str,
    source: S.obj({ component: S.str, host: S.str }),
    firstTimestamp: S.str,
    lastTimestamp: S.str,
    count: S.int,
    type: S.str,
    eventTime: S.str,
    series: S.any,
    action: S.str,
    related: S.any,
    reportingComponent: S.str,
    reportingInstance: S.str,
  }),
  eventV1: S.obj({
    ...typeMeta,
    eventTime: S.str,
    series: S.any,
    reportingController: S.str,
    reportingInstance: S.str,
    action: S.str,
    reason: S.str,
    regarding: S.any,
    related: S.any,
    note: S.str,
    type: S.str,
    deprecatedSource: S.any,
    deprecatedFirstTimestamp: S.str,
    deprecatedLastTimestamp: S.str,
    deprecatedCount: S.int,
  }),
  role: S.obj({
    ...typeMeta,
    rules: S.list(
      S.obj({
        apiGroups: strList,
        resources: strList,
        verbs: strList,
        resourceNames: strList,
        nonResourceURLs: strList,
      }),
    ),
    aggregationRule: S.any,
  }),
  roleBinding: S.obj({
    ...typeMeta,
    subjects: S.list(S.obj({ kind: S.str, apiGroup: S.str, name: S.str, namespace: S.str })),
    roleRef: S.obj({ apiGroup: S.str, kind: S.str, name: S.str }),
  }),
  binding: S.obj({
    ...typeMeta,
    target: S.obj({
      kind: S.str,
      name: S.str,
      namespace: S.str,
      apiVersion: S.str,
      uid: S.str,
      resourceVersion: S.str,
      fieldPath: S.str,
    }),
  }),
  deleteOptions,
  /** authentication.k8s.io/v1 TokenRequest, the body of serviceaccounts/<name>/token. */
  tokenRequest: S.obj({
    ...typeMeta,
    spec: S.obj({
      audiences: strList,
      expirationSeconds: S.int,
      boundObjectRef: S.obj({ kind: S.str, apiVersion: S.str, name: S.str, uid: S.str }),
    }),
    status: S.obj({ token: S.str, expirationTimestamp: S.str }),
  }),
  /** authentication.k8s.io/v1 TokenReview. */
  tokenReview: S.obj({
    ...typeMeta,
    spec: S.obj({ token: S.str, audiences: strList }),
    status: S.any,
  }),
  /** policy/v1 PodDisruptionBudget. */
  podDisruptionBudget: S.obj({
    ...typeMeta,
    spec: S.obj({
      minAvailable: S.intOrStr,
      selector: labelSelector,
      maxUnavailable: S.intOrStr,
      unhealthyPodEvictionPolicy: S.str,
    }),
    status: S.obj({
      observedGeneration: S.int,
      disruptedPods: strMap,
      disruptionsAllowed: S.int,
      currentHealthy: S.int,
      desiredHealthy: S.int,
      expectedPods: S.int,
      conditions: S.list(
        S.obj({
          type: S.str,
          status: S.str,
          observedGeneration: S.int,
          lastTransitionTime: S.str,
          reason: S.str,
          message: S.str,
        }),
      ),
    }),
  }),
  /** networking.k8s.io/v1 NetworkPolicy. */
  networkPolicy: S.obj({
    ...typeMeta,
    spec: S.obj({
      podSelector: labelSelector,
      ingress: S.list(S.obj({ ports: S.list(networkPolicyPort), from: S.list(networkPolicyPeer) })),
      egress: S.list(S.obj({ ports: S.list(networkPolicyPort), to: S.list(networkPolicyPeer) })),
      policyTypes: strList,
    }),
  }),
  /** policy/v1 Eviction, the body of pods/<name>/eviction. */
  eviction: S.obj({ ...typeMeta, deleteOptions }),
  selfSubjectAccessReview: S.obj({
    ...typeMeta,
    spec: S.obj({
      resourceAttributes: S.obj({
        namespace: S.str,
        verb: S.str,
        group: S.str,
        version: S.str,
        resource: S.str,
        subresource: S.str,
        name: S.str,
        fieldSelector: S.any,
        labelSelector: S.any,
      }),
      nonResourceAttributes: S.obj({ path: S.str, verb: S.str }),
    }),
    status: S.any,
  }),
};

/**
 * The shared pieces that have a name of their own in Kubernetes' API (the
 * OpenAPI documents give each one definition and refer to it).
 */
export const sharedSchemas = {
  'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': objectMeta,
  'io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector': labelSelector,
  'io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions': deleteOptions,
  'io.k8s.api.core.v1.PodSpec': podSpec,
  'io.k8s.api.core.v1.PodTemplateSpec': podTemplateSpec,
  'io.k8s.api.core.v1.Container': container,
  'io.k8s.api.core.v1.ResourceRequirements': resources,
  'io.k8s.api.core.v1.Toleration': toleration,
  'io.k8s.api.core.v1.ObjectReference': objectReference,
  'io.k8s.api.core.v1.PersistentVolumeClaimSpec': persistentVolumeClaimSpec,
  'io.k8s.api.core.v1.NodeSelector': nodeSelector,
  'io.k8s.api.core.v1.EndpointSubset': endpointSubset,
  'io.k8s.api.core.v1.EndpointAddress': endpointAddress,
  'io.k8s.api.batch.v1.JobSpec': jobSpec,
} satisfies Record<string, Schema>;
