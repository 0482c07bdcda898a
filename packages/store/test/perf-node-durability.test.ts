// The node loop answers clients before writing the applied state when it may
// (see RaftNode.handleReady): these tests pin down the cases where it must not.
// The WAL's fdatasync is gated through its file interface (../src/wal/fs.ts).
// A lone voter commits an entry in the very Ready that brings it, so the put
// may only be answered once that Ready's synced write is done.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger } from '@kubit/daemon';
import { Level } from 'level';
import type { PutRequest } from '../src/messages.js';
import type { Db } from '../src/mvcc/machine.js';
import { StateMachine } from '../src/mvcc/machine.js';
import { RaftLog } from '../src/node/log.js';
import { RaftNode } from '../src/node/node.js';
import { codecs } from '../src/proto.js';
import { type ConfChange, EntryType, encodeConfChange, RawNode } from '../src/raft/index.js';
import { nodeWalFs, type WalFs } from '../src/wal/fs.js';

/** Holds the WAL's fdatasyncs until released, to see what the loop does meanwhile. */
class GatedFs {
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;
  syncedWrites = 0;

  close(): void {
    this.gate = new Promise((res) => {
      this.open = res;
    });
  }

  release(): void {
    this.open?.();
    this.gate = undefined;
  }

  /** The real file operations, with every datasync waiting for the gate. */
  wrapped(): WalFs {
    return {
      ...nodeWalFs,
      open: (path) => {
        const file = nodeWalFs.open(path);
        return {
          write: (buf, position) => file.write(buf, position),
          close: () => file.close(),
          fill: (from, to) => file.fill(from, to),
          datasync: async () => {
            if (this.gate) await this.gate;
            await file.datasync();
            this.syncedWrites++;
          },
        };
      },
    };
  }
}

function putRequest(key: string): PutRequest {
  return {
    key: Buffer.from(key),
    value: Buffer.from('v'),
    lease: 0,
    prev_kv: false,
    ignore_value: false,
    ignore_lease: false,
  };
}

async function loneVoter(
  dir: string,
): Promise<{ node: RaftNode; gated: GatedFs; level: Level<Buffer, Buffer> }> {
  const level = new Level<Buffer, Buffer>(join(dir, 'member'), {
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
  });
  await level.open();
  const gated = new GatedFs();
  const db = level as unknown as Db;
  const machine = new StateMachine(db, { minLeaseTTL: 1 });
  await machine.load();
  const logger = createLogger({ name: 'perf-node-test', level: 'silent' });
  const log = await RaftLog.open(db, machine.appliedIndex, {
    walDir: join(dir, 'wal'),
    logger,
    segmentBytes: 1024 * 1024,
    fs: gated.wrapped(),
  });
  const member = {
    id: '1',
    name: 'solo',
    peer_urls: ['http://127.0.0.1:1'],
    client_urls: [],
    is_learner: false,
  };
  const cc: ConfChange = { type: 'addNode', nodeId: '1', context: codecs.memberInfo.encode(member) };
  await log.bootstrap([{ term: 1, index: 1, type: EntryType.ConfChange, data: encodeConfChange(cc) }]);
  const node = new RaftNode({
    id: '1',
    db,
    log,
    machine,
    rawNode: (c) => new RawNode(c),
    tickMs: 10,
    electionTicks: 3,
    heartbeatTicks: 1,
    snapshotCount: 100000,
    logger,
    send: () => {},
  });
  node.start();
  for (let i = 0; i < 500 && !node.isLeader; i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(node.isLeader, 'the lone voter did not become leader');
  return { node, gated, level };
}

test('a lone voter answers a put only after the write that makes it durable', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kubit-perf-node-'));
  const { node, gated, level } = await loneVoter(dir);
  try {
    // Let any write of the election finish first.
    await node.propose({ op: 'put', put: putRequest('warm') });
    // ...and let the loop go idle (a write still in flight would hold the next Ready back).
    await new Promise((r) => setTimeout(r, 200));
    gated.close();
    const before = gated.syncedWrites;
    let answered = false;
    const put = node.propose({ op: 'put', put: putRequest('k') }).then((r) => {
      answered = true;
      return r;
    });
    // However long it takes, the answer must wait for the gated fsync.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(answered, false, 'the put was answered before its entry was fsynced');
    assert.equal(gated.syncedWrites, before);
    gated.release();
    const result = await put;
    assert.equal(result.ok, true);
    assert.ok(gated.syncedWrites > before, 'no synced write happened for the put');
  } finally {
    gated.release();
    node.stop();
    await node.drain();
    await level.close();
    await rm(dir, { recursive: true, force: true });
  }
});
