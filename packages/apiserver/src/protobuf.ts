// Reads the request bodies kubectl's typed clients send as protobuf (`kubectl
// create <kind>`, `kubectl auth can-i`, drain's evictions, DeleteOptions)
// into the JSON the same object would have had. The schema is ours
// (proto/*.proto, every field of every kind accepted); a body with a field it
// does not describe, a wrong wire type or a cut-off value is refused with 415
// rather than decoded in part, since a dropped field would be lost silently.
// Not a hot path: every other body is JSON or YAML, responses are JSON.
import { type StatusError, undecodableBody } from '@kubit/api';
import type protobuf from 'protobufjs';
import { ENVELOPE, messageFor, schema } from './protobuf/schema.js';
import { messageToJson } from './protobuf/to-json.js';
import { checkMessage, ProtobufRefusal } from './protobuf/wire-check.js';

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]); // "k8s\0"

/** Parses the schema (once); the apiserver calls it at start. */
export function loadProtobufSchema(): void {
  schema();
}

function refuse(what: string, problem: string): StatusError {
  return undecodableBody(`${what} cannot be decoded fully from protobuf: ${problem}; send it as JSON`);
}

/** Checks then decodes a message of `type`; a refusal names `what` (the kind) and where. */
function decodeChecked(bytes: Uint8Array, type: protobuf.Type, what: string): Record<string, unknown> {
  try {
    checkMessage(bytes, type);
    return type.decode(bytes) as unknown as Record<string, unknown>;
  } catch (err) {
    // A ProtobufRefusal from the walk, or protobufjs's own error should the walk have missed one.
    throw refuse(what, (err as Error).message);
  }
}

function toJson(m: Record<string, unknown>, type: protobuf.Type, what: string): Record<string, unknown> {
  try {
    return messageToJson(m, type) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof ProtobufRefusal) throw refuse(what, err.message);
    throw err;
  }
}

/**
 * Decodes a protobuf body (the k8s envelope around a runtime.Unknown) into
 * its JSON form. `expectedKind` (the resource's kind) stands in when the
 * envelope names none.
 */
export function decodeProtobufObject(body: Buffer, expectedKind: string): Record<string, unknown> {
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC))
    throw refuse('the body', 'it does not start with the k8s envelope ("k8s\\0")');
  const root = schema();
  const envelope = decodeChecked(body.subarray(4), root.lookupType(ENVELOPE), 'the envelope');
  const typeMeta = (envelope.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
  const apiVersion = typeMeta.apiVersion ?? '';
  const kind = typeMeta.kind || expectedKind;
  if (envelope.contentEncoding) throw refuse(kind, `content encoding ${envelope.contentEncoding}`);
  const name = messageFor(apiVersion, kind);
  if (!name)
    throw refuse(`${apiVersion ? `${apiVersion}, ` : ''}kind ${kind || '(none)'}`, 'no schema for it');
  const raw = envelope.raw as Uint8Array | undefined;
  if (!raw) throw refuse(kind, 'the envelope carries no object');
  const type = root.lookupType(name);
  const decoded = toJson(decodeChecked(raw, type, kind), type, kind);
  // DeleteOptions carry no type meta worth checking against a kind.
  if (kind === 'DeleteOptions') return decoded;
  return { ...(apiVersion ? { apiVersion } : {}), kind, ...decoded };
}
