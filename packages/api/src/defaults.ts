// Defaulting as Kubernetes does it on the way in (decode -> default -> validate). The
// functions fill in missing fields in place and return the same object; fields that
// are present, even with odd types, are left for validation to report.

import { VOLUME_SOURCES } from './validation/pod.js';
import { isObj, type Obj, own } from './validation/util.js';

function setDefault(o: Obj, key: string, value: unknown): void {
  if (own(o, key) === undefined || own(o, key) === null) o[key] = value;
}

/** An object child, created empty if missing; undefined if the field holds something else. */
function child(o: Obj, key: string): Obj | undefined {
  const v = own(o, key);
  if (v === undefined || v === null) {
    const created: Obj = {};
    o[key] = created;
    return created;
  }
  return isObj(v) ? v : undefined;
}

function objects(v: unknown): Obj[] {
  return Array.isArray(v) ? v.filter(isObj) : [];
}

/**
 * Always for images without a tag or tagged `latest`, IfNotPresent otherwise (a digest
 * pins the image, so it counts as tagged).
 */
export function defaultPullPolicy(image: string): 'Always' | 'IfNotPresent' {
  if (image.includes('@')) return 'IfNotPresent';
  const lastSlash = image.lastIndexOf('/');
  const lastColon = image.lastIndexOf(':');
  // A colon before the last slash belongs to a registry port, not a tag.
  const tag = lastColon > lastSlash ? image.slice(lastColon + 1) : '';
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultHandler(h: unknown): void {
  if (!isObj(h)) return;
  const http = own(h, 'httpGet');
  if (isObj(http)) {
    setDefault(http, 'path', '/');
    setDefault(http, 'scheme', 'HTTP');
  }
}

function defaultProbe(p: unknown): void {
  if (!isObj(p)) return;
  setDefault(p, 'timeoutSeconds', 1);
  setDefault(p, 'periodSeconds', 10);
  setDefault(p, 'successThreshold', 1);
  setDefault(p, 'failureThreshold', 3);
  defaultHandler(p);
}

function defaultContainer(c: Obj): void {
  const image = own(c, 'image');
  if (typeof image === 'string' && image) setDefault(c, 'imagePullPolicy', defaultPullPolicy(image));
  setDefault(c, 'terminationMessagePath', '/dev/termination-log');
  setDefault(c, 'terminationMessagePolicy', 'File');
  for (const port of objects(own(c, 'ports'))) setDefault(port, 'protocol', 'TCP');
  for (const env of objects(own(c, 'env'))) {
    const from = own(env, 'valueFrom');
    const fieldRef = isObj(from) ? own(from, 'fieldRef') : undefined;
    if (isObj(fieldRef)) setDefault(fieldRef, 'apiVersion', 'v1');
  }
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) defaultProbe(own(c, probe));
  const lifecycle = own(c, 'lifecycle');
  if (isObj(lifecycle)) {
    defaultHandler(own(lifecycle, 'postStart'));
    defaultHandler(own(lifecycle, 'preStop'));
  }
}

/** Mode 0644 for files projected from ConfigMaps, Secrets and the downward API. */
export const DEFAULT_VOLUME_MODE = 0o644;

function defaultVolume(v: Obj): void {
  for (const src of ['configMap', 'secret', 'projected', 'downwardAPI']) {
    const s = own(v, src);
    if (isObj(s)) setDefault(s, 'defaultMode', DEFAULT_VOLUME_MODE);
  }
  const hostPath = own(v, 'hostPath');
  if (isObj(hostPath)) setDefault(hostPath, 'type', '');
  // A volume with no source at all is an emptyDir, as Kubernetes decodes it.
  if (!VOLUME_SOURCES.some((k) => own(v, k) !== undefined && own(v, k) !== null)) v.emptyDir = {};
}

/** Defaults of a PodSpec, shared by pods and pod templates. */
export function defaultPodSpec(spec: Obj): Obj {
  setDefault(spec, 'restartPolicy', 'Always');
  setDefault(spec, 'dnsPolicy', 'ClusterFirst');
  setDefault(spec, 'schedulerName', 'default-scheduler');
  setDefault(spec, 'terminationGracePeriodSeconds', 30);
  setDefault(spec, 'securityContext', {});
  setDefault(spec, 'enableServiceLinks', true);
  for (const c of objects(own(spec, 'containers'))) defaultContainer(c);
  for (const c of objects(own(spec, 'initContainers'))) defaultContainer(c);
  for (const c of objects(own(spec, 'ephemeralContainers'))) defaultContainer(c);
  for (const v of objects(own(spec, 'volumes'))) defaultVolume(v);
  return spec;
}

/** Copies each limit to a missing request, as Kubernetes does for pods (not templates). */
function defaultRequestsFromLimits(c: Obj): void {
  const resources = own(c, 'resources');
  if (!isObj(resources)) return;
  const limits = own(resources, 'limits');
  if (!isObj(limits) || Object.keys(limits).length === 0) return;
  const requests = child(resources, 'requests');
  if (!requests) return;
  for (const k of Object.keys(limits)) {
    if (!Object.hasOwn(requests, k)) {
      Object.defineProperty(requests, k, {
        value: limits[k],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
}

export function defaultPod(pod: Obj): Obj {
  const spec = child(pod, 'spec');
  if (!spec) return pod;
  defaultPodSpec(spec);
  const hostNetwork = own(spec, 'hostNetwork') === true;
  for (const c of [...objects(own(spec, 'containers')), ...objects(own(spec, 'initContainers'))]) {
    defaultRequestsFromLimits(c);
    // With the host's network a container port is a host port.
    if (hostNetwork) {
      for (const port of objects(own(c, 'ports'))) {
        if (!own(port, 'hostPort')) port.hostPort = own(port, 'containerPort');
      }
    }
  }
  return pod;
}

function defaultTemplate(spec: Obj): void {
  const template = own(spec, 'template');
  if (!isObj(template)) return;
  const podSpec = child(template, 'spec');
  if (podSpec) defaultPodSpec(podSpec);
}

/** A PodTemplate's template gets a pod spec's defaults, as the templates of workloads do. */
export function defaultPodTemplate(pt: Obj): Obj {
  defaultTemplate(pt);
  return pt;
}

export function defaultReplicaSet(rs: Obj): Obj {
  const spec = child(rs, 'spec');
  if (!spec) return rs;
  setDefault(spec, 'replicas', 1);
  defaultTemplate(spec);
  return rs;
}

/**
 * A ReplicationController's selector and labels default to its template's labels
 * (when it has some), and its replicas to 1, as Kubernetes' SetDefaults_ReplicationController.
 */
export function defaultReplicationController(rc: Obj): Obj {
  const spec = child(rc, 'spec');
  if (!spec) return rc;
  const template = own(spec, 'template');
  const tmeta = isObj(template) ? own(template, 'metadata') : undefined;
  const labels = isObj(tmeta) ? own(tmeta, 'labels') : undefined;
  if (isObj(labels)) {
    const selector = own(spec, 'selector');
    if (!isObj(selector) || Object.keys(selector).length === 0) spec.selector = { ...labels };
    const meta = child(rc, 'metadata');
    const own_ = meta ? own(meta, 'labels') : undefined;
    if (meta && (!isObj(own_) || Object.keys(own_).length === 0)) meta.labels = { ...labels };
  }
  setDefault(spec, 'replicas', 1);
  defaultTemplate(spec);
  return rc;
}

export function defaultDeployment(d: Obj): Obj {
  const spec = child(d, 'spec');
  if (!spec) return d;
  setDefault(spec, 'replicas', 1);
  const strategy = child(spec, 'strategy');
  if (strategy) {
    setDefault(strategy, 'type', 'RollingUpdate');
    if (own(strategy, 'type') === 'RollingUpdate') {
      const rolling = child(strategy, 'rollingUpdate');
      if (rolling) {
        setDefault(rolling, 'maxUnavailable', '25%');
        setDefault(rolling, 'maxSurge', '25%');
      }
    }
  }
  setDefault(spec, 'revisionHistoryLimit', 10);
  setDefault(spec, 'progressDeadlineSeconds', 600);
  defaultTemplate(spec);
  return d;
}

/** Kubernetes' SetDefaults_DaemonSet: RollingUpdate 1 unavailable, 0 surge; 10 revisions kept. */
export function defaultDaemonSet(ds: Obj): Obj {
  const spec = child(ds, 'spec');
  if (!spec) return ds;
  const strategy = child(spec, 'updateStrategy');
  if (strategy) {
    setDefault(strategy, 'type', 'RollingUpdate');
    if (own(strategy, 'type') === 'RollingUpdate') {
      const rolling = child(strategy, 'rollingUpdate');
      if (rolling) {
        setDefault(rolling, 'maxUnavailable', 1);
        setDefault(rolling, 'maxSurge', 0);
      }
    }
  }
  setDefault(spec, 'revisionHistoryLimit', 10);
  defaultTemplate(spec);
  return ds;
}

/**
 * Kubernetes' SetDefaults_StatefulSet: OrderedReady, RollingUpdate from partition 0,
 * claims retained on delete and scale, 1 replica, 10 revisions kept; claim templates
 * default to a Filesystem volume.
 */
export function defaultStatefulSet(sts: Obj): Obj {
  const spec = child(sts, 'spec');
  if (!spec) return sts;
  setDefault(spec, 'podManagementPolicy', 'OrderedReady');
  const strategy = child(spec, 'updateStrategy');
  if (strategy) {
    setDefault(strategy, 'type', 'RollingUpdate');
    if (own(strategy, 'type') === 'RollingUpdate') {
      const rolling = child(strategy, 'rollingUpdate');
      if (rolling) setDefault(rolling, 'partition', 0);
    }
  }
  const retention = child(spec, 'persistentVolumeClaimRetentionPolicy');
  if (retention) {
    setDefault(retention, 'whenDeleted', 'Retain');
    setDefault(retention, 'whenScaled', 'Retain');
  }
  setDefault(spec, 'replicas', 1);
  setDefault(spec, 'revisionHistoryLimit', 10);
  for (const t of objects(own(spec, 'volumeClaimTemplates'))) {
    const cspec = child(t, 'spec');
    if (cspec) setDefault(cspec, 'volumeMode', 'Filesystem');
  }
  defaultTemplate(spec);
  return sts;
}

/** The label keys a Job's generated selector and its pods' template carry (Kubernetes' batch labels). */
export const JOB_CONTROLLER_UID_LABEL = 'batch.kubernetes.io/controller-uid';
export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';
export const LEGACY_JOB_CONTROLLER_UID_LABEL = 'controller-uid';
export const LEGACY_JOB_NAME_LABEL = 'job-name';
/** Go's math.MaxInt32: a Job's backoffLimit when it counts failures per index instead. */
export const MAX_INT32 = 2147483647;

/** The defaults of a JobSpec that a CronJob's jobTemplate and a Job share: its pod template's. */
function defaultJobSpec(spec: Obj): void {
  if (own(spec, 'completions') == null && own(spec, 'parallelism') == null) {
    spec.completions = 1;
    spec.parallelism = 1;
  }
  setDefault(spec, 'parallelism', 1);
  setDefault(spec, 'backoffLimit', own(spec, 'backoffLimitPerIndex') == null ? 6 : MAX_INT32);
  setDefault(spec, 'completionMode', 'NonIndexed');
  setDefault(spec, 'suspend', false);
  setDefault(
    spec,
    'podReplacementPolicy',
    own(spec, 'podFailurePolicy') == null ? 'TerminatingOrFailed' : 'Failed',
  );
  setDefault(spec, 'manualSelector', false);
  defaultTemplate(spec);
}

/**
 * Kubernetes' SetDefaults_Job: one completion at parallelism 1 when neither is set, 6
 * retries (MaxInt32 with a per-index limit), NonIndexed, not suspended, pods replaced
 * once terminating or failed (failed only, with a pod failure policy), and the Job's
 * own labels copied from its template when it has none.
 */
export function defaultJob(job: Obj): Obj {
  const spec = child(job, 'spec');
  if (!spec) return job;
  defaultJobSpec(spec);
  const template = own(spec, 'template');
  const tmeta = isObj(template) ? own(template, 'metadata') : undefined;
  const labels = isObj(tmeta) ? own(tmeta, 'labels') : undefined;
  const meta = child(job, 'metadata');
  const ownLabels = meta ? own(meta, 'labels') : undefined;
  if (meta && isObj(labels) && (!isObj(ownLabels) || Object.keys(ownLabels).length === 0)) {
    meta.labels = { ...labels };
  }
  return job;
}

/**
 * The selector the apiserver generates for a new Job unless spec.manualSelector is true
 * (Kubernetes' Job strategy, generateSelector): its pods carry the Job's uid and name in
 * the batch labels (and their legacy spellings), and the selector picks that uid. It
 * needs metadata.uid, so it runs once the uid is assigned; labels the user set on the
 * template are kept.
 */
export function generateJobSelector(job: Obj): Obj {
  const spec = child(job, 'spec');
  const meta = own(job, 'metadata');
  if (!spec || !isObj(meta) || own(spec, 'manualSelector') === true) return job;
  const uid = own(meta, 'uid');
  const name = own(meta, 'name');
  if (typeof uid !== 'string' || !uid) return job;
  const template = child(spec, 'template');
  const tmeta = template ? child(template, 'metadata') : undefined;
  const labels = tmeta ? child(tmeta, 'labels') : undefined;
  if (labels) {
    const generated: Record<string, unknown> = {
      [LEGACY_JOB_CONTROLLER_UID_LABEL]: uid,
      [LEGACY_JOB_NAME_LABEL]: name,
      [JOB_CONTROLLER_UID_LABEL]: uid,
      [JOB_NAME_LABEL]: name,
    };
    for (const [k, v] of Object.entries(generated)) if (own(labels, k) === undefined) labels[k] = v;
  }
  // The uid is added to what the user wrote; a selector that then picks other pods than
  // the generated labels is validation's "`selector` not auto-generated".
  const selector = child(spec, 'selector');
  const matchLabels = selector ? child(selector, 'matchLabels') : undefined;
  if (matchLabels && own(matchLabels, JOB_CONTROLLER_UID_LABEL) === undefined) {
    matchLabels[JOB_CONTROLLER_UID_LABEL] = uid;
  }
  return job;
}

/** Kubernetes' SetDefaults_CronJob: Allow, not suspended, 3 succeeded and 1 failed Job kept. */
export function defaultCronJob(cj: Obj): Obj {
  const spec = child(cj, 'spec');
  if (!spec) return cj;
  setDefault(spec, 'concurrencyPolicy', 'Allow');
  setDefault(spec, 'suspend', false);
  setDefault(spec, 'successfulJobsHistoryLimit', 3);
  setDefault(spec, 'failedJobsHistoryLimit', 1);
  const jobTemplate = own(spec, 'jobTemplate');
  const jobSpec = isObj(jobTemplate) ? own(jobTemplate, 'spec') : undefined;
  // Only the pod template is defaulted: Kubernetes' Job defaults apply to the Jobs made from it.
  if (isObj(jobSpec)) defaultTemplate(jobSpec);
  return cj;
}

/** Kubernetes' SetDefaults_PersistentVolume: phase Pending, reclaim Retain, Filesystem. */
export function defaultPersistentVolume(pv: Obj): Obj {
  const spec = child(pv, 'spec');
  if (spec) {
    setDefault(spec, 'persistentVolumeReclaimPolicy', 'Retain');
    setDefault(spec, 'volumeMode', 'Filesystem');
  }
  const status = child(pv, 'status');
  if (status) setDefault(status, 'phase', 'Pending');
  return pv;
}

/** Kubernetes' SetDefaults_PersistentVolumeClaim: phase Pending, Filesystem. */
export function defaultPersistentVolumeClaim(pvc: Obj): Obj {
  const spec = child(pvc, 'spec');
  if (spec) setDefault(spec, 'volumeMode', 'Filesystem');
  const status = child(pvc, 'status');
  if (status) setDefault(status, 'phase', 'Pending');
  return pvc;
}

/** Kubernetes' SetDefaults_StorageClass: reclaim Delete, bind Immediate. */
export function defaultStorageClass(sc: Obj): Obj {
  setDefault(sc, 'reclaimPolicy', 'Delete');
  setDefault(sc, 'volumeBindingMode', 'Immediate');
  return sc;
}

export function defaultNode(node: Obj): Obj {
  const status = own(node, 'status');
  if (isObj(status) && isObj(own(status, 'capacity'))) {
    // A node that reports no allocatable can use all it has.
    setDefault(status, 'allocatable', { ...(own(status, 'capacity') as Obj) });
  }
  return node;
}

export function defaultNamespace(ns: Obj): Obj {
  const status = child(ns, 'status');
  if (status) setDefault(status, 'phase', 'Active');
  return ns;
}

/**
 * networking/v1's defaults: each port's protocol TCP; policyTypes, when not given,
 * Ingress always and Egress when there are egress rules (Kubernetes'
 * SetDefaults_NetworkPolicy). podSelector is a non-pointer field in Go, so a
 * missing one decodes as the empty selector (every pod of the namespace).
 */
export function defaultNetworkPolicy(np: Obj): Obj {
  const spec = child(np, 'spec');
  if (!spec) return np;
  setDefault(spec, 'podSelector', {});
  for (const direction of ['ingress', 'egress']) {
    for (const rule of objects(own(spec, direction))) {
      for (const port of objects(own(rule, 'ports'))) setDefault(port, 'protocol', 'TCP');
    }
  }
  const types = own(spec, 'policyTypes');
  if (types === undefined || types === null || (Array.isArray(types) && types.length === 0)) {
    const egress = own(spec, 'egress');
    spec.policyTypes = Array.isArray(egress) && egress.length > 0 ? ['Ingress', 'Egress'] : ['Ingress'];
  }
  return np;
}

export function defaultSecret(secret: Obj): Obj {
  setDefault(secret, 'type', 'Opaque');
  return secret;
}

/** RBAC subjects: users and groups belong to the RBAC API group, service accounts to core. */
export function defaultRoleBinding(binding: Obj): Obj {
  for (const s of objects(own(binding, 'subjects'))) {
    const kind = own(s, 'kind');
    if (kind === 'User' || kind === 'Group') setDefault(s, 'apiGroup', 'rbac.authorization.k8s.io');
    else if (kind === 'ServiceAccount') setDefault(s, 'apiGroup', '');
  }
  return binding;
}

const DEFAULTERS: Record<string, (o: Obj) => Obj> = {
  'v1/Pod': defaultPod,
  'v1/Node': defaultNode,
  'v1/Namespace': defaultNamespace,
  'v1/Secret': defaultSecret,
  'v1/ReplicationController': defaultReplicationController,
  'v1/PodTemplate': defaultPodTemplate,
  'apps/v1/ReplicaSet': defaultReplicaSet,
  'apps/v1/Deployment': defaultDeployment,
  'apps/v1/DaemonSet': defaultDaemonSet,
  'v1/PersistentVolume': defaultPersistentVolume,
  'v1/PersistentVolumeClaim': defaultPersistentVolumeClaim,
  'storage.k8s.io/v1/StorageClass': defaultStorageClass,
  'apps/v1/StatefulSet': defaultStatefulSet,
  'batch/v1/Job': defaultJob,
  'batch/v1/CronJob': defaultCronJob,
  'rbac.authorization.k8s.io/v1/RoleBinding': defaultRoleBinding,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': defaultRoleBinding,
};

/** Applies the defaults for the object's kind, in place; unknown kinds are left alone. */
export function applyDefaults<T>(obj: T): T {
  if (!isObj(obj)) return obj;
  const key = `${String(own(obj, 'apiVersion'))}/${String(own(obj, 'kind'))}`;
  if (Object.hasOwn(DEFAULTERS, key)) DEFAULTERS[key](obj);
  return obj;
}

// ---- tolerations admission adds (exported here so admission and tests agree) -----------

export const NOT_READY_TAINT_KEY = 'node.kubernetes.io/not-ready';
export const UNREACHABLE_TAINT_KEY = 'node.kubernetes.io/unreachable';
export const DEFAULT_TOLERATION_SECONDS = 300;

export interface DefaultToleration {
  key: string;
  operator: 'Exists';
  effect: 'NoExecute';
  tolerationSeconds: number;
}

/** The not-ready and unreachable NoExecute tolerations admission gives every pod. */
export function defaultTolerations(seconds = DEFAULT_TOLERATION_SECONDS): DefaultToleration[] {
  return [
    { key: NOT_READY_TAINT_KEY, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: seconds },
    { key: UNREACHABLE_TAINT_KEY, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: seconds },
  ];
}

function tolerates(tolerations: Obj[], key: string): boolean {
  return tolerations.some((t) => {
    const effect = own(t, 'effect');
    const tk = own(t, 'key');
    const effectOk = effect === undefined || effect === '' || effect === 'NoExecute';
    const keyOk = tk === key || ((tk === undefined || tk === '') && own(t, 'operator') === 'Exists');
    return effectOk && keyOk;
  });
}

/** Adds the default tolerations a pod does not already have (what the admission plugin does). */
export function addDefaultTolerations(pod: Obj, seconds = DEFAULT_TOLERATION_SECONDS): Obj {
  const spec = child(pod, 'spec');
  if (!spec) return pod;
  const existing = own(spec, 'tolerations');
  if (existing !== undefined && existing !== null && !Array.isArray(existing)) return pod;
  const list: unknown[] = Array.isArray(existing) ? existing : [];
  const objs = list.filter(isObj);
  for (const t of defaultTolerations(seconds)) if (!tolerates(objs, t.key)) list.push(t);
  spec.tolerations = list;
  return pod;
}
