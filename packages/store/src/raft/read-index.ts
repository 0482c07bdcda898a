// Linearizable reads without writing to the log (dissertation §6.4): the leader
// records its commit index for each read, then confirms it is still the leader
// by hearing back from a quorum on a heartbeat sent *after* the read arrived.
// Once confirmed, applying up to that index and reading is linearizable.
//
// Reads are numbered with a sequence; a heartbeat carries the highest sequence
// registered when it was sent, and a follower's answer to it vouches for every
// read up to that number. So one heartbeat round confirms any number of reads,
// and the leader keeps just "highest sequence acked" per peer.

import type { NodeId } from './types.js';

export interface PendingRead {
  seq: number;
  /** The leader's commit index when the read arrived. */
  index: number;
  ctx: Uint8Array;
  /** Who asked: the leader itself or a follower that forwarded MsgReadIndex. */
  from: NodeId;
}

export class ReadIndexQueue {
  private nextSeq = 1;
  private queue: PendingRead[] = [];
  private head = 0;
  private readonly acked = new Map<NodeId, number>();
  /** Highest sequence already carried by a heartbeat. */
  private broadcastSeq = 0;

  add(index: number, ctx: Uint8Array, from: NodeId): void {
    this.queue.push({ seq: this.nextSeq++, index, ctx, from });
  }

  /** Reads are waiting that no heartbeat has asked about yet. */
  needsBroadcast(): boolean {
    return this.pending() > 0 && this.latestSeq() > this.broadcastSeq;
  }

  /** The sequence to put on the heartbeat about to be sent, or 0 when no read waits. */
  seqForHeartbeat(): number {
    if (this.pending() === 0) return 0;
    this.broadcastSeq = this.latestSeq();
    return this.broadcastSeq;
  }

  ack(from: NodeId, seq: number): void {
    if (seq > (this.acked.get(from) ?? 0)) this.acked.set(from, seq);
  }

  /**
   * Pops every read confirmed by a quorum of `voters` (the leader counts as
   * having acked everything). `quorumSeq` computes the highest sequence a
   * majority has acked.
   */
  release(quorumSeq: (ackedOf: (id: NodeId) => number) => number, self: NodeId): PendingRead[] {
    if (this.pending() === 0) return [];
    const confirmed = quorumSeq((id) => (id === self ? Number.POSITIVE_INFINITY : (this.acked.get(id) ?? 0)));
    const out: PendingRead[] = [];
    while (this.head < this.queue.length && this.queue[this.head].seq <= confirmed) {
      out.push(this.queue[this.head++]);
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return out;
  }

  /** Leadership lost: the reads can no longer be confirmed; their requesters must retry. */
  reset(): void {
    this.queue = [];
    this.head = 0;
    this.acked.clear();
    this.broadcastSeq = 0;
  }

  pending(): number {
    return this.queue.length - this.head;
  }

  private latestSeq(): number {
    return this.nextSeq - 1;
  }
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Heartbeat context carrying a read sequence (decimal ASCII, so it is easy to see in a dump). */
export function encodeReadSeq(seq: number): Uint8Array {
  return enc.encode(String(seq));
}

export function decodeReadSeq(ctx: Uint8Array | undefined): number {
  if (ctx === undefined || ctx.byteLength === 0 || ctx.byteLength > 20) return 0;
  const n = Number(dec.decode(ctx));
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}
