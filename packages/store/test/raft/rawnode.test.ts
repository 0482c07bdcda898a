// RawNode contract and input hygiene; MemoryStorage; bootstrap.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  bootstrapEntries,
  decodeConfChange,
  type Entry,
  EntryType,
  InvalidMessageError,
  isLocalMessage,
  MemoryStorage,
  type Message,
  newMessage,
  RaftUsageError,
  RawNode,
} from '../../src/raft/index.js';
import { bytes } from './sim.js';

function ent(index: number, term: number, data = ''): Entry {
  return { index, term, type: EntryType.Normal, data: bytes(data) };
}

function singleNode(): { node: RawNode; storage: MemoryStorage } {
  const storage = new MemoryStorage({ voters: ['1'], learners: [] });
  const node = new RawNode({ id: '1', storage, electionTick: 10, heartbeatTick: 1 });
  return { node, storage };
}

test('garbage from the network is rejected with InvalidMessageError and changes nothing', () => {
  const { node } = singleNode();
  const before = node.status();
  const bad: unknown[] = [
    null,
    42,
    { type: 'MsgNope', from: '2', to: '1' },
    { ...newMessage('MsgApp', '2', '1', 1), term: -1 },
    { ...newMessage('MsgApp', '2', '1', 1), to: '9' },
    { ...newMessage('MsgApp', '2', '1', 1), from: '' },
    { ...newMessage('MsgApp', '2', '1', 1), entries: [ent(5, 1)] }, // not consecutive after index 0
    { ...newMessage('MsgApp', '2', '1', 1), entries: [ent(1, 7)] }, // entry term above message term
    { ...newMessage('MsgApp', '2', '1', 1), entries: [{ index: 1, term: 1, type: 9, data: bytes('') }] },
    { ...newMessage('MsgHeartbeat', '2', '1', 1), entries: [ent(1, 1)] },
    newMessage('MsgSnap', '2', '1', 1), // no snapshot
    newMessage('MsgProp', '2', '1', 0), // no entries
    newMessage('MsgSnapStatus', '2', '1', 0), // local only
    { ...newMessage('MsgHeartbeat', '2', '1', 1), context: 'str' },
  ];
  for (const m of bad) assert.throws(() => node.step(m as Message), InvalidMessageError, JSON.stringify(m));
  assert.deepEqual(node.status(), before);
  assert.equal(node.hasReady(), false);
  assert.ok(isLocalMessage('MsgSnapStatus'));
});

test('a single node elects itself and commits proposals without peers', () => {
  const { node, storage } = singleNode();
  node.campaign();
  let applied: Entry[] = [];
  const drain = () => {
    while (node.hasReady()) {
      const rd = node.ready();
      if (rd.hardState) storage.setHardState(rd.hardState);
      storage.append(rd.entries);
      applied = applied.concat(rd.committedEntries);
      assert.equal(rd.messages.length, 0);
      node.advance(rd);
    }
  };
  drain();
  assert.equal(node.status().state, 'leader');
  node.propose(bytes('a'));
  node.proposeBatch([bytes('b'), bytes('c')]);
  drain();
  assert.deepEqual(
    applied.map((e) => new TextDecoder().decode(e.data)),
    ['', 'a', 'b', 'c'],
  );
  node.readIndex(bytes('q'));
  const rd = node.ready();
  assert.equal(rd.readStates.length, 1);
  assert.equal(rd.readStates[0].index, 4);
  node.advance(rd);
});

test('ready() twice without advance() is a usage error; advance() needs that Ready', () => {
  const { node } = singleNode();
  node.campaign();
  const rd = node.ready();
  assert.throws(() => node.ready(), RaftUsageError);
  assert.equal(node.hasReady(), false, 'nothing more is handed out while a Ready is outstanding');
  assert.throws(() => node.advance({ ...rd }), RaftUsageError);
  node.advance(rd);
});

test('config validation names the problem', () => {
  const storage = new MemoryStorage();
  assert.throws(() => new RawNode({ id: '', storage, electionTick: 10, heartbeatTick: 1 }), /id/);
  assert.throws(() => new RawNode({ id: '1', storage, electionTick: 1, heartbeatTick: 1 }), /electionTick/);
  assert.throws(() => new RawNode({ id: '1', storage, electionTick: 10, heartbeatTick: 0 }), /heartbeatTick/);
});

test('restart with applied older than the stored snapshot is refused', () => {
  const storage = new MemoryStorage({ voters: ['1'], learners: [] });
  storage.append([ent(1, 1), ent(2, 1), ent(3, 1)]);
  storage.setHardState({ term: 1, vote: '1', commit: 3 });
  storage.createSnapshot(2, { voters: ['1'], learners: [] }, bytes('state'));
  storage.compact(2);
  assert.throws(
    () => new RawNode({ id: '1', storage, electionTick: 10, heartbeatTick: 1, applied: 1 }),
    /restore the state machine/,
  );
  const node = new RawNode({ id: '1', storage, electionTick: 10, heartbeatTick: 1, applied: 2 });
  assert.deepEqual(
    node.ready().committedEntries.map((e) => e.index),
    [3],
  );
});

test('MemoryStorage: append truncates conflicts, compact keeps the boundary term, entries honours maxBytes', () => {
  const s = new MemoryStorage();
  s.append([ent(1, 1, 'a'), ent(2, 1, 'b'), ent(3, 1, 'c')]);
  s.append([ent(2, 2, 'B')]);
  assert.equal(s.lastIndex(), 2);
  assert.equal(s.term(2), 2);
  s.append([ent(3, 2, 'C'), ent(4, 2, 'D')]);
  assert.throws(() => s.append([ent(9, 2)]), /gap/);
  assert.throws(() => s.compact(2), /createSnapshot first/);
  s.createSnapshot(3, { voters: ['1'], learners: [] }, bytes('snap'));
  s.compact(3);
  assert.equal(s.firstIndex(), 4);
  assert.equal(s.term(3), 2);
  assert.throws(() => s.entries(3, 5), /compacted/);
  assert.equal(s.entries(4, 5).length, 1);
  s.append([ent(5, 2, 'x'.repeat(100)), ent(6, 2, 'y'.repeat(100))]);
  assert.equal(s.entries(4, 7, 10).length, 1, 'at least one entry even over the budget');
  assert.equal(s.entries(4, 7, 200).length, 2);
  s.applySnapshot({
    meta: { index: 10, term: 3, confState: { voters: ['1'], learners: [] } },
    data: bytes(''),
  });
  assert.equal(s.firstIndex(), 11);
  assert.equal(s.lastIndex(), 10);
  assert.equal(s.term(10), 3);
});

test('bootstrap entries are identical for any member order and decode to addNode changes', () => {
  const a = bootstrapEntries(['3', '1', '2']);
  const b = bootstrapEntries(['1', '2', '3']);
  assert.deepEqual(a, b);
  assert.deepEqual(a.hardState, { term: 1, vote: '', commit: 3 });
  assert.deepEqual(
    a.entries.map((e) => decodeConfChange(e.data)),
    ['1', '2', '3'].map((nodeId) => ({ type: 'addNode', nodeId })),
  );
});

test('a stale leader learns the new term from a follower and steps down', () => {
  const storage = new MemoryStorage({ voters: ['1', '2', '3'], learners: [] });
  const node = new RawNode({ id: '1', storage, electionTick: 10, heartbeatTick: 1, checkQuorum: true });
  node.campaign();
  node.advance(node.ready());
  node.step(newMessage('MsgVoteResp', '2', '1', 1));
  assert.equal(node.status().state, 'leader');
  const resp = newMessage('MsgAppResp', '2', '1', 5);
  node.step(resp);
  const st = node.status();
  assert.equal(st.state, 'follower');
  assert.equal(st.term, 5);
});

test('bootstrap entries carry member contexts', () => {
  const ctx = bytes('peer-urls');
  const boot = bootstrapEntries([{ nodeId: 'b', context: ctx }, 'a']);
  assert.deepEqual(
    boot.entries.map((e) => decodeConfChange(e.data)),
    [
      { type: 'addNode', nodeId: 'a' },
      { type: 'addNode', nodeId: 'b', context: ctx },
    ],
  );
});
