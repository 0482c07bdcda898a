// etcd's hot client messages written and read by hand: PutRequest,
// PutResponse, RangeRequest, RangeResponse, and WatchResponse (whose events
// are encoded once per change and shared by every watcher that gets them).
// The objects read have exactly the shape proto-loader gives (keepCase, int64
// as decimal strings, defaults filled in), so the handlers cannot tell.

import { FRAME_HEADER_BYTES, PbReader, PbWriter, writeFrameHeader } from '@kubit/wire';
import type {
  Event,
  KeyValue,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  ResponseHeader,
  WatchResponse,
} from '../messages.js';

const writer = new PbWriter(64 * 1024);

/**
 * A stored version of a key as watch events carry it: the fields of the
 * MVCC store's record this file reads (declared here, so the codecs need
 * nothing from the store above them).
 */
export interface VersionRecord {
  key: string;
  value: Buffer;
  create: number;
  mod: number;
  /** 0 for a deletion. */
  version: number;
  /** Lease ID as a decimal string, "0" for none. */
  lease: string;
}
const EMPTY = Buffer.alloc(0);

function writeHeader(w: PbWriter, h: Partial<ResponseHeader> | undefined): void {
  if (!h) return;
  const mark = w.begin(1);
  w.int64(1, h.cluster_id);
  w.int64(2, h.member_id);
  w.int64(3, h.revision);
  w.int64(4, h.raft_term);
  w.end(mark);
}

function writeKeyValue(w: PbWriter, field: number, kv: KeyValue): void {
  const mark = w.begin(field);
  w.bytes(1, kv.key);
  w.int64(2, kv.create_revision);
  w.int64(3, kv.mod_revision);
  w.int64(4, kv.version);
  w.bytes(5, kv.value);
  w.int64(6, kv.lease);
  w.end(mark);
}

/** A stored version as an mvccpb.KeyValue (a tombstone as etcd reports a deletion: key and revision). */
function writeRecord(w: PbWriter, field: number, r: VersionRecord): void {
  const mark = w.begin(field);
  w.latin1(1, r.key);
  if (r.version > 0) {
    w.int64(2, r.create);
    w.int64(3, r.mod);
    w.int64(4, r.version);
    w.bytes(5, r.value);
    w.int64(6, r.lease);
  } else w.int64(3, r.mod);
  w.end(mark);
}

/** One mvccpb.Event's bytes (without its field tag), for a change and whether the watcher wants prev_kv. */
export function encodeChange(record: VersionRecord, prev: VersionRecord | undefined): Buffer {
  const w = writer.reset();
  w.uint32(1, record.version === 0 ? 1 : 0);
  writeRecord(w, 2, record);
  if (prev) writeRecord(w, 3, prev);
  return w.finish();
}

function writeEvent(w: PbWriter, ev: Event): void {
  const mark = w.begin(11);
  w.uint32(1, ev.type);
  writeKeyValue(w, 2, ev.kv);
  if (ev.prev_kv) writeKeyValue(w, 3, ev.prev_kv);
  w.end(mark);
}

/**
 * The events part (field 11) of a WatchResponse, from events encoded by
 * encodeChange: built once and shared by every watcher that gets the same
 * events (see encodeWatchResponseHead).
 */
export function encodeWatchEvents(events: readonly Uint8Array[]): Buffer {
  const w = writer.reset();
  for (const ev of events) w.bytesAlways(11, ev);
  return w.finish();
}

/**
 * A WatchResponse of events, framed for gRPC, up to its events: the frame
 * header, the response header and watch_id. The `eventsBytes` long events
 * part from encodeWatchEvents follows it on the stream, uncopied: together
 * they are one message (protobuf fields may come in any order and pieces).
 */
export function encodeWatchResponseHead(
  header: ResponseHeader,
  watchId: number,
  eventsBytes: number,
): Buffer {
  const w = writer.reset();
  writeHeader(w, header);
  w.int64(2, watchId);
  const out = w.finish(FRAME_HEADER_BYTES);
  writeFrameHeader(out, out.length - FRAME_HEADER_BYTES + eventsBytes);
  return out;
}

/** `headroom` bytes are left free before the message (for a frame header). */
export function encodeWatchResponse(resp: WatchResponse, headroom = 0): Buffer {
  const w = writer.reset();
  writeHeader(w, resp.header);
  w.int64(2, resp.watch_id);
  w.bool(3, resp.created);
  w.bool(4, resp.canceled);
  w.int64(5, resp.compact_revision);
  w.string(6, resp.cancel_reason);
  for (const ev of resp.events) writeEvent(w, ev);
  return w.finish(headroom);
}

/** `headroom` bytes are left free before the message (for a frame header). */
export function encodePutResponse(resp: PutResponse, headroom = 0): Buffer {
  const w = writer.reset();
  writeHeader(w, resp.header);
  if (resp.prev_kv) writeKeyValue(w, 2, resp.prev_kv);
  return w.finish(headroom);
}

/** `headroom` bytes are left free before the message (for a frame header). */
export function encodeRangeResponse(resp: RangeResponse, headroom = 0): Buffer {
  const w = writer.reset();
  writeHeader(w, resp.header);
  for (const kv of resp.kvs) writeKeyValue(w, 2, kv);
  w.bool(3, resp.more);
  w.int64(4, resp.count);
  return w.finish(headroom);
}

export function decodePutRequest(buf: Buffer): PutRequest {
  const r = new PbReader(buf);
  const req: PutRequest = {
    key: EMPTY,
    value: EMPTY,
    lease: '0',
    prev_kv: false,
    ignore_value: false,
    ignore_lease: false,
  };
  while (!r.done) {
    const tag = r.tag();
    switch (tag) {
      case 10:
        req.key = r.bytes();
        break;
      case 18:
        req.value = r.bytes();
        break;
      case 24:
        req.lease = r.int64String(true);
        break;
      case 32:
        req.prev_kv = r.bool();
        break;
      case 40:
        req.ignore_value = r.bool();
        break;
      case 48:
        req.ignore_lease = r.bool();
        break;
      default:
        r.skip(tag);
    }
  }
  return req;
}

export function decodeRangeRequest(buf: Buffer): RangeRequest {
  const r = new PbReader(buf);
  const req: RangeRequest = {
    key: EMPTY,
    range_end: EMPTY,
    limit: '0',
    revision: '0',
    sort_order: 0,
    sort_target: 0,
    serializable: false,
    keys_only: false,
    count_only: false,
    min_mod_revision: '0',
    max_mod_revision: '0',
    min_create_revision: '0',
    max_create_revision: '0',
  };
  while (!r.done) {
    const tag = r.tag();
    switch (tag) {
      case 10:
        req.key = r.bytes();
        break;
      case 18:
        req.range_end = r.bytes();
        break;
      case 24:
        req.limit = r.int64String(true);
        break;
      case 32:
        req.revision = r.int64String(true);
        break;
      case 40:
        req.sort_order = r.varint();
        break;
      case 48:
        req.sort_target = r.varint();
        break;
      case 56:
        req.serializable = r.bool();
        break;
      case 64:
        req.keys_only = r.bool();
        break;
      case 72:
        req.count_only = r.bool();
        break;
      case 80:
        req.min_mod_revision = r.int64String(true);
        break;
      case 88:
        req.max_mod_revision = r.int64String(true);
        break;
      case 96:
        req.min_create_revision = r.int64String(true);
        break;
      case 104:
        req.max_create_revision = r.int64String(true);
        break;
      default:
        r.skip(tag);
    }
  }
  return req;
}
