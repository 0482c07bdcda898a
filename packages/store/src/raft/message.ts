// Message helpers: construction with defaults, classification, and validation
// of what arrives from the network (a peer's bug must not corrupt our log).

import { InvalidMessageError } from './errors.js';
import { type Entry, EntryType, type Message, type MessageType, type NodeId } from './types.js';

const TYPES: ReadonlySet<string> = new Set<MessageType>([
  'MsgPreVote',
  'MsgPreVoteResp',
  'MsgVote',
  'MsgVoteResp',
  'MsgApp',
  'MsgAppResp',
  'MsgHeartbeat',
  'MsgHeartbeatResp',
  'MsgSnap',
  'MsgSnapStatus',
  'MsgTimeoutNow',
  'MsgReadIndex',
  'MsgReadIndexResp',
  'MsgProp',
  'MsgTransferLeader',
]);

/**
 * Messages that only ever go from the node loop into its own RawNode (through
 * reportSnapshot), never over the network; a transport should drop them if a peer sends one.
 */
export function isLocalMessage(type: MessageType): boolean {
  return type === 'MsgSnapStatus';
}

/** Answers to a request; a transport may deliver them on a separate, cheaper path. */
export function isResponseMessage(type: MessageType): boolean {
  return (
    type === 'MsgAppResp' ||
    type === 'MsgVoteResp' ||
    type === 'MsgPreVoteResp' ||
    type === 'MsgHeartbeatResp' ||
    type === 'MsgReadIndexResp'
  );
}

export function newMessage(type: MessageType, from: NodeId, to: NodeId, term: number): Message {
  return {
    type,
    from,
    to,
    term,
    index: 0,
    logTerm: 0,
    entries: [],
    commit: 0,
    reject: false,
    rejectHint: 0,
  };
}

function isIndex(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function validateEntry(e: unknown, where: string): asserts e is Entry {
  if (typeof e !== 'object' || e === null) throw new InvalidMessageError(`${where}: not an object`);
  const o = e as Record<string, unknown>;
  if (!isIndex(o.term) || !isIndex(o.index)) throw new InvalidMessageError(`${where}: bad term/index`);
  if (o.type !== EntryType.Normal && o.type !== EntryType.ConfChange) {
    throw new InvalidMessageError(`${where}: unknown entry type ${String(o.type)}`);
  }
  if (!(o.data instanceof Uint8Array)) throw new InvalidMessageError(`${where}: data is not a Uint8Array`);
}

/**
 * Checks the shape of a message from a peer; throws InvalidMessageError naming
 * the problem. Entries must be consecutive after `index` with terms that never
 * decrease and never exceed the message's term (what any correct leader sends).
 */
export function validateMessage(m: unknown, self: NodeId): asserts m is Message {
  if (typeof m !== 'object' || m === null) throw new InvalidMessageError('message is not an object');
  const o = m as Record<string, unknown>;
  if (typeof o.type !== 'string' || !TYPES.has(o.type)) {
    throw new InvalidMessageError(`unknown message type ${JSON.stringify(o.type)}`);
  }
  const type = o.type;
  if (typeof o.from !== 'string' || o.from === '') throw new InvalidMessageError(`${type}: empty from`);
  if (o.to !== self) throw new InvalidMessageError(`${type}: addressed to ${String(o.to)}, this is ${self}`);
  for (const f of ['term', 'index', 'logTerm', 'commit', 'rejectHint'] as const) {
    if (!isIndex(o[f])) throw new InvalidMessageError(`${type}: ${f} must be a non-negative integer`);
  }
  if (typeof o.reject !== 'boolean') throw new InvalidMessageError(`${type}: reject must be a boolean`);
  if (!Array.isArray(o.entries)) throw new InvalidMessageError(`${type}: entries must be an array`);
  if (o.context !== undefined && !(o.context instanceof Uint8Array)) {
    throw new InvalidMessageError(`${type}: context must be a Uint8Array`);
  }
  if (o.noAck !== undefined && typeof o.noAck !== 'boolean') {
    throw new InvalidMessageError(`${type}: noAck must be a boolean`);
  }
  const msg = m as Message;
  if (type === 'MsgApp') {
    let prevTerm = msg.logTerm;
    msg.entries.forEach((e, k) => {
      validateEntry(e, `MsgApp entry ${k}`);
      if (e.index !== msg.index + 1 + k)
        throw new InvalidMessageError(`MsgApp entry ${k}: index not consecutive`);
      if (e.term < prevTerm || e.term > msg.term)
        throw new InvalidMessageError(`MsgApp entry ${k}: term out of order`);
      prevTerm = e.term;
    });
  } else if (type === 'MsgProp') {
    if (msg.entries.length === 0) throw new InvalidMessageError('MsgProp without entries');
    msg.entries.forEach((e, k) => {
      validateEntry(e, `MsgProp entry ${k}`);
    });
  } else if (msg.entries.length > 0) {
    throw new InvalidMessageError(`${type} must not carry entries`);
  }
  if (type === 'MsgSnap') {
    const s = msg.snapshot;
    if (
      s === undefined ||
      !isIndex(s.meta?.index) ||
      !isIndex(s.meta.term) ||
      !Array.isArray(s.meta.confState?.voters) ||
      !Array.isArray(s.meta.confState.learners) ||
      !(s.data instanceof Uint8Array)
    ) {
      throw new InvalidMessageError('MsgSnap without a well-formed snapshot');
    }
  }
}
