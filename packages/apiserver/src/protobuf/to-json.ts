// Turns a message protobufjs decoded into the JSON Go would write for the same
// object, so a protobuf body and a JSON body of one object make one object:
// zeros of plain (non-pointer, omitempty) fields dropped, embedded structs
// flattened, and the few Kubernetes types with a JSON form of their own
// (times, quantities, int-or-strings, managed-fields sets) written in it.
// The options it reads are described in proto/README.md.
import protobuf from 'protobufjs';
import { ProtobufRefusal } from './wire-check.js';

type Json = unknown;
type Decoded = Record<string, unknown>;

const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';
/** Go's zero time (0001-01-01T00:00:00Z) in Unix seconds: written by some encoders, JSON null. */
const ZERO_TIME_SECONDS = -62135596800;
const MAX_TIME_SECONDS = 253402300799; // 9999-12-31T23:59:59Z: Go's JSON refuses later years

function option(field: protobuf.FieldBase, name: string): boolean {
  return field.options?.[`(kubit.${name})`] === true;
}

/** int64 arrives as a Long (protobufjs keeps 64 bits); JSON numbers are doubles anyway. */
function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  return protobuf.util.LongBits.from(v as protobuf.Long).toNumber(false);
}

function timeText(m: Decoded, micro: boolean, path: string): string | null {
  const seconds = toNumber(m.seconds ?? 0);
  const nanos = toNumber(m.nanos ?? 0);
  // An empty message is Go's zero time, and so is its Unix second (nanoseconds aside for Time).
  const empty = !Object.hasOwn(m, 'seconds') && !Object.hasOwn(m, 'nanos');
  if (empty || (seconds === ZERO_TIME_SECONDS && (!micro || nanos === 0))) return null;
  if (seconds < ZERO_TIME_SECONDS || seconds > MAX_TIME_SECONDS)
    throw new ProtobufRefusal(`a time of ${seconds} seconds is outside years 1 to 9999`, path);
  const base = new Date(seconds * 1000).toISOString().slice(0, 19);
  // metav1.Time keeps whole seconds only; MicroTime keeps microseconds.
  return micro ? `${base}.${String(Math.floor(nanos / 1000)).padStart(6, '0')}Z` : `${base}Z`;
}

/** The Kubernetes types whose JSON is not an object of their fields, by full message name. */
const SPECIAL: Record<string, (m: Decoded, path: string) => Json> = {
  [`${META}.Time`]: (m, path) => timeText(m, false, path),
  [`${META}.MicroTime`]: (m, path) => timeText(m, true, path),
  [`${META}.FieldsV1`]: (m, path) => {
    const raw = m.Raw as Uint8Array | undefined;
    if (!raw || raw.length === 0) return null;
    try {
      return JSON.parse(Buffer.from(raw).toString('utf8'));
    } catch {
      throw new ProtobufRefusal('a FieldsV1 whose bytes are not JSON', path);
    }
  },
  'k8s.io.apimachinery.pkg.api.resource.Quantity': (m) => (m.string as string | undefined) || '0',
  'k8s.io.apimachinery.pkg.util.intstr.IntOrString': (m, path) => {
    const type = toNumber(m.type ?? 0);
    if (type === 0) return toNumber(m.intVal ?? 0);
    if (type === 1) return (m.strVal as string | undefined) ?? '';
    throw new ProtobufRefusal(`an IntOrString of type ${type} (only 0, int, and 1, string, exist)`, path);
  },
  'k8s.io.api.authorization.v1.ExtraValue': (m) => [...((m.items as string[] | undefined) ?? [])],
  'k8s.io.api.authentication.v1.ExtraValue': (m) => [...((m.items as string[] | undefined) ?? [])],
};

/** A pointer (a zero on the wire was set) or a field its JSON writes even when zero. */
function keepsZero(field: protobuf.FieldBase): boolean {
  return option(field, 'go_pointer') || option(field, 'json_always');
}

function isZero(v: Json): boolean {
  return v === '' || v === 0 || v === false;
}

/** One value of a field (an element of a list, a value of a map, or the field itself). */
function valueToJson(v: unknown, field: protobuf.FieldBase, path: string): Json {
  const t = field.resolvedType;
  if (t instanceof protobuf.Type) return messageToJson(v as Decoded, t, path);
  if (field.type === 'bytes') return Buffer.from(v as Uint8Array).toString('base64');
  if (field.type === 'int64' || field.type === 'int32') return toNumber(v);
  return v;
}

/** The JSON of a decoded message of `type`, as Go's encoding/json writes the struct. */
export function messageToJson(decoded: Decoded | null, type: protobuf.Type, path = ''): Json {
  // A map entry without its value holds the value's zero (an empty message).
  const m = decoded ?? {};
  const special = SPECIAL[type.fullName.slice(1)];
  if (special) return special(m, path);
  const out: Record<string, Json> = {};
  for (const field of type.fieldsArray) {
    const at = `${path}${path ? '.' : ''}${field.name}`;
    const v = m[field.name];
    if (field.map) {
      const entries = Object.entries((v ?? {}) as Decoded);
      if (entries.length === 0) continue;
      out[field.name] = Object.fromEntries(
        entries.map(([k, e]) => [k, valueToJson(e, field, `${at}[${k}]`)]),
      );
    } else if (field.repeated) {
      const items = (v ?? []) as unknown[];
      if (items.length === 0) continue;
      out[field.name] = items.map((e, i) => valueToJson(e, field, `${at}[${i}]`));
    } else if (Object.hasOwn(m, field.name)) {
      const json = valueToJson(v, field, option(field, 'json_inline') ? path : at);
      if (option(field, 'json_inline')) Object.assign(out, json);
      // Go writes a plain scalar's zero that its JSON (omitempty) leaves out;
      // messages (IntOrString 0 included) are structs, which its JSON always writes.
      else if (!keepsZero(field) && isZero(json) && !field.resolvedType) continue;
      else out[field.name] = json;
    }
  }
  return out;
}
