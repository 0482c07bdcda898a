// ConfChange <-> entry bytes. JSON keeps it inspectable; the context (opaque
// member metadata) travels as base64.

import type { ConfChange, ConfChangeType } from './types.js';

const TYPES: ReadonlySet<string> = new Set<ConfChangeType>([
  'addNode',
  'addLearner',
  'removeNode',
  'promote',
]);
const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

export function encodeConfChange(cc: ConfChange): Uint8Array {
  validateConfChange(cc);
  const wire: { type: string; nodeId: string; context?: string } = { type: cc.type, nodeId: cc.nodeId };
  if (cc.context !== undefined) wire.context = Buffer.from(cc.context).toString('base64');
  return enc.encode(JSON.stringify(wire));
}

/** Decodes a ConfChange entry's data; throws an Error naming the problem for anything else. */
export function decodeConfChange(data: Uint8Array): ConfChange {
  let parsed: unknown;
  try {
    parsed = JSON.parse(dec.decode(data));
  } catch (err) {
    throw new Error(`conf change entry is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null) throw new Error('conf change entry is not an object');
  const o = parsed as Record<string, unknown>;
  const cc: ConfChange = { type: o.type as ConfChangeType, nodeId: o.nodeId as string };
  if (o.context !== undefined) {
    if (typeof o.context !== 'string') throw new Error('conf change context must be a base64 string');
    cc.context = new Uint8Array(Buffer.from(o.context, 'base64'));
  }
  validateConfChange(cc);
  return cc;
}

export function validateConfChange(cc: ConfChange): void {
  if (!TYPES.has(cc.type))
    throw new Error(`conf change type ${JSON.stringify(cc.type)} is not one of ${[...TYPES]}`);
  if (typeof cc.nodeId !== 'string' || cc.nodeId === '')
    throw new Error('conf change nodeId must be a non-empty string');
}
