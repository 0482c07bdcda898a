// fast-check arbitraries of Kubernetes JSON objects, built from the protobuf
// schema: every field of a message may appear, in the shape Go's JSON writes
// (no zero of an omitempty plain field, always the fields without omitempty,
// embedded structs flattened), so decoding their protobuf must give them back.
import fc from 'fast-check';
import protobuf from 'protobufjs';

type Obj = Record<string, unknown>;
const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';
const opt = (f: protobuf.FieldBase, name: string) => f.options?.[`(kubit.${name})`] === true;

// Times Go's JSON can write: years 1970 to 9999, whole seconds (Time) or microseconds (MicroTime).
const seconds = fc.integer({ min: 0, max: 253402300799 });
const iso = (s: number) => new Date(s * 1000).toISOString().slice(0, 19);
const SPECIAL: Record<string, fc.Arbitrary<unknown>> = {
  [`${META}.Time`]: fc.option(
    seconds.map((s) => `${iso(s)}Z`),
    { nil: null },
  ),
  [`${META}.MicroTime`]: fc.option(
    fc
      .tuple(seconds, fc.integer({ min: 0, max: 999999 }))
      .map(([s, us]) => `${iso(s)}.${String(us).padStart(6, '0')}Z`),
    { nil: null },
  ),
  [`${META}.FieldsV1`]: fc.dictionary(fc.string({ maxLength: 6 }), fc.constant({}), { maxKeys: 2 }),
  'k8s.io.apimachinery.pkg.api.resource.Quantity': fc.constantFrom('1', '0', '500m', '1Gi', '2.5', '10M'),
  'k8s.io.apimachinery.pkg.util.intstr.IntOrString': fc.oneof(
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    fc.string({ maxLength: 6 }),
  ),
  'k8s.io.api.authorization.v1.ExtraValue': fc.array(fc.string({ maxLength: 6 }), { maxLength: 2 }),
  'k8s.io.api.authentication.v1.ExtraValue': fc.array(fc.string({ maxLength: 6 }), { maxLength: 2 }),
};

function scalar(type: string, zeroAllowed: boolean): fc.Arbitrary<unknown> {
  const nonZero = (a: fc.Arbitrary<unknown>) => (zeroAllowed ? a : a.filter((v) => v !== '' && v !== 0));
  switch (type) {
    case 'string':
      return nonZero(fc.string({ maxLength: 8 }));
    case 'int32':
      return nonZero(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
    case 'int64':
      return nonZero(fc.maxSafeInteger());
    case 'bool':
      return zeroAllowed ? fc.boolean() : fc.constant(true);
    case 'bytes':
      return fc.uint8Array({ maxLength: 8 }).map((b) => Buffer.from(b).toString('base64'));
    default:
      throw new Error(`no arbitrary for ${type}`);
  }
}

/** One value of a field: a list element, a map value, or the field itself. */
function element(field: protobuf.FieldBase, depth: number, zeroAllowed: boolean): fc.Arbitrary<unknown> {
  if (field.resolvedType instanceof protobuf.Type) return jsonOf(field.resolvedType, depth + 1);
  return scalar(field.type, zeroAllowed);
}

/**
 * JSON objects of a message type. Below `maxDepth` nested messages are left
 * out (Pod's schema is deep), which keeps every object small.
 */
export function jsonOf(type: protobuf.Type, depth = 0, maxDepth = 7): fc.Arbitrary<unknown> {
  const special = SPECIAL[type.fullName.slice(1)];
  if (special) return special;
  const own: Record<string, fc.Arbitrary<unknown>> = {};
  const required: string[] = [];
  const inline: protobuf.Type[] = [];
  for (const field of type.fieldsArray) {
    const isMessage = field.resolvedType instanceof protobuf.Type;
    if (opt(field, 'json_inline')) {
      inline.push(field.resolvedType as protobuf.Type);
      continue;
    }
    if (isMessage && depth >= maxDepth) continue;
    if (field.map) {
      own[field.name] = fc.dictionary(fc.string({ maxLength: 5 }), element(field, depth, true), {
        minKeys: 1,
        maxKeys: 2,
      });
    } else if (field.repeated) {
      own[field.name] = fc.array(element(field, depth, true), { minLength: 1, maxLength: 2 });
    } else {
      const always = opt(field, 'json_always');
      own[field.name] = element(field, depth, always || opt(field, 'go_pointer') || isMessage);
      if (always) required.push(field.name);
    }
  }
  const record = fc.record(own, { requiredKeys: required });
  if (inline.length === 0) return record;
  // Embedded structs: their fields join the parent's object.
  return fc
    .tuple(record, ...inline.map((t) => jsonOf(t, depth + 1, maxDepth)))
    .map(([parent, ...children]) => Object.assign({}, parent, ...(children as Obj[])));
}
