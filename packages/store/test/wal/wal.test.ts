// The WAL on real files: round trips across segments, overwritten tails,
// torn and damaged tails at every byte, damage where data was durable
// (refused), crashes around segment cuts and releases, and a power loss
// under load that drops every unsynced byte.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { type Entry, EntryType } from '../../src/raft/types.js';
import { WalCorruptError, type WalState } from '../../src/wal/replay.js';
import { Wal } from '../../src/wal/wal.js';
import { PowerLossFs } from './power-loss-fs.js';

const SEGMENT = 8192;
const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'kubit-wal-'));
  dirs.push(d);
  return d;
}

function entry(index: number, term = 1, size = 20): Entry {
  return { index, term, type: EntryType.Normal, data: Buffer.alloc(size, `${index}:${term};`) };
}

function summary(s: WalState): string[] {
  return s.entries.map((e) => `${e.index}/${e.term}/${Buffer.from(e.data).toString('hex')}`);
}

function segments(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.wal'))
    .sort();
}

async function reopen(dir: string): Promise<WalState> {
  const { wal, state } = await Wal.open(dir, { segmentBytes: SEGMENT });
  await wal.close();
  return state;
}

test('entries and hard states round-trip across segment cuts', async () => {
  const dir = await tempDir();
  const { wal } = await Wal.open(dir, { segmentBytes: SEGMENT });
  for (let i = 1; i <= 300; i += 3) {
    await wal.save({ term: 1, vote: 'a', commit: i - 1 }, [entry(i), entry(i + 1), entry(i + 2, 1, 300)]);
  }
  assert.ok(wal.segmentCount > 3, `expected several segments, got ${wal.segmentCount}`);
  await wal.close();
  const state = await reopen(dir);
  assert.equal(state.entries.length, 300);
  assert.deepEqual(
    state.entries.map((e) => e.index),
    Array.from({ length: 300 }, (_, i) => i + 1),
  );
  assert.deepEqual(state.hardState, { term: 1, vote: 'a', commit: 297 });
  assert.equal(Buffer.from(state.entries[299].data).length, 300);
});

test('a write larger than the space filled ahead waits for the fill, in a full-size segment', async () => {
  const dir = await tempDir();
  const { wal } = await Wal.open(dir);
  const big = Array.from({ length: 10 }, (_, i) => entry(i + 1, 1, 1024 * 1024));
  await wal.save({ term: 1, vote: '', commit: 0 }, big);
  await wal.save(undefined, [entry(11)]);
  await wal.close();
  const { wal: again, state } = await Wal.open(dir);
  await again.close();
  assert.equal(state.entries.length, 11);
  assert.equal(Buffer.from(state.entries[9].data).length, 1024 * 1024);
  assert.equal(fs.statSync(join(dir, segments(dir)[0])).size, 64 * 1024 * 1024);
});

test('a later entry at a lower index replaces the tail (a new leader overwrote it)', async () => {
  const dir = await tempDir();
  const { wal } = await Wal.open(dir, { segmentBytes: SEGMENT });
  await wal.save(
    { term: 1, vote: '', commit: 0 },
    [1, 2, 3, 4, 5].map((i) => entry(i, 1)),
  );
  await wal.save({ term: 2, vote: 'b', commit: 2 }, [entry(3, 2), entry(4, 2)]);
  assert.equal(wal.durableIndex, 4);
  await wal.close();
  const state = await reopen(dir);
  assert.deepEqual(
    state.entries.map((e) => `${e.index}/${e.term}`),
    ['1/1', '2/1', '3/2', '4/2'],
  );
  assert.deepEqual(state.hardState, { term: 2, vote: 'b', commit: 2 });
});

/** A WAL of one segment with `acked` synced batches, then one more; returns the file and where the last batch starts. */
async function lastBatchFixture(): Promise<{
  dir: string;
  file: string;
  bytes: Buffer;
  lastStart: number;
  lastEnd: number;
  acked: string[];
  all: string[];
}> {
  const dir = await tempDir();
  const { wal } = await Wal.open(dir, { segmentBytes: SEGMENT });
  for (let i = 1; i <= 6; i += 2) await wal.save({ term: 1, vote: '', commit: i }, [entry(i), entry(i + 1)]);
  const file = join(dir, segments(dir)[0]);
  const before = fs.readFileSync(file);
  const lastStart = lastNonZero(before);
  const acked = summary(await snapshotState(dir));
  await wal.save({ term: 2, vote: 'x', commit: 6 }, [entry(7, 2), entry(8, 2, 40)]);
  await wal.close();
  const bytes = fs.readFileSync(file);
  // The batch record gives its write's length (u32 after the seed).
  const lastEnd = lastStart + bytes.readUInt32LE(lastStart + 16);
  const all = summary(await snapshotState(dir));
  return { dir, file, bytes, lastStart, lastEnd, acked, all };
}

/** The end of the written bytes, rounded up to 8 (records are 8-aligned). */
function lastNonZero(b: Buffer): number {
  let i = b.length - 1;
  while (i >= 0 && b[i] === 0) i--;
  return (i + 8) & ~7;
}

/** Replays a copy of the directory (the original stays as it is). */
async function snapshotState(dir: string): Promise<WalState> {
  const copy = await tempDir();
  for (const n of fs.readdirSync(dir)) if (n.endsWith('.wal')) fs.copyFileSync(join(dir, n), join(copy, n));
  return reopen(copy);
}

async function stateWith(fixture: { file: string }, bytes: Buffer): Promise<WalState> {
  const dir = await tempDir();
  fs.writeFileSync(join(dir, fixture.file.split('/').pop()!), bytes);
  return reopen(dir);
}

test('a last write torn at every byte offset: the tail is cut, every earlier write kept', async () => {
  const f = await lastBatchFixture();
  assert.ok(f.lastEnd > f.lastStart + 40, 'the fixture wrote a last batch');
  assert.equal(f.all.length, 8);
  for (let cut = f.lastStart; cut < f.lastEnd; cut++) {
    // Zero-filled past the tear (the preallocated file), and cut short (a file that grew).
    const zeroed = Buffer.from(f.bytes);
    zeroed.fill(0, cut);
    // Zeroing the zero padding at the very end tears nothing.
    const intact = f.bytes.subarray(cut, f.lastEnd).every((b) => b === 0);
    assert.deepEqual(
      summary(await stateWith(f, zeroed)),
      intact ? f.all : f.acked,
      `torn (zeroed) at byte ${cut}`,
    );
    assert.deepEqual(
      summary(await stateWith(f, f.bytes.subarray(0, cut))),
      f.acked,
      `cut short at byte ${cut}`,
    );
  }
  assert.deepEqual(summary(await stateWith(f, f.bytes.subarray(0, f.lastEnd))), f.all);
});

test('a last write damaged at every byte offset: the tail is cut, every earlier write kept', async () => {
  const f = await lastBatchFixture();
  for (let at = f.lastStart; at < f.lastEnd; at++) {
    const bad = Buffer.from(f.bytes);
    bad[at] ^= 0x5a;
    assert.deepEqual(summary(await stateWith(f, bad)), f.acked, `byte ${at} flipped`);
  }
  // After a repair the file is usable: a new write lands where the torn one was.
  const dir = await tempDir();
  const name = f.file.split('/').pop()!;
  const bad = Buffer.from(f.bytes);
  bad[f.lastStart + 20] ^= 1;
  fs.writeFileSync(join(dir, name), bad);
  const { wal, state } = await Wal.open(dir, { segmentBytes: SEGMENT });
  assert.deepEqual(summary(state), f.acked);
  await wal.save(undefined, [entry(7, 3)]);
  await wal.close();
  assert.deepEqual(
    (await reopen(dir)).entries.map((e) => `${e.index}/${e.term}`),
    ['1/1', '2/1', '3/1', '4/1', '5/1', '6/1', '7/3'],
  );
});

test('a damaged head of the only segment is cut; the rewritten head and new writes replay', async () => {
  const dir = await tempDir();
  const { wal } = await Wal.open(dir, { segmentBytes: SEGMENT });
  await wal.close();
  const file = join(dir, segments(dir)[0]);
  const b = fs.readFileSync(file);
  b[9] ^= 0xff;
  fs.writeFileSync(file, b);
  const { wal: again, state } = await Wal.open(dir, { segmentBytes: SEGMENT });
  assert.equal(state.entries.length, 0);
  await again.save({ term: 1, vote: '', commit: 0 }, [entry(1), entry(2)]);
  await again.close();
  assert.deepEqual(
    (await reopen(dir)).entries.map((e) => e.index),
    [1, 2],
  );
});

test('zeroed and garbage tails are cut', async () => {
  const f = await lastBatchFixture();
  const garbage = Buffer.from(f.bytes);
  for (let i = f.lastStart; i < f.lastStart + 200; i++) garbage[i] = (i * 131 + 7) & 0xff;
  assert.deepEqual(summary(await stateWith(f, garbage)), f.acked);
  const zeroed = Buffer.from(f.bytes);
  zeroed.fill(0, f.lastStart, f.lastEnd);
  assert.deepEqual(summary(await stateWith(f, zeroed)), f.acked);
  // Garbage after the last good write, where only zeros should be.
  const trailing = Buffer.from(f.bytes);
  for (let i = f.lastEnd + 16; i < f.lastEnd + 100; i++) trailing[i] = (i * 97) & 0xff;
  assert.deepEqual(summary(await stateWith(f, trailing)), f.all);
});

test('damage in a write that a later write followed is refused, with where and what', async () => {
  const f = await lastBatchFixture();
  // A byte of the second batch: the third and fourth came after it was durable.
  const bad = Buffer.from(f.bytes);
  bad[f.lastStart - 60] ^= 0x01;
  await assert.rejects(stateWith(f, bad), (err: Error) => {
    assert.ok(err instanceof WalCorruptError, String(err));
    assert.match(
      err.message,
      /at byte \d+: (crc mismatch|non-zero padding|.*), with a valid batch at byte \d+ after it/,
    );
    assert.match(err.message, /refuses to start/);
    assert.match(err.message, /member remove/);
    return true;
  });
  // Zeros over durable data, with a later write after them: refused too.
  const holed = Buffer.from(f.bytes);
  holed.fill(0, 0, 64);
  await assert.rejects(stateWith(f, holed), WalCorruptError);
});

test('a bad crc in an earlier segment refuses the start', async () => {
  const dir = await tempDir();
  const { wal } = await Wal.open(dir, { segmentBytes: SEGMENT });
  for (let i = 1; i <= 120; i++) await wal.save({ term: 1, vote: '', commit: i - 1 }, [entry(i, 1, 100)]);
  await wal.close();
  const segs = segments(dir);
  assert.ok(segs.length >= 3);
  const first = join(dir, segs[0]);
  const b = fs.readFileSync(first);
  const end = lastNonZero(b);
  // The last record of the first segment: no later batch in its file, but it is not the last segment.
  b[end - 10] ^= 0x10;
  fs.writeFileSync(first, b);
  await assert.rejects(Wal.open(dir, { segmentBytes: SEGMENT }), (err: Error) => {
    assert.ok(err instanceof WalCorruptError, String(err));
    assert.ok(err.message.includes(segs[0]), err.message);
    return true;
  });
});

test("a crash between a segment file's creation and its rename leaves nothing that counts", async () => {
  const dir = await tempDir();
  const { wal } = await Wal.open(dir, { segmentBytes: SEGMENT });
  for (let i = 1; i <= 40; i++) await wal.save(undefined, [entry(i, 1, 100)]);
  await wal.close();
  const want = summary(await snapshotState(dir));
  // A spare with a head written into it, and a half-made one.
  fs.copyFileSync(join(dir, segments(dir).at(-1)!), join(dir, 'next.tmp'));
  fs.writeFileSync(join(dir, 'other.tmp'), Buffer.alloc(100, 7));
  const { wal: again, state } = await Wal.open(dir, { segmentBytes: SEGMENT });
  assert.deepEqual(summary(state), want);
  assert.ok(!fs.existsSync(join(dir, 'other.tmp')));
  await again.save(undefined, [entry(41)]);
  await again.close();
  assert.equal((await reopen(dir)).entries.length, 41);
});

test('a crash after a compaction and before the old segments are deleted, then the release', async () => {
  const dir = await tempDir();
  const { wal } = await Wal.open(dir, { segmentBytes: SEGMENT });
  for (let i = 1; i <= 200; i++) await wal.save({ term: 1, vote: '', commit: i }, [entry(i, 1, 100)]);
  const before = wal.segmentCount;
  await wal.compact(150, 1);
  await wal.close(); // the crash: compacted, nothing released
  assert.equal(segments(dir).length, before);
  const { wal: again, state } = await Wal.open(dir, { segmentBytes: SEGMENT });
  assert.equal(state.snapshot.index, 150);
  assert.equal(state.snapshot.term, 1);
  assert.deepEqual(
    state.entries.map((e) => e.index),
    Array.from({ length: 50 }, (_, i) => 151 + i),
  );
  again.release(150);
  assert.ok(again.segmentCount < before, `released: ${again.segmentCount} of ${before}`);
  await again.save({ term: 1, vote: '', commit: 201 }, [entry(201, 1, 100)]);
  await again.close();
  const after = await reopen(dir);
  assert.equal(after.snapshot.index, 150);
  assert.deepEqual(after.entries[0].index, 151);
  assert.equal(after.entries.length, 51);
  assert.deepEqual(after.hardState, { term: 1, vote: '', commit: 201 });
});

test('a snapshot from the leader replaces the log; segments before it can go', async () => {
  const dir = await tempDir();
  const { wal } = await Wal.open(dir, { segmentBytes: SEGMENT });
  for (let i = 1; i <= 100; i++) await wal.save(undefined, [entry(i, 1, 100)]);
  const meta = { index: 500, term: 3, confState: { voters: ['a', 'b'], learners: [] } };
  await wal.saveSnapshot(meta);
  assert.equal(wal.durableIndex, 500);
  wal.release(500);
  assert.equal(wal.segmentCount, 1);
  await wal.save({ term: 3, vote: '', commit: 501 }, [entry(501, 3)]);
  await wal.close();
  const state = await reopen(dir);
  assert.deepEqual(state.snapshot, meta);
  assert.deepEqual(
    state.entries.map((e) => e.index),
    [501],
  );
});

test('a power loss under load drops only unsynced bytes: every acknowledged entry survives', async () => {
  for (let round = 0; round < 5; round++) {
    const dir = await tempDir();
    const pfs = new PowerLossFs();
    const { wal } = await Wal.open(dir, { segmentBytes: SEGMENT, fs: pfs });
    let next = 1;
    let acked = 0;
    const saved = new Map<number, string>();
    let stop = false;
    const writers = Array.from({ length: 4 }, async () => {
      while (!stop) {
        const batch: Entry[] = [];
        const n = 1 + ((next * 7) % 5);
        for (let k = 0; k < n; k++) {
          const e = entry(next++, 1, 10 + ((next * 13) % 400));
          saved.set(e.index, Buffer.from(e.data).toString('hex'));
          batch.push(e);
        }
        const last = batch[batch.length - 1].index;
        try {
          await wal.save({ term: 1, vote: '', commit: 0 }, batch);
        } catch {
          return; // the power is gone
        }
        if (!stop) acked = Math.max(acked, last);
      }
    });
    await new Promise((r) => setTimeout(r, 30 + round * 25));
    stop = true;
    const ackedAtLoss = acked;
    pfs.powerLoss();
    await Promise.allSettled(writers);
    const state = await reopen(dir);
    const last = state.entries.at(-1)?.index ?? 0;
    assert.ok(ackedAtLoss > 0, 'the load wrote something');
    assert.ok(
      last >= ackedAtLoss,
      `round ${round}: acknowledged up to ${ackedAtLoss}, replayed up to ${last}`,
    );
    // What replays is exactly a prefix of what was saved, byte for byte.
    state.entries.forEach((e, i) => {
      assert.equal(e.index, i + 1);
      assert.equal(Buffer.from(e.data).toString('hex'), saved.get(e.index));
    });
    assert.ok(pfs.syncs > 0);
  }
});
