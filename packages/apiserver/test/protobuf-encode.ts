// The other direction of src/protobuf.ts, for tests: a Kubernetes JSON object
// → the protobuf bytes Go would send for it (every plain scalar written, its
// zero too, as Go's encoder does), encoded by protobufjs from the same schema,
// in the "k8s\0" envelope.
import protobuf from 'protobufjs';
import { ENVELOPE, schema } from '../src/protobuf/schema.js';

type Obj = Record<string, unknown>;
const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';

const opt = (f: protobuf.FieldBase, name: string) => f.options?.[`(kubit.${name})`] === true;

function timeMessage(v: unknown): Obj {
  if (v === null || v === undefined) return {};
  const ms = Date.parse(String(v));
  const micros = /\.(\d{6})Z$/.exec(String(v));
  return { seconds: Math.floor(ms / 1000), nanos: micros ? Number(micros[1]) * 1000 : 0 };
}

const SPECIAL: Record<string, (v: unknown) => Obj> = {
  [`${META}.Time`]: timeMessage,
  [`${META}.MicroTime`]: timeMessage,
  [`${META}.FieldsV1`]: (v) => (v === null ? {} : { Raw: Buffer.from(JSON.stringify(v)) }),
  'k8s.io.apimachinery.pkg.api.resource.Quantity': (v) => ({ string: String(v) }),
  'k8s.io.apimachinery.pkg.util.intstr.IntOrString': (v) =>
    typeof v === 'number' ? { type: 0, intVal: v } : { type: 1, strVal: v },
  'k8s.io.api.authorization.v1.ExtraValue': (v) => ({ items: v }),
  'k8s.io.api.authentication.v1.ExtraValue': (v) => ({ items: v }),
};

const GO_ZERO: Record<string, unknown> = {
  string: '',
  bool: false,
  int32: 0,
  int64: 0,
  bytes: Buffer.alloc(0),
};

function value(v: unknown, field: protobuf.FieldBase): unknown {
  if (field.resolvedType instanceof protobuf.Type) return toMessage(v, field.resolvedType);
  if (field.type === 'bytes') return Buffer.from(String(v), 'base64');
  return v;
}

/** The protobufjs plain object for a JSON value of `type`. */
export function toMessage(json: unknown, type: protobuf.Type): Obj {
  const special = SPECIAL[type.fullName.slice(1)];
  if (special) return special(json);
  const j = (json ?? {}) as Obj;
  const out: Obj = {};
  for (const field of type.fieldsArray) {
    if (opt(field, 'json_inline')) {
      // An embedded struct: its fields sit in the parent's JSON; Go writes it always.
      out[field.name] = toMessage(j, field.resolvedType as protobuf.Type);
      continue;
    }
    const v = j[field.name];
    if (v === undefined) {
      const plainScalar = !field.repeated && !field.map && !field.resolvedType && !opt(field, 'go_pointer');
      if (plainScalar) out[field.name] = GO_ZERO[field.type];
      continue;
    }
    if (field.map)
      out[field.name] = Object.fromEntries(Object.entries(v as Obj).map(([k, e]) => [k, value(e, field)]));
    else if (field.repeated) out[field.name] = (v as unknown[]).map((e) => value(e, field));
    else out[field.name] = value(v, field);
  }
  return out;
}

/** A message's bytes: `json` as `typeName` (a full message name). */
export function encodeMessage(json: unknown, typeName: string): Uint8Array {
  const type = schema().lookupType(typeName);
  return type.encode(toMessage(json, type)).finish();
}

/** A whole request body: the k8s envelope around `raw` (an encoded message or any bytes). */
export function envelope(apiVersion: string, kind: string, raw: Uint8Array): Buffer {
  const unknown = schema().lookupType(ENVELOPE);
  const bytes = unknown.encode({ typeMeta: { apiVersion, kind }, raw }).finish();
  return Buffer.concat([Buffer.from('k8s\0', 'binary'), bytes]);
}
