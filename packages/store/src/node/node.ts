// The node loop: drives the raft core. Each Ready is handled in raft's order:
// persist hard state + entries in ONE write-ahead-log write and fdatasync
// (group commit: every proposal that arrived meanwhile shares it), send
// messages, apply committed entries, answer waiting clients, advance.
//
// No Ready waits for its write (dissertation §10.2.1): the loop queues the
// write in the WAL, hands the Ready back (RawNode.accept) and takes the next
// one, and reports the log durable (RawNode.persisted) when the write
// completes. A leader sends its MsgApps at once, and its own copy counts
// towards commitment only once persisted; so an entry is committed exactly
// when a majority, with or without the leader, holds it on disk, and anyone
// may apply it and answer at once. A follower's acks and votes promise what
// it wrote: they wait for the WAL to hold everything up to their Ready, and
// leave in Ready order.
//
// The applied (MVCC) state goes to level apart from the log, unsynced, as
// etcd's backend commits apart from its WAL: every FLUSH_DELAY_MS or
// MAX_UNWRITTEN_OPS operations, one level batch at a time, each only once the
// WAL durably holds the entries it applied (so level is never ahead of the
// log that rebuilds it). A restart replays the log past the applied index
// level holds. Before the log drops entries (compaction), the state covering
// them is written with a sync.
import type { Logger } from '@kubit/daemon';
import { Errors, type EtcdError } from '../errors.js';
import type { Command, MemberInfo } from '../messages.js';
import type { ApplyResult, Db, StateMachine } from '../mvcc/machine.js';
import type { BatchOp } from '../mvcc/store.js';
import { codecs } from '../proto.js';
import { decodeConfChange } from '../raft/index.js';
import type { ConfChange, ConfState, Entry, Message, Ready, SoftState } from '../raft/types.js';
import { logArena } from '../wire/arena.js';
import { decodeCommand, encodeCommand } from './command.js';
import type { RaftLog } from './log.js';
import type { RawNodeFactory, RawNodeLike } from './rawnode.js';
import { trace, traceMessages, traceReady, tracing } from './trace.js';

const ENTRY_CONF_CHANGE = 1;
const REQUEST_TIMEOUT_MS = 7000;
/** Longest an applied change waits in memory before it is written to level (etcd's backend: 100 ms). */
const FLUSH_DELAY_MS = 100;
/** Unwritten applied-state operations beyond this are written at once (etcd's backend: 10,000). */
const MAX_UNWRITTEN_OPS = 10_000;

/**
 * Messages that promise nothing about this member's log or vote may leave
 * before this Ready's write: requests forwarded to the leader, and heartbeat
 * answers (they only say "I hear you"; holding them behind a slow fsync
 * would make a leader with checkQuorum think it lost its followers).
 */
function promisesNothing(m: Message): boolean {
  return (
    m.type === 'MsgProp' ||
    m.type === 'MsgReadIndex' ||
    m.type === 'MsgTransferLeader' ||
    m.type === 'MsgHeartbeatResp'
  );
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** One level batch through the chained API (about half the CPU of the array form per operation). */
export function writeOps(db: Db, ops: BatchOp[], sync: boolean): Promise<void> {
  const batch = db.batch();
  for (const op of ops) {
    if (op.type === 'put') batch.put(op.key, op.value);
    else batch.del(op.key);
  }
  return batch.write({ sync });
}

export interface NodeOptions {
  id: string;
  db: Db;
  log: RaftLog;
  machine: StateMachine;
  rawNode: RawNodeFactory;
  tickMs: number;
  electionTicks: number;
  heartbeatTicks: number;
  snapshotCount: number;
  logger: Logger;
  send(messages: Message[]): void;
  onLeaderChange?(lead: string, isLeader: boolean): void;
  onRemoved?(): void;
}

interface Waiter {
  resolve(v: ApplyResult): void;
  timer: NodeJS.Timeout;
}

interface ConfWaiter {
  resolve(cs: ConfState): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class RaftNode {
  readonly id: string;
  private raw!: RawNodeLike;
  private readonly opts: NodeOptions;
  private busy = false;
  private again = false;
  private ticker: NodeJS.Timeout | undefined;
  private nextId = 1;
  private readonly waiters = new Map<string, Waiter>();
  private readonly proposed = new WeakMap<Uint8Array, Command>();
  private readonly confWaiters = new Map<string, ConfWaiter>();
  private readonly appliedWaiters: { index: number; resolve(): void }[] = [];
  private readonly readWaiters = new Map<string, { resolve(): void; reject(e: Error): void }[]>();
  private pendingReads: { resolve(): void; reject(e: Error): void }[] = [];
  private readSeq = 0;
  private lastSnapshotIndex = 0;
  private stopped = false;
  /** Level operations of applied entries not yet written. */
  private unwritten: BatchOp[] = [];
  /** The applied index last written to level. */
  private writtenApplied = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private flushDue = false;
  /** The loop's current run, so a shutdown can wait for its write. */
  private running: Promise<void> = Promise.resolve();
  /** The last level batch of applied state queued (they are written one at a time, in order). */
  private stateTail: Promise<void> = Promise.resolve();
  /** The last scheduled send of messages that wait for a write (they leave in order). */
  private lateTail: Promise<void> | undefined;
  soft: SoftState = { lead: '', state: 'follower' };
  term = 0;
  commitIndex = 0;

  constructor(opts: NodeOptions) {
    this.opts = opts;
    this.id = opts.id;
  }

  get machine(): StateMachine {
    return this.opts.machine;
  }

  get isLeader(): boolean {
    return this.soft.state === 'leader';
  }

  get leader(): string {
    return this.soft.lead;
  }

  start(): void {
    const { log, machine } = this.opts;
    this.lastSnapshotIndex = log.firstIndex() - 1;
    this.writtenApplied = machine.appliedIndex;
    this.term = log.hardState.term;
    this.commitIndex = log.hardState.commit;
    log.snapshotSource = () => {
      const index = machine.appliedIndex;
      return {
        meta: { index, term: log.term(index), confState: log.confState },
        data: machine.serialize(),
      };
    };
    this.raw = this.opts.rawNode({
      id: this.id,
      electionTick: this.opts.electionTicks,
      heartbeatTick: this.opts.heartbeatTicks,
      storage: log,
      applied: machine.appliedIndex,
      preVote: true,
      checkQuorum: true,
      maxSizePerMsg: 1024 * 1024,
      maxInflightMsgs: 256,
    });
    this.ticker = setInterval(() => {
      this.raw.tick();
      this.kick();
    }, this.opts.tickMs);
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    if (this.ticker) clearInterval(this.ticker);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    for (const w of this.waiters.values()) {
      clearTimeout(w.timer);
      w.resolve({ ok: false, error: Errors.stopped() });
    }
    this.waiters.clear();
  }

  /**
   * After stop(): waits for the loop's last writes, then writes the applied
   * state still held in memory, synced (so a restart replays less of the log),
   * and closes the WAL.
   */
  async drain(): Promise<void> {
    await this.running;
    await this.writesIdle();
    const { ops, applied } = this.takeUnwritten();
    if (ops.length > 0) await this.writeState(ops, applied, true);
    await this.opts.log.close();
  }

  /**
   * Queues a level batch of applied state behind those already queued. It is
   * written once the WAL durably holds entry `applied` (level never gets ahead
   * of the log that rebuilds it); `sync` makes it (and every batch before it) durable.
   */
  private writeState(ops: BatchOp[], applied: number, sync: boolean): Promise<void> {
    const { db, log } = this.opts;
    const write = this.stateTail.then(async () => {
      await log.wal.whenDurable(applied);
      trace('state-write-start', { ops: ops.length, sync });
      await writeOps(db, ops, sync);
      trace('state-write-done', { ops: ops.length, sync });
    });
    this.stateTail = write.catch((err: unknown) =>
      this.fatal(err, 'writing the applied state to level failed'),
    );
    return write;
  }

  private fatal(err: unknown, what: string): never {
    this.opts.logger.fatal({ err }, `${what}; stopping to protect the data`);
    process.exit(2);
  }

  private flushState(): void {
    const { ops, applied } = this.takeUnwritten();
    if (ops.length > 0) void this.writeState(ops, applied, false);
  }

  /** Sends `messages` once `barrier` settles, never before messages scheduled earlier. */
  private sendAfter(barrier: Promise<void> | undefined, messages: Message[]): void {
    const wait = barrier ?? this.lateTail;
    if (!wait) {
      this.sendNow(messages);
      return;
    }
    const tail = wait.then(() => {
      if (this.lateTail === tail) this.lateTail = undefined;
      this.sendNow(messages);
    });
    this.lateTail = tail;
  }

  private sendNow(messages: Message[]): void {
    if (this.stopped) return;
    traceMessages('send', messages);
    this.opts.send(messages);
  }

  /** Resolves once everything queued so far (log and applied state) is written. */
  private async writesIdle(): Promise<void> {
    const wal = this.opts.log.wal;
    for (let idle = wal.idle(); idle; idle = wal.idle()) await idle;
    let tail: Promise<void>;
    do {
      tail = this.stateTail;
      await tail;
    } while (tail !== this.stateTail);
  }

  /** A batch of raft messages from a peer. */
  receive(messages: Message[]): void {
    if (this.stopped) return;
    traceMessages('recv', messages);
    for (const m of messages) {
      try {
        this.raw.step(m);
      } catch (err) {
        this.opts.logger.debug({ err, type: m.type, from: m.from }, 'dropped raft message');
      }
    }
    this.kick();
  }

  reportUnreachable(id: string): void {
    this.raw.reportUnreachable(id);
  }

  reportSnapshot(id: string, ok: boolean): void {
    this.raw.reportSnapshot(id, ok);
    this.kick();
  }

  /**
   * Replicates a command; resolves once it is applied here (with its result).
   * `maxBytes` refuses an encoded command larger than that before it reaches the log.
   */
  propose(cmd: Omit<Command, 'origin' | 'id'>, maxBytes = Number.POSITIVE_INFINITY): Promise<ApplyResult> {
    if (this.stopped) return Promise.resolve({ ok: false, error: Errors.stopped() });
    const id = String(this.nextId++);
    const full: Command = { ...cmd, origin: this.id, id };
    // Held in the in-memory log until compaction: copied to the log's own chunks.
    const data = logArena.copy(encodeCommand(full));
    if (data.length > maxBytes) return Promise.resolve({ ok: false, error: Errors.requestTooLarge() });
    // The leader applies the very bytes it proposed: remember the decoded form.
    this.proposed.set(data, full);
    trace('propose', { id });
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        resolve({ ok: false, error: Errors.timeout() });
      }, REQUEST_TIMEOUT_MS);
      this.waiters.set(id, { resolve, timer });
      try {
        this.raw.propose(data);
      } catch {
        clearTimeout(timer);
        this.waiters.delete(id);
        resolve({ ok: false, error: this.leader ? Errors.timeout() : Errors.noLeader() });
        return;
      }
      this.kick();
    });
  }

  /** Waits until this member has applied everything committed when the read began (ReadIndex). */
  linearizableRead(): Promise<void> {
    if (this.stopped) return Promise.reject(Errors.stopped());
    return new Promise((resolve, reject) => {
      this.pendingReads.push({ resolve, reject });
      this.kick();
    });
  }

  proposeConfChange(cc: ConfChange): Promise<ConfState> {
    const key = `${cc.type}/${cc.nodeId}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.confWaiters.delete(key);
        reject(Errors.timeout());
      }, REQUEST_TIMEOUT_MS);
      this.confWaiters.set(key, { resolve, reject, timer });
      try {
        this.raw.proposeConfChange(cc);
      } catch {
        clearTimeout(timer);
        this.confWaiters.delete(key);
        reject(this.leader ? Errors.timeout() : Errors.noLeader());
        return;
      }
      this.kick();
    });
  }

  transferLeader(id: string): void {
    this.raw.transferLeader(id);
    this.kick();
  }

  private kick(): void {
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    setImmediate(() => {
      trace('run');
      this.running = this.run();
    });
  }

  private flushReads(): void {
    if (this.pendingReads.length === 0) return;
    const ctx = String(++this.readSeq);
    this.readWaiters.set(ctx, this.pendingReads);
    const waiting = this.pendingReads;
    this.pendingReads = [];
    try {
      this.raw.readIndex(Buffer.from(ctx));
    } catch {
      this.readWaiters.delete(ctx);
      for (const w of waiting) w.reject(this.leader ? Errors.timeout() : Errors.noLeader());
      return;
    }
    // A read whose ReadIndex round never completes (leader lost) times out.
    setTimeout(() => {
      const ws = this.readWaiters.get(ctx);
      if (!ws) return;
      this.readWaiters.delete(ctx);
      for (const w of ws) w.reject(Errors.timeout());
    }, REQUEST_TIMEOUT_MS).unref();
  }

  private async run(): Promise<void> {
    try {
      do {
        this.again = false;
        this.flushReads();
        while (!this.stopped && this.raw.hasReady()) {
          await this.handleReady(this.raw.ready());
        }
        if (this.flushDue && !this.stopped) {
          this.flushDue = false;
          // Not awaited: the queue keeps it in order, and the loop need not wait for it.
          this.flushState();
        }
      } while (this.again && !this.stopped);
    } catch (err) {
      this.fatal(err, 'raft node loop failed');
    } finally {
      this.busy = false;
    }
  }

  private async handleReady(rd: Ready): Promise<void> {
    const { log } = this.opts;
    if (rd.softState) this.setSoftState(rd.softState);
    if (rd.hardState) {
      this.term = rd.hardState.term;
      this.commitIndex = rd.hardState.commit;
    }
    // Readies overlap their writes, except one that brings a snapshot: it
    // replaces the state and the log, so everything before it lands first.
    if (rd.snapshot && rd.snapshot.meta.index > 0) await this.writesIdle();
    if (tracing) traceReady(rd, this.id);
    // 1. Durable first: hard state, entries, snapshot, with one fsync.
    if (rd.snapshot && rd.snapshot.meta.index > 0) await this.restoreSnapshot(rd);
    // A leader sends in parallel with its own write: its entries count for
    // commitment only once persisted() reports them durable. Anyone may
    // forward a client request at once: it promises nothing.
    const early = this.isLeader ? rd.messages : rd.messages.filter(promisesNothing);
    const late = this.isLeader ? [] : rd.messages.filter((m) => !promisesNothing(m));
    if (early.length > 0) this.sendNow(early);
    // Like etcd's MustSync: only new entries or a new term/vote need the fsync;
    // a commit index can be recovered from the others after a crash.
    const hs = rd.hardState;
    const mustSync =
      rd.entries.length > 0 ||
      (hs !== undefined && (hs.term !== log.hardState.term || hs.vote !== log.hardState.vote));
    let writing: Promise<void> | undefined;
    if (mustSync) writing = log.save(hs, rd.entries);
    else if (hs) log.saveLazily(hs);
    // The in-memory log answers raft for these entries from now on (accept()).
    log.append(rd.hardState, rd.entries);
    // Hand the Ready back now: the next one (new proposals' MsgApps, commit
    // indexes, answers) need not wait for this write.
    this.raw.accept(rd);
    const last = rd.entries[rd.entries.length - 1];
    if (writing && last) {
      writing.then(
        () => {
          if (this.stopped) return;
          trace('persisted', { index: last.index });
          this.raw.persisted(last.index, last.term);
          this.kick();
        },
        (err: unknown) => this.fatal(err, 'writing the raft log failed'),
      );
    }
    // Acks and votes promise what this Ready (and every earlier one) wrote:
    // they leave once the WAL holds all of it, in Ready order.
    if (late.length > 0) this.sendAfter(writing ?? log.wal.idle(), late);
    if (rd.committedEntries.length > 0 || rd.readStates.length > 0) {
      // Sends before work: messages handed to a socket leave only once this
      // turn ends, so applying in it would hold MsgApps and commit indexes
      // back by the length of the apply. Let them go first.
      if (early.length > 0) await nextTurn();
      // Committed entries are durable on a majority (raft counts no copy before
      // its write completes, the leader's own included): apply them in memory
      // now and answer at once, without waiting for this Ready's write. Their
      // level operations wait in `unwritten` for the next state write; after a
      // crash the applied index on disk is older and the log replays the rest.
      if (rd.committedEntries.length > 0) this.answer(this.apply(rd.committedEntries, this.unwritten));
      this.releaseReadStates(rd);
    }
    if (this.unwritten.length >= MAX_UNWRITTEN_OPS) this.flushState();
    else if (this.unwritten.length > 0) this.scheduleFlush();
    this.maybeCompactLog();
  }

  /** A snapshot from the leader replaces the state machine and the log (every write is done). */
  private async restoreSnapshot(rd: Ready): Promise<void> {
    const { db, log, machine } = this.opts;
    const snap = rd.snapshot!;
    // What was applied before goes to disk first: the snapshot's state replaces it.
    const before = this.takeUnwritten();
    if (before.ops.length > 0) await this.writeState(before.ops, before.applied, false);
    // The snapshot point first (a crash after the restore but before the WAL
    // records it is finished from it on the next start), then the state, then
    // the conf state, then the WAL; each synced.
    const pointOps: BatchOp[] = [];
    log.snapshotOps(snap.meta, pointOps);
    const confOps = pointOps.splice(1);
    await writeOps(db, pointOps, true);
    await machine.restore(Buffer.from(snap.data), snap.meta.index);
    await writeOps(db, confOps, true);
    this.writtenApplied = machine.appliedIndex;
    await log.saveSnapshot(snap.meta);
    this.lastSnapshotIndex = snap.meta.index;
    this.opts.logger.info({ index: snap.meta.index }, 'restored state from a snapshot');
    this.syncMembers();
  }

  /** The unwritten operations plus the applied index and revision they bring the disk to. */
  private takeUnwritten(): { ops: BatchOp[]; applied: number } {
    const ops = this.unwritten;
    this.unwritten = [];
    const { machine } = this.opts;
    if (machine.appliedIndex !== this.writtenApplied) {
      machine.stateOps(ops);
      this.writtenApplied = machine.appliedIndex;
    }
    return { ops, applied: this.writtenApplied };
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.stopped) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.flushDue = true;
      this.kick();
    }, FLUSH_DELAY_MS);
  }

  /** Reads whose ReadIndex round completed go on once that index is applied here. */
  private releaseReadStates(rd: Ready): void {
    for (const rs of rd.readStates) {
      const ctx = Buffer.from(rs.requestCtx).toString();
      const ws = this.readWaiters.get(ctx);
      if (!ws) continue;
      this.readWaiters.delete(ctx);
      this.whenApplied(rs.index, () => {
        for (const w of ws) w.resolve();
      });
    }
  }

  private setSoftState(s: SoftState): void {
    const changed = s.lead !== this.soft.lead || s.state !== this.soft.state;
    this.soft = s;
    if (!changed) return;
    this.opts.logger.info({ lead: s.lead, state: s.state }, 'raft state changed');
    this.opts.onLeaderChange?.(s.lead, s.state === 'leader');
  }

  private whenApplied(index: number, fn: () => void): void {
    if (this.opts.machine.appliedIndex >= index) fn();
    else this.appliedWaiters.push({ index, resolve: fn });
  }

  /** Applies committed entries in memory, collecting their level operations; returns the answers owed. */
  private apply(entries: Entry[], ops: BatchOp[]): [string, ApplyResult][] {
    const { machine } = this.opts;
    const done: [string, ApplyResult][] = [];
    for (const e of entries) {
      if (e.index <= machine.appliedIndex) continue;
      if (e.type === ENTRY_CONF_CHANGE) this.applyConfChange(e, ops);
      else if (e.data.length > 0) {
        const cmd = this.proposed.get(e.data) ?? decodeCommand(Buffer.from(e.data));
        // The log keeps its entry until compaction; the decoded form need not
        // live as long (nor the request bytes it may point into).
        this.proposed.delete(e.data);
        const result = machine.applyCommand(cmd, ops);
        if (cmd.origin === this.id) done.push([String(cmd.id), result]);
      }
    }
    const last = entries[entries.length - 1];
    if (last.index > machine.appliedIndex) machine.appliedIndex = last.index;
    machine.listener.onApplied?.();
    return done;
  }

  /** Answers the clients whose commands were applied, and reads waiting for that index. */
  private answer(done: [string, ApplyResult][]): void {
    const { machine } = this.opts;
    for (const [id, result] of done) {
      const w = this.waiters.get(id);
      if (!w) continue;
      this.waiters.delete(id);
      clearTimeout(w.timer);
      trace('answer', { id });
      w.resolve(result);
    }
    if (this.appliedWaiters.length > 0) {
      const applied = machine.appliedIndex;
      for (let i = this.appliedWaiters.length - 1; i >= 0; i--) {
        if (this.appliedWaiters[i].index <= applied) {
          const [w] = this.appliedWaiters.splice(i, 1);
          w.resolve();
        }
      }
    }
  }

  private applyConfChange(e: Entry, ops: BatchOp[]): void {
    const { machine, log } = this.opts;
    const cc = decodeConfChange(e.data);
    const cs = this.raw.applyConfChange(cc);
    log.confStateOps(cs, ops);
    const info =
      cc.context && cc.context.length > 0 ? codecs.memberInfo.decode(Buffer.from(cc.context)) : undefined;
    if (cc.type === 'addNode' || cc.type === 'addLearner') {
      if (info) machine.addMember({ ...info, is_learner: cc.type === 'addLearner' }, ops);
    } else if (cc.type === 'removeNode') {
      machine.removeMember(cc.nodeId, ops);
    } else if (cc.type === 'promote') {
      machine.promoteMember(cc.nodeId, ops);
    }
    this.syncMembers();
    const key = `${cc.type}/${cc.nodeId}`;
    const w = this.confWaiters.get(key);
    if (w) {
      this.confWaiters.delete(key);
      clearTimeout(w.timer);
      w.resolve(cs);
    }
    if (cc.type === 'removeNode' && cc.nodeId === this.id) {
      this.opts.logger.warn('this member was removed from the cluster');
      this.opts.onRemoved?.();
    }
  }

  /** Hook for the server to refresh peer connections after membership changes. */
  onMembersChanged: (members: MemberInfo[]) => void = () => {};

  private syncMembers(): void {
    this.onMembersChanged([...this.opts.machine.members.values()]);
  }

  /** Every --snapshot-count applied entries, drop the applied prefix of the log. */
  private maybeCompactLog(): void {
    const { machine, log } = this.opts;
    const applied = machine.appliedIndex;
    if (applied - this.lastSnapshotIndex < this.opts.snapshotCount) return;
    this.lastSnapshotIndex = applied;
    // Keep a tail so slightly slow followers catch up from the log, not a snapshot.
    const keep = Math.min(5000, Math.floor(this.opts.snapshotCount / 2));
    const upTo = Math.max(applied - keep, log.firstIndex() - 1);
    const term = log.compactInMemory(upTo, log.confState);
    if (term === undefined) return;
    // The WAL drops the entries only once the applied state covering them is
    // durable in level: a synced state write first, then the compaction record
    // and the release of whole old segments.
    const { ops, applied: covered } = this.takeUnwritten();
    // Even with nothing new: the sync makes the unsynced batches before it durable.
    if (ops.length === 0) machine.stateOps(ops);
    this.writeState(ops, covered, true)
      .then(() => log.compactDurably(upTo, term))
      .catch((err: unknown) => this.fatal(err, 'compacting the raft log failed'));
  }

  /** An error a client should see for a failed apply. */
  static fail(result: ApplyResult): EtcdError | undefined {
    return result.ok ? undefined : result.error;
  }
}
