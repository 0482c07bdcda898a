// Converts raft's in-memory types to and from the protobuf forms used on
// disk and between peers.

import { PbWriter } from '@kubit/wire';
import type { WireEntry, WireMessage, WireSnapshot } from '../messages.js';
import { codecs } from '../proto.js';
import type { Entry, HardState, Message, MessageType, Snapshot } from '../raft/types.js';

export function entryToWire(e: Entry): WireEntry {
  return { term: e.term, index: e.index, type: e.type, data: e.data };
}

export function entryFromWire(w: WireEntry): Entry {
  return { term: Number(w.term), index: Number(w.index), type: w.type, data: toU8(w.data) };
}

function toU8(b: Uint8Array | undefined | null): Uint8Array {
  return b ?? new Uint8Array(0);
}

export function snapshotToWire(s: Snapshot): WireSnapshot {
  return {
    index: s.meta.index,
    term: s.meta.term,
    conf_state: { voters: s.meta.confState.voters, learners: s.meta.confState.learners },
    data: s.data,
  };
}

export function snapshotFromWire(w: WireSnapshot): Snapshot {
  return {
    meta: {
      index: Number(w.index),
      term: Number(w.term),
      confState: { voters: w.conf_state?.voters ?? [], learners: w.conf_state?.learners ?? [] },
    },
    data: toU8(w.data),
  };
}

export function messageToWire(m: Message): WireMessage {
  return {
    type: m.type,
    from: m.from,
    to: m.to,
    term: m.term,
    index: m.index,
    log_term: m.logTerm,
    entries: m.entries.map(entryToWire),
    commit: m.commit,
    reject: m.reject,
    reject_hint: m.rejectHint,
    snapshot: m.snapshot ? snapshotToWire(m.snapshot) : null,
    context: m.context ?? new Uint8Array(0),
    has_context: m.context !== undefined,
    no_ack: m.noAck === true,
  };
}

export function messageFromWire(w: WireMessage): Message {
  const m: Message = {
    type: w.type as MessageType,
    from: w.from,
    to: w.to,
    term: Number(w.term),
    index: Number(w.index),
    logTerm: Number(w.log_term),
    entries: w.entries.map(entryFromWire),
    commit: Number(w.commit),
    reject: w.reject,
    rejectHint: Number(w.reject_hint),
  };
  if (w.snapshot) m.snapshot = snapshotFromWire(w.snapshot);
  if (w.has_context) m.context = toU8(w.context);
  if (w.no_ack) m.noAck = true;
  return m;
}

const hardStateWriter = new PbWriter(64);

/** kubitstore.RaftHardState, written directly: one goes into every log write. */
export function encodeHardState(h: HardState): Buffer {
  const w = hardStateWriter.reset();
  w.int64(1, h.term);
  w.string(2, h.vote);
  w.int64(3, h.commit);
  return w.finish();
}

export function decodeHardState(b: Buffer): HardState {
  const w = codecs.hardState.decode(b);
  return { term: Number(w.term), vote: w.vote, commit: Number(w.commit) };
}
