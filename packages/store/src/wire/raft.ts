// kubitstore.RaftEntry and kubitstore.RaftBatch (proto/kubit/store.proto)
// written and read straight from raft's own types: every log entry and every
// peer batch goes through here, so the generic codec's per-field conversions
// (and the intermediate wire objects) are skipped.

import { PbReader, PbWriter } from '@kubit/wire';
import type { Entry, EntryType, Message, MessageType, Snapshot } from '../raft/types.js';
import { logArena } from './arena.js';

/** A batch of raft messages as the peer stream carries it. */
export interface RaftStreamBatch {
  cluster_id: string;
  messages: Message[];
}

const EMPTY = new Uint8Array(0);
const writer = new PbWriter(64 * 1024);

function writeEntry(w: PbWriter, e: Entry): void {
  w.int64(1, e.term);
  w.int64(2, e.index);
  w.uint32(3, e.type);
  w.bytes(4, e.data);
}

export function encodeEntry(e: Entry): Buffer {
  writeEntry(writer.reset(), e);
  return writer.finish();
}

function readEntry(r: PbReader): Entry {
  const e: Entry = { term: 0, index: 0, type: 0 as EntryType, data: EMPTY };
  while (!r.done) {
    const tag = r.tag();
    switch (tag) {
      case 8:
        e.term = r.varint();
        break;
      case 16:
        e.index = r.varint();
        break;
      case 24:
        e.type = r.varint() as EntryType;
        break;
      case 34:
        // Held in the in-memory log until compaction: copied out of the message it came in.
        e.data = logArena.copy(r.bytes());
        break;
      default:
        r.skip(tag);
    }
  }
  return e;
}

export function decodeEntry(buf: Buffer): Entry {
  return readEntry(new PbReader(buf));
}

function writeSnapshot(w: PbWriter, s: Snapshot): void {
  w.int64(1, s.meta.index);
  w.int64(2, s.meta.term);
  const cs = w.begin(3);
  for (const v of s.meta.confState.voters) w.stringAlways(1, v);
  for (const l of s.meta.confState.learners) w.stringAlways(2, l);
  w.end(cs);
  w.bytes(4, s.data);
}

function readSnapshot(r: PbReader): Snapshot {
  const s: Snapshot = { meta: { index: 0, term: 0, confState: { voters: [], learners: [] } }, data: EMPTY };
  while (!r.done) {
    const tag = r.tag();
    if (tag === 8) s.meta.index = r.varint();
    else if (tag === 16) s.meta.term = r.varint();
    else if (tag === 26) {
      const [start, end] = r.span();
      const c = new PbReader(r.buf, start, end);
      while (!c.done) {
        const t = c.tag();
        if (t === 10) s.meta.confState.voters.push(c.string());
        else if (t === 18) s.meta.confState.learners.push(c.string());
        else c.skip(t);
      }
    } else if (tag === 34) s.data = r.bytes();
    else r.skip(tag);
  }
  return s;
}

function writeMessage(w: PbWriter, m: Message): void {
  w.string(1, m.type);
  w.string(2, m.from);
  w.string(3, m.to);
  w.int64(4, m.term);
  w.int64(5, m.index);
  w.int64(6, m.logTerm);
  for (const e of m.entries) {
    const mark = w.begin(7);
    writeEntry(w, e);
    w.end(mark);
  }
  w.int64(8, m.commit);
  w.bool(9, m.reject);
  w.int64(10, m.rejectHint);
  if (m.snapshot) {
    const mark = w.begin(11);
    writeSnapshot(w, m.snapshot);
    w.end(mark);
  }
  if (m.context !== undefined) {
    w.bytes(12, m.context);
    w.bool(13, true);
  }
  if (m.noAck) w.bool(14, true);
}

function readMessage(r: PbReader): Message {
  const m: Message = {
    type: '' as MessageType,
    from: '',
    to: '',
    term: 0,
    index: 0,
    logTerm: 0,
    entries: [],
    commit: 0,
    reject: false,
    rejectHint: 0,
  };
  let context: Uint8Array | undefined;
  let hasContext = false;
  while (!r.done) {
    const tag = r.tag();
    switch (tag) {
      case 10:
        m.type = r.string() as MessageType;
        break;
      case 18:
        m.from = r.string();
        break;
      case 26:
        m.to = r.string();
        break;
      case 32:
        m.term = r.varint();
        break;
      case 40:
        m.index = r.varint();
        break;
      case 48:
        m.logTerm = r.varint();
        break;
      case 58: {
        const [start, end] = r.span();
        m.entries.push(readEntry(new PbReader(r.buf, start, end)));
        break;
      }
      case 64:
        m.commit = r.varint();
        break;
      case 72:
        m.reject = r.bool();
        break;
      case 80:
        m.rejectHint = r.varint();
        break;
      case 90: {
        const [start, end] = r.span();
        m.snapshot = readSnapshot(new PbReader(r.buf, start, end));
        break;
      }
      case 98:
        context = r.bytes();
        break;
      case 104:
        hasContext = r.bool();
        break;
      case 112:
        if (r.bool()) m.noAck = true;
        break;
      default:
        r.skip(tag);
    }
  }
  if (hasContext) m.context = context ?? EMPTY;
  return m;
}

export function encodeRaftBatch(batch: RaftStreamBatch): Buffer {
  const w = writer.reset();
  w.string(1, batch.cluster_id);
  for (const m of batch.messages) {
    const mark = w.begin(2);
    writeMessage(w, m);
    w.end(mark);
  }
  return w.finish();
}

export function decodeRaftBatch(buf: Buffer): RaftStreamBatch {
  const r = new PbReader(buf);
  const batch: RaftStreamBatch = { cluster_id: '', messages: [] };
  while (!r.done) {
    const tag = r.tag();
    if (tag === 10) batch.cluster_id = r.string();
    else if (tag === 18) {
      const [start, end] = r.span();
      batch.messages.push(readMessage(new PbReader(r.buf, start, end)));
    } else r.skip(tag);
  }
  return batch;
}
