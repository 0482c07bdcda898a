// A deterministic simulated cluster for the raft core: N nodes, each with a
// MemoryStorage standing for its disk, and a network that can partition, lose,
// duplicate and reorder messages. A node can crash at any point of its Ready
// handling; only what the Ready contract made durable (storage) survives.
//
// The simulation checks safety as it goes and throws on the first violation:
// - election safety: at most one leader per term;
// - state machine safety: every node applies, at each index, the same entry,
//   and applies indexes contiguously (no gaps, no double application).

import {
  bootstrapEntries,
  type ConfChange,
  type ConfState,
  decodeConfChange,
  type Entry,
  EntryType,
  type HardState,
  MemoryStorage,
  type Message,
  ProposalDroppedError,
  RawNode,
  type ReadState,
  type Ready,
} from '../../src/raft/index.js';

/** Seeded PRNG (mulberry32): same seed, same run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface SimOptions {
  ids: string[];
  seed?: number;
  preVote?: boolean;
  checkQuorum?: boolean;
  electionTick?: number;
  heartbeatTick?: number;
  maxSizePerMsg?: number;
  maxInflightMsgs?: number;
  /** Take a snapshot and compact once this many applied entries sit in the log (0 = never). */
  snapshotEvery?: number;
  /**
   * Drive nodes as kubit-store's node loop does: a Ready is handed back
   * (RawNode.accept) before its write is durable, a leader sends at once,
   * other messages wait for the write; writes complete later, in order
   * (persistOne), and a crash loses those still pending.
   */
  pipelined?: boolean;
}

/** A write the pipelined node loop queued and the disk has not made durable yet. */
interface PendingWrite {
  hardState: HardState | undefined;
  entries: Entry[];
  /** Messages that promise this write (and every earlier one): sent once it is durable. */
  messages: Message[];
}

/** Messages that promise nothing about the sender's log or vote (kubit-store's node loop forwards them at once). */
function isForwardedRequest(m: Message): boolean {
  return m.type === 'MsgProp' || m.type === 'MsgReadIndex' || m.type === 'MsgTransferLeader';
}

/** A copy of a MemoryStorage's contents, as a disk holds them. */
function cloneStorage(s: MemoryStorage): MemoryStorage {
  const snap = s.snapshot();
  const copy = new MemoryStorage(snap.meta.confState);
  if (snap.meta.index > 0) copy.applySnapshot(snap);
  const from = Math.max(s.firstIndex(), snap.meta.index + 1);
  if (from <= s.lastIndex()) copy.append(s.entries(from, s.lastIndex() + 1));
  copy.setHardState(s.hardStateNow());
  return copy;
}

export type CrashPoint = 'none' | 'beforePersist' | 'afterPersist' | 'afterSend' | 'afterApply';

const enc = new TextEncoder();
const dec = new TextDecoder();

export function bytes(s: string): Uint8Array {
  return enc.encode(s);
}

export function text(b: Uint8Array): string {
  return dec.decode(b);
}

export function entryKey(e: Entry): string {
  return `${e.term}/${e.type}/${text(e.data)}`;
}

export class SimNode {
  raw: RawNode | undefined;
  /** The state machine (volatile): key of every applied entry, index i at [i-1]. */
  appliedKeys: string[] = [];
  applied = 0;
  /** Highest durable commit index whose entries were checked against the history. */
  commitChecked = 0;
  confState: ConfState;
  readStates: ReadState[] = [];
  /** Pipelined mode: writes not yet durable, oldest first. */
  pending: PendingWrite[] = [];
  /** Pipelined mode: what the disk holds while writes are pending (`storage` already shows them). */
  disk: MemoryStorage | undefined;

  constructor(
    readonly id: string,
    public storage: MemoryStorage,
  ) {
    this.confState = storage.initialState().confState;
  }

  get up(): boolean {
    return this.raw !== undefined;
  }
}

export class Sim {
  readonly nodes = new Map<string, SimNode>();
  /** Messages in flight. Delivery order is chosen by the caller (reordering). */
  queue: Message[] = [];
  readonly rng: () => number;
  /** Cut links, as "from->to". */
  readonly cut = new Set<string>();
  loss = 0;
  duplication = 0;
  /** index -> key of the entry committed/applied there, as first seen by any node. */
  readonly history = new Map<number, string>();
  /** term -> the node that led it. */
  readonly leaders = new Map<number, string>();
  /** Nodes whose removal some node applied (a real server shuts them down). */
  readonly removed = new Set<string>();
  /** Called for every ReadState a node receives (before it is recorded). */
  onReadState: ((node: SimNode, rs: ReadState) => void) | undefined;
  /** Counters, so tests can check that a schedule exercised what it meant to. */
  readonly stats = { snapshotsInstalled: 0, confChangesApplied: 0, crashes: 0, pipelinedWrites: 0 };

  constructor(readonly opts: SimOptions) {
    this.rng = prng(opts.seed ?? 1);
    // Initial members bootstrap through the log, like etcd; later joiners start empty.
    const boot = bootstrapEntries(opts.ids);
    for (const id of opts.ids) {
      const storage = new MemoryStorage();
      storage.append(boot.entries);
      storage.setHardState(boot.hardState);
      this.addNode(id, storage);
    }
    // Apply the bootstrap entries so that every member knows the membership.
    this.settle();
  }

  /** Creates and starts a node; by default with empty storage, as a member joining the cluster. */
  addNode(id: string, storage = new MemoryStorage()): SimNode {
    const node = new SimNode(id, storage);
    this.nodes.set(id, node);
    this.start(node);
    return node;
  }

  node(id: string): SimNode {
    const n = this.nodes.get(id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  raw(id: string): RawNode {
    const r = this.node(id).raw;
    if (!r) throw new Error(`node ${id} is down`);
    return r;
  }

  private start(node: SimNode): void {
    // The state machine restarts from the durable snapshot; raft re-delivers the committed entries after it.
    const snap = node.storage.snapshot();
    node.applied = snap.meta.index;
    node.appliedKeys = snap.meta.index === 0 ? [] : (JSON.parse(text(snap.data)) as string[]);
    node.confState = snap.meta.confState;
    node.readStates = [];
    node.raw = new RawNode({
      id: node.id,
      storage: node.storage,
      applied: node.applied,
      electionTick: this.opts.electionTick ?? 10,
      heartbeatTick: this.opts.heartbeatTick ?? 1,
      preVote: this.opts.preVote ?? true,
      checkQuorum: this.opts.checkQuorum ?? true,
      maxSizePerMsg: this.opts.maxSizePerMsg,
      maxInflightMsgs: this.opts.maxInflightMsgs,
      random: this.rng,
    });
  }

  crash(id: string): void {
    const node = this.node(id);
    if (node.up) this.stats.crashes++;
    // Writes still pending are lost: the node restarts from what its disk holds.
    if (node.disk) node.storage = node.disk;
    node.disk = undefined;
    node.pending = [];
    node.raw = undefined;
    node.appliedKeys = [];
    node.applied = 0;
  }

  restart(id: string): void {
    const node = this.node(id);
    if (!node.up) this.start(node);
  }

  // ---- network ---------------------------------------------------------------

  isolate(id: string): void {
    for (const other of this.nodes.keys()) {
      if (other === id) continue;
      this.cut.add(`${id}->${other}`);
      this.cut.add(`${other}->${id}`);
    }
  }

  /** Splits the cluster: links between different groups are cut. */
  partition(groups: string[][]): void {
    this.cut.clear();
    for (const g of groups) {
      for (const h of groups) {
        if (g === h) continue;
        for (const a of g) for (const b of h) this.cut.add(`${a}->${b}`);
      }
    }
  }

  heal(): void {
    this.cut.clear();
  }

  /** Delivers the queued message at position i (or drops it: cut link, loss, dead receiver). */
  deliver(i: number): void {
    const [m] = this.queue.splice(i, 1);
    if (m === undefined) return;
    const lost = this.cut.has(`${m.from}->${m.to}`) || (this.loss > 0 && this.rng() < this.loss);
    const target = this.nodes.get(m.to);
    const ok = !lost && target?.raw !== undefined;
    if (m.type === 'MsgSnap') this.nodes.get(m.from)?.raw?.reportSnapshot(m.to, ok);
    if (!ok) return;
    if (this.duplication > 0 && this.rng() < this.duplication) this.queue.push(structuredClone(m));
    target!.raw!.step(m);
  }

  /** Delivers everything queued now (in order), optionally only messages matching `filter` (others stay). */
  deliverAll(filter?: (m: Message) => boolean): number {
    const batch = this.queue;
    this.queue = [];
    const keep: Message[] = [];
    let n = 0;
    for (const m of batch) {
      if (filter && !filter(m)) {
        keep.push(m);
        continue;
      }
      this.queue.push(m);
      this.deliver(this.queue.length - 1);
      n++;
    }
    this.queue = keep.concat(this.queue);
    return n;
  }

  /** Drops queued messages matching `filter`. */
  drop(filter: (m: Message) => boolean): void {
    this.queue = this.queue.filter((m) => !filter(m));
  }

  // ---- node loop -------------------------------------------------------------

  /** Runs one Ready cycle of node `id`, optionally crashing it at the given point. Returns whether it had one. */
  processReady(id: string, crashAt: CrashPoint = 'none'): boolean {
    const node = this.node(id);
    const raw = node.raw;
    if (!raw?.hasReady()) return false;
    const rd = raw.ready();
    this.checkLeader(node);
    if (crashAt === 'beforePersist') return this.crashed(id);
    if (this.opts.pipelined) {
      if (!rd.snapshot) {
        this.acceptReady(node, raw, rd);
        // Crashing now loses the write just queued (and any before it still pending).
        return crashAt === 'none' ? true : this.crashed(id);
      }
      // A snapshot replaces the log: earlier writes land first, then it is handled in full.
      while (node.pending.length > 0) this.persistOne(id);
    }
    // 1. persist
    if (rd.snapshot) node.storage.applySnapshot(rd.snapshot);
    if (rd.hardState) node.storage.setHardState(rd.hardState);
    node.storage.append(rd.entries);
    this.recordCommitted(node);
    if (crashAt === 'afterPersist') return this.crashed(id);
    // 2. send (a copy, as if through the wire)
    for (const m of rd.messages) this.queue.push(structuredClone(m));
    if (crashAt === 'afterSend') return this.crashed(id);
    // 3. apply
    if (rd.snapshot) {
      const s = rd.snapshot;
      node.appliedKeys = JSON.parse(text(s.data)) as string[];
      node.applied = s.meta.index;
      node.confState = s.meta.confState;
      this.stats.snapshotsInstalled++;
      node.appliedKeys.forEach((k, i) => {
        this.recordApplied(node, i + 1, k);
      });
    }
    for (const e of rd.committedEntries) this.apply(node, raw, e);
    for (const rs of rd.readStates) this.onReadState?.(node, rs);
    node.readStates.push(...rd.readStates);
    if (crashAt === 'afterApply') return this.crashed(id);
    raw.advance(rd);
    if (node.pending.length === 0) this.maybeSnapshot(node);
    return true;
  }

  /** Pipelined mode: the Ready goes back to raft before its write is durable. */
  private acceptReady(node: SimNode, raw: RawNode, rd: Ready): true {
    const leader = raw.status().state === 'leader';
    if (node.pending.length === 0) node.disk = cloneStorage(node.storage);
    // The in-memory log answers raft for the new entries at once.
    if (rd.hardState) node.storage.setHardState(rd.hardState);
    node.storage.append(rd.entries);
    this.recordCommitted(node);
    const late: Message[] = [];
    for (const m of rd.messages) {
      if (leader || isForwardedRequest(m)) this.queue.push(structuredClone(m));
      else late.push(m);
    }
    node.pending.push({ hardState: rd.hardState, entries: rd.entries, messages: late });
    this.stats.pipelinedWrites++;
    // Committed entries are durable on a majority: applied without waiting for this write.
    for (const e of rd.committedEntries) this.apply(node, raw, e);
    for (const rs of rd.readStates) this.onReadState?.(node, rs);
    node.readStates.push(...rd.readStates);
    raw.accept(rd);
    return true;
  }

  /** Pipelined mode: the oldest pending write of `id` becomes durable; what waited for it is sent. */
  persistOne(id: string): boolean {
    const node = this.node(id);
    const w = node.pending.shift();
    if (!w || !node.raw || !node.disk) return false;
    if (w.hardState) node.disk.setHardState(w.hardState);
    node.disk.append(w.entries);
    for (const m of w.messages) this.queue.push(structuredClone(m));
    const last = w.entries[w.entries.length - 1];
    if (last) node.raw.persisted(last.index, last.term);
    if (node.pending.length === 0) {
      node.disk = undefined;
      this.maybeSnapshot(node);
    }
    return true;
  }

  private crashed(id: string): true {
    this.crash(id);
    return true;
  }

  private apply(node: SimNode, raw: RawNode, e: Entry): void {
    if (e.index !== node.applied + 1) {
      throw new Error(`node ${node.id} applies ${e.index} after ${node.applied}: gap or re-application`);
    }
    const key = entryKey(e);
    this.recordApplied(node, e.index, key);
    node.appliedKeys.push(key);
    node.applied = e.index;
    if (e.type === EntryType.ConfChange) {
      const cc = decodeConfChange(e.data);
      node.confState = raw.applyConfChange(cc);
      this.stats.confChangesApplied++;
      if (cc.type === 'removeNode') this.removed.add(cc.nodeId);
    }
  }

  /**
   * Everything up to a durable commit index is committed: record it in the same
   * history as applied entries, so that a conflicting commit is caught even
   * before anybody applies it.
   */
  private recordCommitted(node: SimNode): void {
    const s = node.storage;
    const commit = s.hardStateNow().commit;
    const from = Math.max(node.commitChecked + 1, s.firstIndex());
    if (from <= commit) {
      for (const e of s.entries(from, commit + 1)) this.recordApplied(node, e.index, entryKey(e));
    }
    node.commitChecked = Math.max(node.commitChecked, commit);
  }

  private recordApplied(node: SimNode, index: number, key: string): void {
    const prev = this.history.get(index);
    if (prev === undefined) this.history.set(index, key);
    else if (prev !== key) {
      throw new Error(
        `state machine safety: node ${node.id} applied ${key} at ${index}, another node ${prev}`,
      );
    }
  }

  private checkLeader(node: SimNode): void {
    const st = node.raw!.status();
    if (st.state !== 'leader') return;
    const prev = this.leaders.get(st.term);
    if (prev === undefined) this.leaders.set(st.term, node.id);
    else if (prev !== node.id)
      throw new Error(`election safety: ${prev} and ${node.id} both led term ${st.term}`);
  }

  private maybeSnapshot(node: SimNode): void {
    const every = this.opts.snapshotEvery ?? 0;
    if (every <= 0 || node.applied - node.storage.snapshot().meta.index < every) return;
    node.storage.createSnapshot(node.applied, node.confState, bytes(JSON.stringify(node.appliedKeys)));
    // Keep a few entries so that slightly lagging peers still get MsgApp, not a snapshot.
    node.storage.compact(Math.max(node.storage.firstIndex() - 1, node.applied - 2));
  }

  // ---- driving -----------------------------------------------------------------

  /** The highest commit index any node knows, durable or not: what a linearizable read must at least see. */
  maxCommit(): number {
    let max = 0;
    for (const n of this.nodes.values()) {
      max = Math.max(max, n.storage.hardStateNow().commit, n.raw?.status().commit ?? 0);
    }
    return max;
  }

  live(): SimNode[] {
    return [...this.nodes.values()].filter((n) => n.up);
  }

  tickAll(): void {
    for (const n of this.live()) n.raw!.tick();
  }

  /** Processes Readies and delivers messages until nothing is left to do (no ticks). */
  settle(maxRounds = 1000): void {
    for (let round = 0; round < maxRounds; round++) {
      let busy = false;
      for (const n of this.live()) {
        if (this.processReady(n.id)) busy = true;
        while (this.persistOne(n.id)) busy = true;
      }
      if (this.deliverAll() > 0) busy = true;
      if (!busy) return;
    }
    throw new Error('settle: the cluster did not quiesce');
  }

  /** Ticks everyone and settles, until `pred` holds; throws after maxTicks. */
  runUntil(pred: () => boolean, maxTicks = 500): void {
    for (let t = 0; t < maxTicks; t++) {
      this.settle();
      if (pred()) return;
      this.tickAll();
    }
    this.settle();
    if (!pred()) throw new Error(`runUntil: condition not reached within ${maxTicks} ticks`);
  }

  /** The live leader with the highest term, if any. */
  leader(): string | undefined {
    let best: { id: string; term: number } | undefined;
    for (const n of this.live()) {
      const st = n.raw!.status();
      if (st.state === 'leader' && (!best || st.term > best.term)) best = { id: n.id, term: st.term };
    }
    return best?.id;
  }

  /** Elects `id` by making it campaign and settling the network. */
  elect(id: string): void {
    this.raw(id).campaign();
    this.settle();
    if (this.leader() !== id) throw new Error(`elect: ${id} did not become leader`);
  }

  /** Proposes on `id`; false when it was refused (no leader, transfer, ...). */
  propose(id: string, data: string): boolean {
    try {
      this.raw(id).propose(bytes(data));
      return true;
    } catch (err) {
      if (err instanceof ProposalDroppedError) return false;
      throw err;
    }
  }

  proposeConfChange(id: string, cc: ConfChange): boolean {
    try {
      this.raw(id).proposeConfChange(cc);
      return true;
    } catch (err) {
      if (err instanceof ProposalDroppedError) return false;
      throw err;
    }
  }

  /** Whether node `id` has applied a normal entry with this payload. */
  hasApplied(id: string, data: string): boolean {
    const n = this.node(id);
    return n.appliedKeys.some((k) => k.endsWith(`/${EntryType.Normal}/${data}`));
  }

  /** Durable + unstable view is internal; compare the durable logs of all nodes for the log matching property. */
  checkLogMatching(): void {
    const logs = [...this.nodes.values()].map((n) => {
      const s = n.storage;
      const ents = s.lastIndex() >= s.firstIndex() ? s.entries(s.firstIndex(), s.lastIndex() + 1) : [];
      return { id: n.id, byIndex: new Map(ents.map((e) => [e.index, e])) };
    });
    for (let a = 0; a < logs.length; a++) {
      for (let b = a + 1; b < logs.length; b++) {
        const A = logs[a];
        const B = logs[b];
        // Walk down from the highest common index; once terms agree, everything below must be identical.
        let agreed = false;
        const common = [...A.byIndex.keys()].filter((i) => B.byIndex.has(i)).sort((x, y) => y - x);
        for (const i of common) {
          const ea = A.byIndex.get(i)!;
          const eb = B.byIndex.get(i)!;
          if (ea.term === eb.term) {
            if (entryKey(ea) !== entryKey(eb)) {
              throw new Error(`log matching: ${A.id} and ${B.id} differ at ${i} with equal terms`);
            }
            agreed = true;
          } else if (agreed) {
            throw new Error(`log matching: ${A.id} and ${B.id} agree above ${i} but differ at ${i}`);
          }
        }
      }
    }
  }
}
