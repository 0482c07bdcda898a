// Walks a protobuf message's wire bytes against its schema before protobufjs
// decodes it: protobufjs skips fields it does not know and reads a known field
// whatever its wire type says, so without this walk a body could lose fields
// silently or be misread. Every field must be one the schema names, with the
// wire type its type has, and every length must fit.
import protobuf from 'protobufjs';

/** Why a body cannot be decoded fully; `path` is the JSON path of the message it was found in. */
export class ProtobufRefusal extends Error {
  constructor(
    readonly problem: string,
    readonly path: string,
  ) {
    super(`${problem}${path ? ` at ${path}` : ''}`);
  }
}

const WIRE_NAMES = ['varint', '64-bit', 'length-delimited', 'start-group', 'end-group', '32-bit'];
const wireName = (w: number) => WIRE_NAMES[w] ?? `wire type ${w}`;

/** The wire type a value of this protobufjs type name has (messages and strings are length-delimited). */
function wireTypeOf(type: string, resolved: protobuf.ReflectionObject | null): number {
  if (resolved instanceof protobuf.Type) return 2;
  const basic = protobuf.types.basic[type as keyof typeof protobuf.types.basic];
  if (basic === undefined) throw new Error(`protobuf schema: no wire type for ${type}`);
  return basic;
}

/** Steps over one value whose wire type was checked; a message value is checked in turn. */
function checkValue(
  reader: protobuf.Reader,
  wire: number,
  resolved: protobuf.ReflectionObject | null,
  path: string,
): void {
  if (wire !== 2) reader.skipType(wire);
  else if (resolved instanceof protobuf.Type) checkMessage(reader.bytes(), resolved, path);
  else reader.skip(reader.uint32());
}

/** `index`: which element of a repeated field this is, for the path. */
function checkField(
  reader: protobuf.Reader,
  wire: number,
  field: protobuf.FieldBase,
  path: string,
  index: number,
): void {
  const at = `${path}${path ? '.' : ''}${field.name}${field.repeated ? `[${index}]` : ''}`;
  if (field instanceof protobuf.MapField) {
    if (wire !== 2) throw new ProtobufRefusal(`map field ${field.name} came as ${wireName(wire)}`, path);
    checkMapEntry(reader.bytes(), field, at);
    return;
  }
  const expected = wireTypeOf(field.type, field.resolvedType);
  // Repeated scalars may come packed (one length-delimited run of values).
  const packed = field.repeated && expected !== 2 && wire === 2;
  if (packed) {
    const run = protobuf.Reader.create(reader.bytes());
    while (run.pos < run.len) run.skipType(expected);
    return;
  }
  if (wire !== expected)
    throw new ProtobufRefusal(
      `field ${field.name} (${field.type}) came as ${wireName(wire)}, not ${wireName(expected)}`,
      path,
    );
  checkValue(reader, wire, field.resolvedType, at);
}

/** A map entry is a small message: key = 1, value = 2, nothing else. */
function checkMapEntry(bytes: Uint8Array, field: protobuf.MapField, path: string): void {
  const reader = protobuf.Reader.create(bytes);
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    const id = tag >>> 3;
    const wire = tag & 7;
    const [type, resolved] =
      id === 1 ? [field.keyType, null] : id === 2 ? [field.type, field.resolvedType] : [undefined, null];
    if (type === undefined) throw new ProtobufRefusal(`unknown field number ${id} in a map entry`, path);
    const expected = wireTypeOf(type, resolved);
    if (wire !== expected)
      throw new ProtobufRefusal(
        `a map entry's ${id === 1 ? 'key' : 'value'} came as ${wireName(wire)}`,
        path,
      );
    checkValue(reader, wire, resolved, path);
  }
}

/**
 * Checks that `bytes` holds only fields `type` describes, each with its own
 * wire type, and no cut-off value. Throws a ProtobufRefusal naming the first
 * problem and where it is.
 */
export function checkMessage(bytes: Uint8Array, type: protobuf.Type, path = ''): void {
  const reader = protobuf.Reader.create(bytes);
  const counts = new Map<number, number>();
  try {
    while (reader.pos < reader.len) {
      const tag = reader.uint32();
      const id = tag >>> 3;
      const wire = tag & 7;
      const field = type.fieldsById[id];
      if (!field || id === 0)
        throw new ProtobufRefusal(`unknown field number ${id} (${wireName(wire)}) in ${type.name}`, path);
      const index = counts.get(id) ?? 0;
      counts.set(id, index + 1);
      checkField(reader, wire, field, path, index);
    }
  } catch (err) {
    if (err instanceof ProtobufRefusal) throw err;
    // protobufjs's Reader throws RangeError past the end and Error on a bad varint or wire type.
    throw new ProtobufRefusal(`truncated or malformed ${type.name} (${(err as Error).message})`, path);
  }
}
