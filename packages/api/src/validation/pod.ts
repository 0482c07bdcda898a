// Pod and PodSpec validation (also used for pod templates in ReplicaSets and
// Deployments), and the rules of what a pod update may change.

import { type FieldError, fieldErrors } from '../field-errors.js';
import { parseQuantity, type Quantity, QuantityParseError } from '../quantity.js';
import { validateLabels } from './meta.js';
import {
  isConfigMapKey,
  isDNS1123Label,
  isDNS1123Subdomain,
  isEnvVarName,
  isQualifiedName,
  isValidLabelValue,
  isValidPortName,
} from './names.js';
import { validatePersistentVolumeClaimSpec } from './storage.js';
import {
  arrAt,
  boolAt,
  inRange,
  intAt,
  isObj,
  jsonEqual,
  nameErrors,
  nonNegative,
  type Obj,
  objAt,
  oneOf,
  own,
  strAt,
} from './util.js';

export const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'];
export const DNS_POLICIES = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
export const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
export const PROTOCOLS = ['SCTP', 'TCP', 'UDP'];
export const TERMINATION_MESSAGE_POLICIES = ['File', 'FallbackToLogsOnError'];
export const TOLERATION_OPERATORS = ['Equal', 'Exists'];
export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** Every volume source field Kubernetes knows; exactly one must be set. */
export const VOLUME_SOURCES = [
  'hostPath',
  'emptyDir',
  'gcePersistentDisk',
  'awsElasticBlockStore',
  'gitRepo',
  'secret',
  'nfs',
  'iscsi',
  'glusterfs',
  'persistentVolumeClaim',
  'rbd',
  'flexVolume',
  'cinder',
  'cephfs',
  'flocker',
  'downwardAPI',
  'fc',
  'azureFile',
  'configMap',
  'vsphereVolume',
  'quobyte',
  'azureDisk',
  'photonPersistentDisk',
  'projected',
  'portworxVolume',
  'scaleIO',
  'storageos',
  'csi',
  'ephemeral',
  'image',
];

const PROBE_HANDLERS = ['exec', 'httpGet', 'tcpSocket', 'grpc'];
const LIFECYCLE_HANDLERS = ['exec', 'httpGet', 'tcpSocket', 'sleep'];
const STANDARD_CONTAINER_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'];

export interface PodSpecOptions {
  /** Templates of controllers allow only restartPolicy Always. */
  allowedRestartPolicies?: readonly string[];
  /** Volume names the pods will have besides spec.volumes (a StatefulSet's volumeClaimTemplates). */
  extraVolumes?: readonly string[];
}

interface SpecContext {
  errs: FieldError[];
  volumes: Set<string>;
  hostPorts: Set<string>;
}

function setFields(o: Obj, names: readonly string[]): string[] {
  return names.filter((n) => Object.hasOwn(o, n) && o[n] !== null && o[n] !== undefined);
}

/** A port given as a number (1-65535) or an IANA service name. */
function validatePortNumOrName(v: unknown, path: string, errs: FieldError[]): void {
  if (typeof v === 'number') {
    inRange(v, 1, 65535, path, errs);
  } else if (typeof v === 'string') {
    if (/^[0-9]+$/.test(v)) inRange(Number(v), 1, 65535, path, errs);
    else for (const m of isValidPortName(v)) errs.push(fieldErrors.invalid(path, v, m));
  } else if (v === undefined || v === null) {
    errs.push(fieldErrors.required(path));
  } else {
    errs.push(fieldErrors.typeInvalid(path, v, 'must be an integer or a string'));
  }
}

function validateHandler(
  v: unknown,
  handlers: readonly string[],
  path: string,
  errs: FieldError[],
  noneMessage: string,
): void {
  const h = objAt(v, path, errs);
  if (!h) return;
  const set = setFields(h, handlers);
  if (set.length === 0) {
    errs.push(fieldErrors.required(path, noneMessage));
    return;
  }
  if (set.length > 1)
    errs.push(fieldErrors.forbidden(`${path}.${set[1]}`, 'may not specify more than 1 handler type'));
  const exec = objAt(own(h, 'exec'), `${path}.exec`, errs);
  if (exec && arrAt(own(exec, 'command'), `${path}.exec.command`, errs).length === 0) {
    errs.push(fieldErrors.required(`${path}.exec.command`));
  }
  const http = objAt(own(h, 'httpGet'), `${path}.httpGet`, errs);
  if (http) {
    validatePortNumOrName(own(http, 'port'), `${path}.httpGet.port`, errs);
    const scheme = strAt(own(http, 'scheme'), `${path}.httpGet.scheme`, errs);
    oneOf(scheme, ['HTTP', 'HTTPS'], `${path}.httpGet.scheme`, errs);
  }
  const tcp = objAt(own(h, 'tcpSocket'), `${path}.tcpSocket`, errs);
  if (tcp) validatePortNumOrName(own(tcp, 'port'), `${path}.tcpSocket.port`, errs);
  const grpc = objAt(own(h, 'grpc'), `${path}.grpc`, errs);
  if (grpc) inRange(intAt(own(grpc, 'port'), `${path}.grpc.port`, errs), 1, 65535, `${path}.grpc.port`, errs);
  const sleep = objAt(own(h, 'sleep'), `${path}.sleep`, errs);
  if (sleep)
    nonNegative(intAt(own(sleep, 'seconds'), `${path}.sleep.seconds`, errs), `${path}.sleep.seconds`, errs);
}

function validateProbe(v: unknown, path: string, errs: FieldError[], successMustBeOne: boolean): void {
  const p = objAt(v, path, errs);
  if (!p) return;
  validateHandler(p, PROBE_HANDLERS, path, errs, 'must specify a handler type');
  for (const f of [
    'initialDelaySeconds',
    'timeoutSeconds',
    'periodSeconds',
    'successThreshold',
    'failureThreshold',
  ]) {
    nonNegative(intAt(own(p, f), `${path}.${f}`, errs), `${path}.${f}`, errs);
  }
  const success = intAt(own(p, 'successThreshold'), `${path}.successThreshold`, errs);
  if (successMustBeOne && success !== undefined && success !== 1) {
    errs.push(fieldErrors.invalid(`${path}.successThreshold`, success, 'must be 1'));
  }
  const grace = intAt(own(p, 'terminationGracePeriodSeconds'), `${path}.terminationGracePeriodSeconds`, errs);
  if (grace !== undefined && grace <= 0) {
    errs.push(fieldErrors.invalid(`${path}.terminationGracePeriodSeconds`, grace, 'must be greater than 0'));
  }
}

function parseResourceQuantity(v: unknown, path: string, errs: FieldError[]): Quantity | undefined {
  if (typeof v !== 'string' && typeof v !== 'number') {
    errs.push(fieldErrors.typeInvalid(path, v, 'must be a quantity'));
    return undefined;
  }
  try {
    const q = parseQuantity(typeof v === 'number' ? String(v) : v);
    if (q.sign() < 0) errs.push(fieldErrors.invalid(path, String(v), 'must be greater than or equal to 0'));
    return q;
  } catch (e) {
    errs.push(fieldErrors.invalid(path, v, e instanceof QuantityParseError ? e.reason : String(e)));
    return undefined;
  }
}

function validateResourceName(name: string, path: string, errs: FieldError[]): void {
  if (STANDARD_CONTAINER_RESOURCES.includes(name) || name.startsWith('hugepages-')) return;
  const msgs = isQualifiedName(name);
  if (msgs.length > 0) nameErrors(name, msgs, path, errs);
  else if (!name.includes('/'))
    errs.push(fieldErrors.invalid(path, name, 'must be a standard resource for containers'));
}

function validateResources(v: unknown, path: string, errs: FieldError[]): void {
  const r = objAt(v, path, errs);
  if (!r) return;
  const parsed = (which: 'limits' | 'requests'): Map<string, Quantity> => {
    const out = new Map<string, Quantity>();
    const m = objAt(own(r, which), `${path}.${which}`, errs);
    if (!m) return out;
    for (const k of Object.keys(m)) {
      const p = `${path}.${which}[${k}]`;
      validateResourceName(k, p, errs);
      const q = parseResourceQuantity(m[k], p, errs);
      if (q) out.set(k, q);
    }
    return out;
  };
  const limits = parsed('limits');
  const requests = parsed('requests');
  for (const [name, req] of requests) {
    const limit = limits.get(name);
    // Only the standard resources may be overcommitted; hugepages and extended ones are exact.
    if (limit && !STANDARD_CONTAINER_RESOURCES.includes(name) && req.cmp(limit) !== 0) {
      errs.push(
        fieldErrors.invalid(`${path}.requests[${name}]`, req.toString(), `must be equal to ${name} limit`),
      );
    } else if (limit && req.cmp(limit) > 0) {
      errs.push(
        fieldErrors.invalid(
          `${path}.requests[${name}]`,
          req.toString(),
          `must be less than or equal to ${name} limit of ${limit.toString()}`,
        ),
      );
    }
  }
}

function validateEnv(v: unknown, path: string, errs: FieldError[]): void {
  for (const [i, item] of arrAt(v, path, errs).entries()) {
    const p = `${path}[${i}]`;
    const e = objAt(item, p, errs);
    if (!e) continue;
    const name = strAt(own(e, 'name'), `${p}.name`, errs) ?? '';
    if (!name) errs.push(fieldErrors.required(`${p}.name`));
    else nameErrors(name, isEnvVarName(name), `${p}.name`, errs);
    const valueFrom = objAt(own(e, 'valueFrom'), `${p}.valueFrom`, errs);
    if (!valueFrom) continue;
    const value = strAt(own(e, 'value'), `${p}.value`, errs) ?? '';
    const sources = setFields(valueFrom, ['fieldRef', 'resourceFieldRef', 'configMapKeyRef', 'secretKeyRef']);
    if (sources.length === 0) {
      errs.push(
        fieldErrors.invalid(
          `${p}.valueFrom`,
          '',
          'must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`',
        ),
      );
    } else if (sources.length > 1) {
      errs.push(
        fieldErrors.invalid(`${p}.valueFrom`, '', 'may not have more than one field specified at a time'),
      );
    }
    if (value !== '' && sources.length > 0) {
      errs.push(fieldErrors.invalid(`${p}.valueFrom`, '', 'may not be specified when `value` is not empty'));
    }
    for (const ref of ['configMapKeyRef', 'secretKeyRef']) {
      const r = objAt(own(valueFrom, ref), `${p}.valueFrom.${ref}`, errs);
      if (!r) continue;
      const key = strAt(own(r, 'key'), `${p}.valueFrom.${ref}.key`, errs) ?? '';
      if (!key) errs.push(fieldErrors.required(`${p}.valueFrom.${ref}.key`));
      else nameErrors(key, isConfigMapKey(key), `${p}.valueFrom.${ref}.key`, errs);
    }
    const fieldRef = objAt(own(valueFrom, 'fieldRef'), `${p}.valueFrom.fieldRef`, errs);
    if (fieldRef && !strAt(own(fieldRef, 'fieldPath'), `${p}.valueFrom.fieldRef.fieldPath`, errs)) {
      errs.push(fieldErrors.required(`${p}.valueFrom.fieldRef.fieldPath`));
    }
  }
}

function validateEnvFrom(v: unknown, path: string, errs: FieldError[]): void {
  for (const [i, item] of arrAt(v, path, errs).entries()) {
    const p = `${path}[${i}]`;
    const e = objAt(item, p, errs);
    if (!e) continue;
    const prefix = strAt(own(e, 'prefix'), `${p}.prefix`, errs);
    if (prefix) nameErrors(prefix, isEnvVarName(prefix), `${p}.prefix`, errs);
    const sources = setFields(e, ['configMapRef', 'secretRef']);
    if (sources.length === 0) {
      errs.push(fieldErrors.invalid(p, '', 'must specify one of: `configMapRef` or `secretRef`'));
    } else if (sources.length > 1) {
      errs.push(fieldErrors.invalid(p, '', 'may not have more than one field specified at a time'));
    }
  }
}

function validatePorts(v: unknown, path: string, ctx: SpecContext): void {
  const { errs } = ctx;
  const names = new Set<string>();
  for (const [i, item] of arrAt(v, path, errs).entries()) {
    const p = `${path}[${i}]`;
    const port = objAt(item, p, errs);
    if (!port) continue;
    const name = strAt(own(port, 'name'), `${p}.name`, errs);
    if (name) {
      nameErrors(name, isValidPortName(name), `${p}.name`, errs);
      if (names.has(name)) errs.push(fieldErrors.duplicate(`${p}.name`, name));
      names.add(name);
    }
    const containerPort = intAt(own(port, 'containerPort'), `${p}.containerPort`, errs);
    if (!containerPort) errs.push(fieldErrors.required(`${p}.containerPort`));
    else inRange(containerPort, 1, 65535, `${p}.containerPort`, errs);
    const hostPort = intAt(own(port, 'hostPort'), `${p}.hostPort`, errs);
    if (hostPort) inRange(hostPort, 1, 65535, `${p}.hostPort`, errs);
    const protocol = strAt(own(port, 'protocol'), `${p}.protocol`, errs);
    if (!protocol) errs.push(fieldErrors.required(`${p}.protocol`));
    else oneOf(protocol, PROTOCOLS, `${p}.protocol`, errs);
    if (hostPort) {
      const key = `${hostPort}/${protocol ?? ''}`;
      if (ctx.hostPorts.has(key)) errs.push(fieldErrors.duplicate(`${p}.hostPort`, key));
      ctx.hostPorts.add(key);
    }
  }
}

function validateVolumeMounts(v: unknown, path: string, ctx: SpecContext): void {
  const { errs } = ctx;
  const mountPaths = new Set<string>();
  for (const [i, item] of arrAt(v, path, errs).entries()) {
    const p = `${path}[${i}]`;
    const m = objAt(item, p, errs);
    if (!m) continue;
    const name = strAt(own(m, 'name'), `${p}.name`, errs) ?? '';
    if (!name) errs.push(fieldErrors.required(`${p}.name`));
    else if (!ctx.volumes.has(name)) errs.push(fieldErrors.notFound(`${p}.name`, name));
    const mountPath = strAt(own(m, 'mountPath'), `${p}.mountPath`, errs) ?? '';
    if (!mountPath) errs.push(fieldErrors.required(`${p}.mountPath`));
    else if (mountPaths.has(mountPath))
      errs.push(fieldErrors.invalid(`${p}.mountPath`, mountPath, 'must be unique'));
    mountPaths.add(mountPath);
    const subPath = strAt(own(m, 'subPath'), `${p}.subPath`, errs);
    if (subPath && (subPath.startsWith('/') || subPath.split('/').includes('..'))) {
      errs.push(fieldErrors.invalid(`${p}.subPath`, subPath, "must be a relative path without '..'"));
    }
  }
}

/** A raw block device handed to the container: a named volume at an absolute path. */
function validateVolumeDevices(v: unknown, path: string, ctx: SpecContext): void {
  const { errs } = ctx;
  const devicePaths = new Set<string>();
  for (const [i, item] of arrAt(v, path, errs).entries()) {
    const p = `${path}[${i}]`;
    const d = objAt(item, p, errs);
    if (!d) continue;
    const name = strAt(own(d, 'name'), `${p}.name`, errs) ?? '';
    if (!name) errs.push(fieldErrors.required(`${p}.name`));
    else if (!ctx.volumes.has(name)) errs.push(fieldErrors.notFound(`${p}.name`, name));
    const devicePath = strAt(own(d, 'devicePath'), `${p}.devicePath`, errs) ?? '';
    if (!devicePath) errs.push(fieldErrors.required(`${p}.devicePath`));
    else if (devicePaths.has(devicePath))
      errs.push(fieldErrors.invalid(`${p}.devicePath`, devicePath, 'must be unique'));
    else if (!devicePath.startsWith('/') || devicePath.split('/').includes('..'))
      errs.push(fieldErrors.invalid(`${p}.devicePath`, devicePath, "must be an absolute path without '..'"));
    devicePaths.add(devicePath);
  }
}

function validateContainer(c: Obj, p: string, ctx: SpecContext, init: boolean): void {
  const { errs } = ctx;
  const image = strAt(own(c, 'image'), `${p}.image`, errs) ?? '';
  if (!image) errs.push(fieldErrors.required(`${p}.image`));
  else if (image.trim() !== image) {
    errs.push(fieldErrors.invalid(`${p}.image`, image, 'must not have leading or trailing whitespace'));
  }
  arrAt(own(c, 'command'), `${p}.command`, errs);
  arrAt(own(c, 'args'), `${p}.args`, errs);
  validatePorts(own(c, 'ports'), `${p}.ports`, ctx);
  validateEnv(own(c, 'env'), `${p}.env`, errs);
  validateEnvFrom(own(c, 'envFrom'), `${p}.envFrom`, errs);
  validateVolumeMounts(own(c, 'volumeMounts'), `${p}.volumeMounts`, ctx);
  validateVolumeDevices(own(c, 'volumeDevices'), `${p}.volumeDevices`, ctx);
  validateResources(own(c, 'resources'), `${p}.resources`, errs);

  const pull = strAt(own(c, 'imagePullPolicy'), `${p}.imagePullPolicy`, errs);
  if (!pull) errs.push(fieldErrors.required(`${p}.imagePullPolicy`));
  else oneOf(pull, PULL_POLICIES, `${p}.imagePullPolicy`, errs);
  const tmp = strAt(own(c, 'terminationMessagePolicy'), `${p}.terminationMessagePolicy`, errs);
  if (!tmp) errs.push(fieldErrors.required(`${p}.terminationMessagePolicy`));
  else oneOf(tmp, TERMINATION_MESSAGE_POLICIES, `${p}.terminationMessagePolicy`, errs);

  const sidecar = init && own(c, 'restartPolicy') === 'Always';
  if (init)
    oneOf(strAt(own(c, 'restartPolicy'), `${p}.restartPolicy`, errs), ['Always'], `${p}.restartPolicy`, errs);
  else if (own(c, 'restartPolicy') !== undefined) {
    errs.push(fieldErrors.forbidden(`${p}.restartPolicy`, 'may not be set for non-init containers'));
  }
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    if (own(c, probe) === undefined || own(c, probe) === null) continue;
    if (init && !sidecar) {
      errs.push(
        fieldErrors.forbidden(
          `${p}.${probe}`,
          'may not be set for init containers without restartPolicy=Always',
        ),
      );
      continue;
    }
    validateProbe(own(c, probe), `${p}.${probe}`, errs, probe !== 'readinessProbe');
  }
  const lifecycle = objAt(own(c, 'lifecycle'), `${p}.lifecycle`, errs);
  if (lifecycle) {
    for (const hook of ['postStart', 'preStop']) {
      if (own(lifecycle, hook) === undefined) continue;
      validateHandler(
        own(lifecycle, hook),
        LIFECYCLE_HANDLERS,
        `${p}.lifecycle.${hook}`,
        errs,
        'must specify a handler type',
      );
    }
  }
}

/** What an ephemeral container may not have: it is never restarted, probed, exposed or given resources. */
const EPHEMERAL_FORBIDDEN_FIELDS = [
  'lifecycle',
  'livenessProbe',
  'ports',
  'readinessProbe',
  'resizePolicy',
  'resources',
  'restartPolicy',
  'startupProbe',
];

function isEmptyValue(v: unknown): boolean {
  if (v === undefined || v === null || v === '') return true;
  if (Array.isArray(v)) return v.length === 0;
  return isObj(v) && Object.values(v).every(isEmptyValue);
}

/**
 * A pod's ephemeral containers (kubectl debug): names unique across all of the pod's
 * containers, none of the forbidden fields, no subPath mounts, and a targetContainerName
 * naming one of the pod's (init) containers. `names` holds the others' names.
 */
function validateEphemeralContainers(spec: Obj, path: string, ctx: SpecContext, names: Set<string>): void {
  const { errs } = ctx;
  const targets = new Set(names);
  const field = `${path}.ephemeralContainers`;
  for (const [i, item] of arrAt(own(spec, 'ephemeralContainers'), field, errs).entries()) {
    const p = `${field}[${i}]`;
    const c = objAt(item, p, errs);
    if (!c) continue;
    const name = strAt(own(c, 'name'), `${p}.name`, errs) ?? '';
    if (!name) errs.push(fieldErrors.required(`${p}.name`));
    else {
      nameErrors(name, isDNS1123Label(name), `${p}.name`, errs);
      if (names.has(name)) errs.push(fieldErrors.duplicate(`${p}.name`, name));
      names.add(name);
    }
    const rest: Obj = { ...c };
    for (const f of EPHEMERAL_FORBIDDEN_FIELDS) {
      // Empty is unset, as Go's zero values are: kubectl debug sends `resources: {}`.
      if (isEmptyValue(own(c, f))) continue;
      errs.push(fieldErrors.forbidden(`${p}.${f}`, 'cannot be set for an Ephemeral Container'));
      delete rest[f];
    }
    for (const [j, m] of arrAt(own(c, 'volumeMounts'), `${p}.volumeMounts`, errs).entries()) {
      if (isObj(m) && own(m, 'subPath'))
        errs.push(
          fieldErrors.forbidden(
            `${p}.volumeMounts[${j}].subPath`,
            'cannot be set for an Ephemeral Container',
          ),
        );
    }
    const target = strAt(own(c, 'targetContainerName'), `${p}.targetContainerName`, errs);
    if (target && !targets.has(target)) errs.push(fieldErrors.notFound(`${p}.targetContainerName`, target));
    validateContainer(rest, p, ctx, false);
  }
}

function validateVolumes(v: unknown, path: string, ctx: SpecContext): void {
  const { errs } = ctx;
  for (const [i, item] of arrAt(v, path, errs).entries()) {
    const p = `${path}[${i}]`;
    const vol = objAt(item, p, errs);
    if (!vol) continue;
    const name = strAt(own(vol, 'name'), `${p}.name`, errs) ?? '';
    if (!name) errs.push(fieldErrors.required(`${p}.name`));
    else {
      nameErrors(name, isDNS1123Label(name), `${p}.name`, errs);
      if (ctx.volumes.has(name)) errs.push(fieldErrors.duplicate(`${p}.name`, name));
      ctx.volumes.add(name);
    }
    const sources = setFields(vol, VOLUME_SOURCES);
    if (sources.length === 0) errs.push(fieldErrors.required(p, 'must specify a volume type'));
    else if (sources.length > 1)
      errs.push(fieldErrors.forbidden(`${p}.${sources[1]}`, 'may not specify more than 1 volume type'));

    const hostPath = objAt(own(vol, 'hostPath'), `${p}.hostPath`, errs);
    if (hostPath && !strAt(own(hostPath, 'path'), `${p}.hostPath.path`, errs))
      errs.push(fieldErrors.required(`${p}.hostPath.path`));
    const emptyDir = objAt(own(vol, 'emptyDir'), `${p}.emptyDir`, errs);
    if (emptyDir) {
      oneOf(
        strAt(own(emptyDir, 'medium'), `${p}.emptyDir.medium`, errs),
        ['', 'Memory', 'HugePages'],
        `${p}.emptyDir.medium`,
        errs,
      );
      if (own(emptyDir, 'sizeLimit') !== undefined)
        parseResourceQuantity(own(emptyDir, 'sizeLimit'), `${p}.emptyDir.sizeLimit`, errs);
    }
    for (const [src, nameField] of [
      ['configMap', 'name'],
      ['secret', 'secretName'],
    ] as const) {
      const s = objAt(own(vol, src), `${p}.${src}`, errs);
      if (!s) continue;
      const ref = strAt(own(s, nameField), `${p}.${src}.${nameField}`, errs) ?? '';
      if (!ref) errs.push(fieldErrors.required(`${p}.${src}.${nameField}`));
      const mode = intAt(own(s, 'defaultMode'), `${p}.${src}.defaultMode`, errs);
      if (mode !== undefined && (mode < 0 || mode > 0o777)) {
        errs.push(
          fieldErrors.invalid(
            `${p}.${src}.defaultMode`,
            mode,
            'must be a number between 0 and 0777 (octal), both inclusive',
          ),
        );
      }
      for (const [j, it] of arrAt(own(s, 'items'), `${p}.${src}.items`, errs).entries()) {
        const ip = `${p}.${src}.items[${j}]`;
        const kp = objAt(it, ip, errs);
        if (!kp) continue;
        if (!strAt(own(kp, 'key'), `${ip}.key`, errs)) errs.push(fieldErrors.required(`${ip}.key`));
        const path2 = strAt(own(kp, 'path'), `${ip}.path`, errs) ?? '';
        if (!path2) errs.push(fieldErrors.required(`${ip}.path`));
        else if (path2.startsWith('/'))
          errs.push(fieldErrors.invalid(`${ip}.path`, path2, 'must be a relative path'));
        else if (path2.split('/').includes('..'))
          errs.push(fieldErrors.invalid(`${ip}.path`, path2, "must not contain '..'"));
      }
    }
    const ephemeral = objAt(own(vol, 'ephemeral'), `${p}.ephemeral`, errs);
    if (ephemeral) validateEphemeralVolume(ephemeral, `${p}.ephemeral`, errs);
    const pvc = objAt(own(vol, 'persistentVolumeClaim'), `${p}.persistentVolumeClaim`, errs);
    if (pvc && !strAt(own(pvc, 'claimName'), `${p}.persistentVolumeClaim.claimName`, errs)) {
      errs.push(fieldErrors.required(`${p}.persistentVolumeClaim.claimName`));
    }
  }
}

/**
 * An ephemeral volume's claim template: metadata as a claim's (without a name, which is
 * the pod's and the volume's) and a valid claim spec.
 */
function validateEphemeralVolume(e: Obj, path: string, errs: FieldError[]): void {
  const tp = `${path}.volumeClaimTemplate`;
  const template = own(e, 'volumeClaimTemplate');
  if (template === undefined || template === null) {
    errs.push(fieldErrors.required(tp));
    return;
  }
  const t = objAt(template, tp, errs);
  if (!t) return;
  const meta = own(t, 'metadata');
  if (isObj(meta)) {
    validateLabels(own(meta, 'labels'), `${tp}.metadata.labels`, errs);
    for (const f of ['name', 'namespace', 'generateName', 'ownerReferences', 'finalizers']) {
      if (own(meta, f) !== undefined && own(meta, f) !== '')
        errs.push(fieldErrors.forbidden(`${tp}.metadata.${f}`, 'field not supported'));
    }
  }
  const spec = objAt(own(t, 'spec'), `${tp}.spec`, errs);
  if (!spec) errs.push(fieldErrors.required(`${tp}.spec`));
  else validatePersistentVolumeClaimSpec(spec, `${tp}.spec`, errs);
}

function validateTolerations(v: unknown, path: string, errs: FieldError[]): void {
  for (const [i, item] of arrAt(v, path, errs).entries()) {
    const p = `${path}[${i}]`;
    const t = objAt(item, p, errs);
    if (!t) continue;
    const key = strAt(own(t, 'key'), `${p}.key`, errs) ?? '';
    if (key) nameErrors(key, isQualifiedName(key), `${p}.key`, errs);
    const operator = strAt(own(t, 'operator'), `${p}.operator`, errs) ?? 'Equal';
    const value = strAt(own(t, 'value'), `${p}.value`, errs) ?? '';
    if (!key && operator !== 'Exists') {
      errs.push(
        fieldErrors.invalid(
          `${p}.operator`,
          operator,
          'operator must be Exists when `key` is empty, which means "match all values and all keys"',
        ),
      );
    }
    if (operator === 'Equal') nameErrors(value, isValidLabelValue(value), `${p}.value`, errs);
    else if (operator === 'Exists') {
      if (value)
        errs.push(fieldErrors.invalid(`${p}.operator`, t, "value must be empty when `operator` is 'Exists'"));
    } else errs.push(fieldErrors.notSupported(`${p}.operator`, operator, TOLERATION_OPERATORS));
    const effect = strAt(own(t, 'effect'), `${p}.effect`, errs);
    if (effect) oneOf(effect, TAINT_EFFECTS, `${p}.effect`, errs);
    const seconds = intAt(own(t, 'tolerationSeconds'), `${p}.tolerationSeconds`, errs);
    if (seconds !== undefined && effect !== 'NoExecute') {
      errs.push(
        fieldErrors.invalid(
          `${p}.effect`,
          effect ?? '',
          "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ),
      );
    }
  }
}

/** Validates a PodSpec at `path` ("spec" for pods, "spec.template.spec" for templates). */
export function validatePodSpec(
  v: unknown,
  path: string,
  errs: FieldError[],
  opts: PodSpecOptions = {},
): void {
  const spec = objAt(v, path, errs);
  if (!spec) {
    errs.push(fieldErrors.required(`${path}.containers`));
    return;
  }
  const ctx: SpecContext = { errs, volumes: new Set(), hostPorts: new Set() };
  validateVolumes(own(spec, 'volumes'), `${path}.volumes`, ctx);
  for (const name of opts.extraVolumes ?? []) ctx.volumes.add(name);

  const containerNames = new Set<string>();
  const eachContainer = (field: 'containers' | 'initContainers', init: boolean) => {
    const list = arrAt(own(spec, field), `${path}.${field}`, errs);
    if (!init && list.length === 0) errs.push(fieldErrors.required(`${path}.${field}`));
    for (const [i, item] of list.entries()) {
      const p = `${path}.${field}[${i}]`;
      const c = objAt(item, p, errs);
      if (!c) continue;
      const name = strAt(own(c, 'name'), `${p}.name`, errs) ?? '';
      if (!name) errs.push(fieldErrors.required(`${p}.name`));
      else {
        nameErrors(name, isDNS1123Label(name), `${p}.name`, errs);
        if (containerNames.has(name)) errs.push(fieldErrors.duplicate(`${p}.name`, name));
        containerNames.add(name);
      }
      validateContainer(c, p, ctx, init);
    }
  };
  eachContainer('initContainers', true);
  eachContainer('containers', false);
  validateEphemeralContainers(spec, path, ctx, containerNames);

  const restart = strAt(own(spec, 'restartPolicy'), `${path}.restartPolicy`, errs);
  if (!restart) errs.push(fieldErrors.required(`${path}.restartPolicy`));
  else oneOf(restart, opts.allowedRestartPolicies ?? RESTART_POLICIES, `${path}.restartPolicy`, errs);
  const dns = strAt(own(spec, 'dnsPolicy'), `${path}.dnsPolicy`, errs);
  if (!dns) errs.push(fieldErrors.required(`${path}.dnsPolicy`));
  else oneOf(dns, DNS_POLICIES, `${path}.dnsPolicy`, errs);

  const grace = intAt(
    own(spec, 'terminationGracePeriodSeconds'),
    `${path}.terminationGracePeriodSeconds`,
    errs,
  );
  nonNegative(grace, `${path}.terminationGracePeriodSeconds`, errs);
  const deadline = intAt(own(spec, 'activeDeadlineSeconds'), `${path}.activeDeadlineSeconds`, errs);
  inRange(deadline, 1, 2147483647, `${path}.activeDeadlineSeconds`, errs);

  for (const f of ['nodeName', 'serviceAccountName', 'schedulerName', 'priorityClassName']) {
    const s = strAt(own(spec, f), `${path}.${f}`, errs);
    if (s) nameErrors(s, isDNS1123Subdomain(s), `${path}.${f}`, errs);
  }
  const hostname = strAt(own(spec, 'hostname'), `${path}.hostname`, errs);
  if (hostname) nameErrors(hostname, isDNS1123Label(hostname), `${path}.hostname`, errs);
  for (const f of [
    'hostNetwork',
    'hostPID',
    'hostIPC',
    'enableServiceLinks',
    'automountServiceAccountToken',
  ]) {
    boolAt(own(spec, f), `${path}.${f}`, errs);
  }
  validateLabels(own(spec, 'nodeSelector'), `${path}.nodeSelector`, errs);
  validateTolerations(own(spec, 'tolerations'), `${path}.tolerations`, errs);
  for (const [i, s] of arrAt(own(spec, 'imagePullSecrets'), `${path}.imagePullSecrets`, errs).entries()) {
    objAt(s, `${path}.imagePullSecrets[${i}]`, errs);
  }
  objAt(own(spec, 'securityContext'), `${path}.securityContext`, errs);
  objAt(own(spec, 'affinity'), `${path}.affinity`, errs);
}

/** The mutable-fields message Kubernetes gives for a forbidden pod spec change. */
export const POD_UPDATE_FORBIDDEN =
  'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

function tolerationMatches(oldT: Obj, newT: Obj): boolean {
  if (jsonEqual(oldT, newT)) return true;
  // An existing NoExecute toleration may only shorten its tolerationSeconds.
  const a = { ...oldT, tolerationSeconds: undefined };
  const b = { ...newT, tolerationSeconds: undefined };
  if (!jsonEqual(a, b)) return false;
  const oldS = own(oldT, 'tolerationSeconds');
  const newS = own(newT, 'tolerationSeconds');
  return typeof oldS === 'number' && typeof newS === 'number' && newS <= oldS;
}

/** What a pod update may change in the spec, beyond what validatePodSpec checks. */
export function validatePodSpecUpdate(newSpecV: unknown, oldSpecV: unknown, errs: FieldError[]): void {
  const newSpec = isObj(newSpecV) ? newSpecV : {};
  const oldSpec = isObj(oldSpecV) ? oldSpecV : {};

  const newDeadline = own(newSpec, 'activeDeadlineSeconds');
  const oldDeadline = own(oldSpec, 'activeDeadlineSeconds');
  if (typeof oldDeadline === 'number') {
    if (newDeadline === undefined || newDeadline === null) {
      errs.push(
        fieldErrors.invalid(
          'spec.activeDeadlineSeconds',
          null,
          'must not update from a positive integer to nil value',
        ),
      );
    } else if (typeof newDeadline === 'number' && newDeadline > oldDeadline) {
      errs.push(
        fieldErrors.invalid(
          'spec.activeDeadlineSeconds',
          newDeadline,
          'must be less than or equal to previous value',
        ),
      );
    }
  }

  const newTolerations = Array.isArray(own(newSpec, 'tolerations'))
    ? (own(newSpec, 'tolerations') as unknown[])
    : [];
  const oldTolerations = Array.isArray(own(oldSpec, 'tolerations'))
    ? (own(oldSpec, 'tolerations') as unknown[])
    : [];
  for (const oldT of oldTolerations) {
    if (!isObj(oldT)) continue;
    if (!newTolerations.some((n) => isObj(n) && tolerationMatches(oldT, n))) {
      errs.push(
        fieldErrors.forbidden(
          'spec.tolerations',
          'existing toleration can not be modified except its tolerationSeconds',
        ),
      );
      break;
    }
  }

  // Copy the mutable fields from old into new; whatever still differs was not allowed.
  const munged = clone(newSpec);
  for (const field of ['containers', 'initContainers']) {
    const n = own(munged, field);
    const o = own(oldSpec, field);
    if (Array.isArray(n) && Array.isArray(o) && n.length === o.length) {
      n.forEach((c, i) => {
        if (isObj(c) && isObj(o[i])) c.image = own(o[i] as Obj, 'image');
      });
    }
  }
  munged.activeDeadlineSeconds = oldDeadline;
  munged.tolerations = own(oldSpec, 'tolerations');
  const oldGrace = own(oldSpec, 'terminationGracePeriodSeconds');
  if (typeof oldGrace === 'number' && oldGrace < 0 && own(newSpec, 'terminationGracePeriodSeconds') === 1) {
    munged.terminationGracePeriodSeconds = oldGrace;
  }
  if (!jsonEqual(munged, oldSpec)) {
    const changed = [...new Set([...Object.keys(munged), ...Object.keys(oldSpec)])]
      .filter((k) => !jsonEqual(own(munged, k), own(oldSpec, k)))
      .sort()
      .map((k) => `spec.${k}`);
    errs.push(fieldErrors.forbidden('spec', `${POD_UPDATE_FORBIDDEN}\n  changed: ${changed.join(', ')}`));
  }
}

/** A pod is created without ephemeral containers: they are only added to a running pod. */
export function validatePodCreate(pod: Obj, errs: FieldError[]): void {
  const spec = own(pod, 'spec');
  const list = isObj(spec) ? own(spec, 'ephemeralContainers') : undefined;
  if (Array.isArray(list) && list.length > 0)
    errs.push(fieldErrors.forbidden('spec.ephemeralContainers', 'cannot be set on create'));
}

/**
 * The pods/ephemeralcontainers rule: existing ephemeral containers stay as they are;
 * only new ones may be added.
 */
export function validateEphemeralContainersAdditions(newPod: Obj, oldPod: Obj, errs: FieldError[]): void {
  const list = (pod: Obj) => {
    const spec = own(pod, 'spec');
    const v = isObj(spec) ? own(spec, 'ephemeralContainers') : undefined;
    return (Array.isArray(v) ? v : []).filter(isObj);
  };
  const now = new Map(list(newPod).map((c) => [own(c, 'name'), c]));
  for (const [i, old] of list(oldPod).entries()) {
    const name = String(own(old, 'name'));
    const cur = now.get(name);
    if (!cur) {
      errs.push(
        fieldErrors.forbidden(
          'spec.ephemeralContainers',
          `existing ephemeral containers "${name}" may not be removed`,
        ),
      );
    } else if (!jsonEqual(cur, old)) {
      errs.push(
        fieldErrors.forbidden(
          `spec.ephemeralContainers[${i}]`,
          `existing ephemeral containers "${name}" may not be changed`,
        ),
      );
    }
  }
}

export function validatePodUpdateImmutables(newPod: Obj, oldPod: Obj, errs: FieldError[]): void {
  validatePodSpecUpdate(own(newPod, 'spec'), own(oldPod, 'spec'), errs);
}

/** A Binding (pods/binding): which node the pod goes to. */
export function validateBindingTarget(binding: Obj, errs: FieldError[]): void {
  const target = objAt(own(binding, 'target'), 'target', errs);
  if (!target) {
    errs.push(fieldErrors.required('target.name'));
    return;
  }
  const kind = strAt(own(target, 'kind'), 'target.kind', errs) ?? '';
  if (kind && kind !== 'Node') errs.push(fieldErrors.notSupported('target.kind', kind, ['Node', '<empty>']));
  const name = strAt(own(target, 'name'), 'target.name', errs) ?? '';
  if (!name) errs.push(fieldErrors.required('target.name'));
  else nameErrors(name, isDNS1123Subdomain(name), 'target.name', errs);
}
