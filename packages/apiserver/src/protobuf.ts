// Just enough of Kubernetes' protobuf encoding to read what kubectl's typed
// clients send as protobuf: access reviews (`kubectl auth can-i`) and the
// objects of `kubectl create <kind>` (namespace, configmap, secret,
// deployment, ...). Every other request body is JSON or YAML; responses are
// always JSON.
import { badRequest } from '@kubit/api';

export const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]); // "k8s\0"

type Fields = Map<number, (Buffer | number)[]>;

/** Splits a protobuf message into its fields (varints as numbers, length-delimited as bytes). */
function fields(buf: Buffer): Fields {
  const out: Fields = new Map();
  let i = 0;
  const varint = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (i >= buf.length) throw badRequest('protobuf: truncated varint');
      const b = buf[i++];
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
      shift += 7;
      if (shift > 63) throw badRequest('protobuf: varint too long');
    }
  };
  while (i < buf.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    let value: Buffer | number;
    if (wire === 0) value = varint();
    else if (wire === 2) {
      const len = varint();
      if (i + len > buf.length) throw badRequest('protobuf: truncated field');
      value = buf.subarray(i, i + len);
      i += len;
    } else if (wire === 1) {
      i += 8;
      value = 0;
    } else if (wire === 5) {
      i += 4;
      value = 0;
    } else throw badRequest(`protobuf: unsupported wire type ${wire}`);
    const list = out.get(field) ?? [];
    list.push(value);
    out.set(field, list);
  }
  return out;
}

function strings(f: Fields, n: number): string[] {
  return (f.get(n) ?? []).filter((v): v is Buffer => Buffer.isBuffer(v)).map((b) => b.toString('utf8'));
}
function string(f: Fields, n: number): string | undefined {
  return strings(f, n)[0];
}
function message(f: Fields, n: number): Fields | undefined {
  const b = (f.get(n) ?? []).find((v): v is Buffer => Buffer.isBuffer(v));
  return b ? fields(b) : undefined;
}

function resourceAttributes(f: Fields): Record<string, string> {
  const names = ['', 'namespace', 'verb', 'group', 'version', 'resource', 'subresource', 'name'];
  const out: Record<string, string> = {};
  for (let n = 1; n < names.length; n++) {
    const v = string(f, n);
    if (v !== undefined) out[names[n]] = v;
  }
  return out;
}

function nonResourceAttributes(f: Fields): Record<string, string> {
  const out: Record<string, string> = {};
  const path = string(f, 1);
  const verb = string(f, 2);
  if (path !== undefined) out.path = path;
  if (verb !== undefined) out.verb = verb;
  return out;
}

// ---- schema-driven decoding of the kinds kubectl's typed clients create ----

type PType =
  | 'string'
  | 'bytes'
  // Go's non-pointer int and bool fields: always on the wire, so a zero is
  // dropped, as their JSON (omitempty) leaves it out.
  | 'int'
  | 'bool'
  // Pointer fields (*int32, *bool): on the wire only when set, zero included.
  | '*int'
  | '*bool'
  | 'time'
  | 'microtime'
  | 'quantity'
  | 'intOrString'
  | { msg: PMessage }
  | { map: PType }
  | { list: PType };
/** Field number → [JSON name, type]. */
export type PMessage = Record<number, [string, PType]>;

const list = (t: PType): PType => ({ list: t });
const map = (t: PType): PType => ({ map: t });
const msg = (m: PMessage): PType => ({ msg: m });

function toInt(v: number): number {
  // int64 negatives arrive as 10-byte varints (two's complement).
  return v >= 2 ** 63 ? v - 2 ** 64 : v;
}

function timeText(f: Fields, micro: boolean): string {
  const seconds = toInt(Number((f.get(1) ?? [0])[0]));
  const nanos = Number((f.get(2) ?? [0])[0]);
  const d = new Date(seconds * 1000);
  const base = d.toISOString().slice(0, 19);
  if (!micro) return `${base}Z`;
  return `${base}.${String(Math.floor(nanos / 1000)).padStart(6, '0')}Z`;
}

function decodeValue(v: Buffer | number, t: PType, path: string): unknown {
  const needBytes = (): Buffer => {
    if (!Buffer.isBuffer(v)) throw badRequest(`protobuf: field ${path} has the wrong wire type`);
    return v;
  };
  const needNumber = (): number => {
    if (typeof v !== 'number') throw badRequest(`protobuf: field ${path} has the wrong wire type`);
    return v;
  };
  if (t === 'string') return needBytes().toString('utf8');
  if (t === 'bytes') return needBytes().toString('base64');
  if (t === 'int' || t === '*int') return toInt(needNumber());
  if (t === 'bool' || t === '*bool') return needNumber() !== 0;
  if (t === 'time' || t === 'microtime') return timeText(fields(needBytes()), t === 'microtime');
  if (t === 'quantity') return string(fields(needBytes()), 1) ?? '0';
  if (t === 'intOrString') {
    const f = fields(needBytes());
    return Number((f.get(1) ?? [0])[0]) === 1 ? (string(f, 3) ?? '') : toInt(Number((f.get(2) ?? [0])[0]));
  }
  if ('msg' in t) return decodeMessage(needBytes(), t.msg, path);
  throw badRequest(`protobuf: cannot decode field ${path}`);
}

export function decodeMessage(buf: Buffer, schema: PMessage, path = ''): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [num, values] of fields(buf)) {
    const spec = schema[num];
    if (!spec) continue; // a field Kubit does not model: dropped, as typed decoding does
    const [name, type] = spec;
    const p = path ? `${path}.${name}` : name;
    if (typeof type === 'object' && 'list' in type) {
      out[name] = values.map((v) => decodeValue(v, type.list, p));
    } else if (typeof type === 'object' && 'map' in type) {
      const m: Record<string, unknown> = {};
      for (const v of values) {
        if (!Buffer.isBuffer(v)) throw badRequest(`protobuf: field ${p} has the wrong wire type`);
        const e = fields(v);
        const key = string(e, 1) ?? '';
        const raw = (e.get(2) ?? [])[0];
        m[key] =
          raw === undefined
            ? type.map === 'string' || type.map === 'bytes'
              ? ''
              : null
            : decodeValue(raw, type.map, `${p}[${key}]`);
      }
      out[name] = m;
    } else {
      const v = decodeValue(values[values.length - 1], type, p);
      // Go's encoder writes empty strings, zeros and falses that its JSON
      // would omit; so do we, or the object would differ from the JSON one.
      const zero = v === '' || (type === 'int' && v === 0) || (type === 'bool' && v === false);
      if (!zero) out[name] = v;
    }
  }
  return out;
}

const ownerReference: PMessage = {
  1: ['kind', 'string'],
  3: ['name', 'string'],
  4: ['uid', 'string'],
  5: ['apiVersion', 'string'],
  6: ['controller', '*bool'],
  7: ['blockOwnerDeletion', '*bool'],
};
const objectMeta: PMessage = {
  1: ['name', 'string'],
  2: ['generateName', 'string'],
  3: ['namespace', 'string'],
  5: ['uid', 'string'],
  6: ['resourceVersion', 'string'],
  7: ['generation', 'int'],
  9: ['deletionTimestamp', 'time'],
  10: ['deletionGracePeriodSeconds', '*int'],
  11: ['labels', map('string')],
  12: ['annotations', map('string')],
  13: ['ownerReferences', list(msg(ownerReference))],
  14: ['finalizers', list('string')],
};
const objectReference: PMessage = {
  1: ['kind', 'string'],
  2: ['namespace', 'string'],
  3: ['name', 'string'],
  4: ['uid', 'string'],
  5: ['apiVersion', 'string'],
  6: ['resourceVersion', 'string'],
  7: ['fieldPath', 'string'],
};
const localRef: PMessage = { 1: ['name', 'string'] };
const container: PMessage = {
  1: ['name', 'string'],
  2: ['image', 'string'],
  3: ['command', list('string')],
  4: ['args', list('string')],
  5: ['workingDir', 'string'],
  6: [
    'ports',
    list(
      msg({
        1: ['name', 'string'],
        2: ['hostPort', 'int'],
        3: ['containerPort', 'int'],
        4: ['protocol', 'string'],
        5: ['hostIP', 'string'],
      }),
    ),
  ],
  7: ['env', list(msg({ 1: ['name', 'string'], 2: ['value', 'string'] }))],
  8: ['resources', msg({ 1: ['limits', map('quantity')], 2: ['requests', map('quantity')] })],
  9: [
    'volumeMounts',
    list(
      msg({
        1: ['name', 'string'],
        2: ['readOnly', 'bool'],
        3: ['mountPath', 'string'],
        4: ['subPath', 'string'],
      }),
    ),
  ],
  13: ['terminationMessagePath', 'string'],
  14: ['imagePullPolicy', 'string'],
  16: ['stdin', 'bool'],
  17: ['stdinOnce', 'bool'],
  18: ['tty', 'bool'],
  20: ['terminationMessagePolicy', 'string'],
  24: ['restartPolicy', 'string'],
};
const podSpec: PMessage = {
  2: ['containers', list(msg(container))],
  3: ['restartPolicy', 'string'],
  4: ['terminationGracePeriodSeconds', '*int'],
  5: ['activeDeadlineSeconds', '*int'],
  6: ['dnsPolicy', 'string'],
  7: ['nodeSelector', map('string')],
  8: ['serviceAccountName', 'string'],
  9: ['serviceAccount', 'string'],
  10: ['nodeName', 'string'],
  11: ['hostNetwork', 'bool'],
  15: ['imagePullSecrets', list(msg(localRef))],
  16: ['hostname', 'string'],
  17: ['subdomain', 'string'],
  19: ['schedulerName', 'string'],
  20: ['initContainers', list(msg(container))],
  22: [
    'tolerations',
    list(
      msg({
        1: ['key', 'string'],
        2: ['operator', 'string'],
        3: ['value', 'string'],
        4: ['effect', 'string'],
        5: ['tolerationSeconds', '*int'],
      }),
    ),
  ],
  24: ['priorityClassName', 'string'],
  25: ['priority', '*int'],
};
const policyRule: PMessage = {
  1: ['verbs', list('string')],
  2: ['apiGroups', list('string')],
  3: ['resources', list('string')],
  4: ['resourceNames', list('string')],
  5: ['nonResourceURLs', list('string')],
};
const binding: PMessage = {
  1: ['metadata', msg(objectMeta)],
  2: [
    'subjects',
    list(
      msg({
        1: ['kind', 'string'],
        2: ['apiGroup', 'string'],
        3: ['name', 'string'],
        4: ['namespace', 'string'],
      }),
    ),
  ],
  3: ['roleRef', msg({ 1: ['apiGroup', 'string'], 2: ['kind', 'string'], 3: ['name', 'string'] })],
};

const labelSelector: PMessage = {
  1: ['matchLabels', map('string')],
  2: [
    'matchExpressions',
    list(msg({ 1: ['key', 'string'], 2: ['operator', 'string'], 3: ['values', list('string')] })),
  ],
};
const podTemplateSpec: PMessage = { 1: ['metadata', msg(objectMeta)], 2: ['spec', msg(podSpec)] };
const deploymentSpec: PMessage = {
  1: ['replicas', '*int'],
  2: ['selector', msg(labelSelector)],
  3: ['template', msg(podTemplateSpec)],
  4: [
    'strategy',
    msg({
      1: ['type', 'string'],
      2: ['rollingUpdate', msg({ 1: ['maxUnavailable', 'intOrString'], 2: ['maxSurge', 'intOrString'] })],
    }),
  ],
  5: ['minReadySeconds', 'int'],
  6: ['revisionHistoryLimit', '*int'],
  7: ['paused', 'bool'],
  9: ['progressDeadlineSeconds', '*int'],
};
const replicaSetSpec: PMessage = {
  1: ['replicas', '*int'],
  2: ['selector', msg(labelSelector)],
  3: ['template', msg(podTemplateSpec)],
  4: ['minReadySeconds', 'int'],
};

/** Protobuf schemas by kind, for the kinds kubectl's typed clients send. */
const deleteOptions: PMessage = {
  1: ['gracePeriodSeconds', '*int'],
  2: ['preconditions', msg({ 1: ['uid', 'string'], 2: ['resourceVersion', 'string'] })],
  3: ['orphanDependents', '*bool'],
  4: ['propagationPolicy', 'string'],
  5: ['dryRun', list('string')],
};

export const PROTO_KINDS: Record<string, PMessage> = {
  Namespace: { 1: ['metadata', msg(objectMeta)], 2: ['spec', msg({ 1: ['finalizers', list('string')] })] },
  ConfigMap: {
    1: ['metadata', msg(objectMeta)],
    2: ['data', map('string')],
    3: ['binaryData', map('bytes')],
    4: ['immutable', '*bool'],
  },
  Secret: {
    1: ['metadata', msg(objectMeta)],
    2: ['data', map('bytes')],
    3: ['type', 'string'],
    4: ['stringData', map('string')],
    5: ['immutable', '*bool'],
  },
  ServiceAccount: {
    1: ['metadata', msg(objectMeta)],
    2: ['secrets', list(msg(objectReference))],
    3: ['imagePullSecrets', list(msg(localRef))],
    4: ['automountServiceAccountToken', '*bool'],
  },
  Pod: { 1: ['metadata', msg(objectMeta)], 2: ['spec', msg(podSpec)] },
  // `kubectl create deployment` sends its Deployment as protobuf.
  Deployment: { 1: ['metadata', msg(objectMeta)], 2: ['spec', msg(deploymentSpec)] },
  ReplicaSet: { 1: ['metadata', msg(objectMeta)], 2: ['spec', msg(replicaSetSpec)] },
  Role: { 1: ['metadata', msg(objectMeta)], 2: ['rules', list(msg(policyRule))] },
  ClusterRole: { 1: ['metadata', msg(objectMeta)], 2: ['rules', list(msg(policyRule))] },
  RoleBinding: binding,
  ClusterRoleBinding: binding,
  Event: {
    1: ['metadata', msg(objectMeta)],
    2: ['involvedObject', msg(objectReference)],
    3: ['reason', 'string'],
    4: ['message', 'string'],
    5: ['source', msg({ 1: ['component', 'string'], 2: ['host', 'string'] })],
    6: ['firstTimestamp', 'time'],
    7: ['lastTimestamp', 'time'],
    8: ['count', 'int'],
    9: ['type', 'string'],
    10: ['eventTime', 'microtime'],
    12: ['action', 'string'],
    14: ['reportingComponent', 'string'],
    15: ['reportingInstance', 'string'],
  },
  'events.k8s.io/v1/Event': {
    1: ['metadata', msg(objectMeta)],
    2: ['eventTime', 'microtime'],
    4: ['reportingController', 'string'],
    5: ['reportingInstance', 'string'],
    6: ['action', 'string'],
    7: ['reason', 'string'],
    8: ['regarding', msg(objectReference)],
    9: ['related', msg(objectReference)],
    10: ['note', 'string'],
    11: ['type', 'string'],
    12: ['deprecatedSource', msg({ 1: ['component', 'string'], 2: ['host', 'string'] })],
    13: ['deprecatedFirstTimestamp', 'time'],
    14: ['deprecatedLastTimestamp', 'time'],
    15: ['deprecatedCount', 'int'],
  },
  DeleteOptions: deleteOptions,
  Eviction: {
    1: ['metadata', msg(objectMeta)],
    2: ['deleteOptions', msg(deleteOptions)],
  },
  Binding: { 1: ['metadata', msg(objectMeta)], 2: ['target', msg(objectReference)] },
  Lease: {
    1: ['metadata', msg(objectMeta)],
    2: [
      'spec',
      msg({
        1: ['holderIdentity', 'string'],
        2: ['leaseDurationSeconds', '*int'],
        3: ['acquireTime', 'microtime'],
        4: ['renewTime', 'microtime'],
        5: ['leaseTransitions', '*int'],
      }),
    ],
  },
};

/** Decodes a protobuf body (k8s envelope) of a kind into its JSON form. */
export function decodeProtobufObject(body: Buffer, expectedKind: string): Record<string, unknown> {
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC))
    throw badRequest('protobuf: missing the k8s envelope');
  const unknown = fields(body.subarray(4));
  const typeMeta = message(unknown, 1);
  const apiVersion = typeMeta ? string(typeMeta, 1) : undefined;
  const kind = (typeMeta ? string(typeMeta, 2) : undefined) || expectedKind;
  const schema = PROTO_KINDS[`${apiVersion}/${kind}`] ?? PROTO_KINDS[kind];
  if (!schema)
    throw badRequest(`protobuf: ${kind} cannot be decoded from protobuf by this server; send JSON`);
  const raw = (unknown.get(2) ?? []).find((v): v is Buffer => Buffer.isBuffer(v));
  if (!raw) throw badRequest('protobuf: the envelope carries no object');
  const decoded = decodeMessage(raw, schema);
  // DeleteOptions carry no type meta worth checking against a kind.
  if (kind === 'DeleteOptions') return decoded;
  return { ...(apiVersion ? { apiVersion } : {}), kind, ...decoded };
}

/** Decodes a protobuf-encoded SelfSubjectAccessReview or SubjectAccessReview into its JSON shape. */
export function decodeAccessReview(body: Buffer): Record<string, unknown> {
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC))
    throw badRequest('protobuf: missing the k8s envelope');
  const unknown = fields(body.subarray(4));
  const typeMeta = message(unknown, 1);
  const kind = typeMeta ? string(typeMeta, 2) : undefined;
  const raw = (unknown.get(2) ?? []).find((v): v is Buffer => Buffer.isBuffer(v));
  if (!raw) throw badRequest('protobuf: the envelope carries no object');
  const review = fields(raw);
  const spec = message(review, 2);
  const out: Record<string, unknown> = {};
  if (spec) {
    const s: Record<string, unknown> = {};
    const ra = message(spec, 1);
    const na = message(spec, 2);
    if (ra) s.resourceAttributes = resourceAttributes(ra);
    if (na) s.nonResourceAttributes = nonResourceAttributes(na);
    if (kind === 'SubjectAccessReview') {
      const user = string(spec, 3);
      if (user !== undefined) s.user = user;
      s.groups = strings(spec, 4);
      const uid = string(spec, 6);
      if (uid !== undefined) s.uid = uid;
    }
    out.spec = s;
  }
  return out;
}
