// kubitstore.Command (a replicated request) with a hand-written fast path for
// the commonest one, a put; every other command goes through the generic codec.

import { PbReader, PbWriter } from '@kubit/wire';
import type { Command } from '../messages.js';
import { codecs } from '../proto.js';
import { decodePutRequest } from '../wire/etcd.js';

const writer = new PbWriter(4096);
const PUT_FIELD_TAG = 26; // field 3, length-delimited

export function encodeCommand(cmd: Command): Buffer {
  const put = cmd.put;
  if (cmd.op !== 'put' || !put) return codecs.command.encode(cmd);
  const w = writer.reset();
  w.string(1, cmd.origin);
  w.int64(2, cmd.id);
  const mark = w.begin(3);
  w.bytes(1, put.key);
  w.bytes(2, put.value);
  w.int64(3, put.lease);
  w.bool(4, put.prev_kv);
  w.bool(5, put.ignore_value);
  w.bool(6, put.ignore_lease);
  w.end(mark);
  return w.finish();
}

export function decodeCommand(buf: Buffer): Command {
  const r = new PbReader(buf);
  let origin = '';
  let id = '0';
  let put: [number, number] | undefined;
  while (!r.done) {
    const tag = r.tag();
    if (tag === 10) origin = r.string();
    else if (tag === 16) id = r.int64String(false);
    else if (tag === PUT_FIELD_TAG && !put) put = r.span();
    // Anything else (another op, a repeated put): the generic codec decides.
    else return codecs.command.decode(buf);
  }
  if (!put) return codecs.command.decode(buf);
  return { origin, id, op: 'put', put: decodePutRequest(buf.subarray(put[0], put[1])) };
}
