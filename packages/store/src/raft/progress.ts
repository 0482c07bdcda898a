// The leader's view of one peer's log (§5.3 nextIndex/matchIndex) plus the
// replication mode that decides how aggressively to send:
//
//   probe:     we do not know where the follower's log matches; send one MsgApp
//              at a time and wait for the answer (or the next heartbeat).
//   replicate: the follower is in sync; stream MsgApps optimistically (next moves
//              ahead before acks), bounded by the inflight window.
//   snapshot:  the follower needs entries we compacted; a MsgSnap is on its way
//              and nothing else is sent until it is reported.

import { Inflights } from './inflights.js';

export type ProgressState = 'probe' | 'replicate' | 'snapshot';

export class Progress {
  match = 0;
  next: number;
  state: ProgressState = 'probe';
  /** In probe state: a MsgApp is outstanding, wait for its answer or a heartbeat. */
  probeSent = false;
  /** In snapshot state: the index of the snapshot being sent. */
  pendingSnapshot = 0;
  /** Heard from since the last check-quorum round (or since becoming leader). */
  recentActive = false;
  readonly inflights: Inflights;

  constructor(
    next: number,
    maxInflight: number,
    public isLearner: boolean,
  ) {
    this.next = next;
    this.inflights = new Inflights(maxInflight);
  }

  becomeProbe(): void {
    // After a snapshot, the follower's log reaches at least the snapshot.
    this.next =
      this.state === 'snapshot' ? Math.max(this.match + 1, this.pendingSnapshot + 1) : this.match + 1;
    this.state = 'probe';
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.inflights.reset();
  }

  becomeReplicate(): void {
    this.state = 'replicate';
    this.next = this.match + 1;
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.inflights.reset();
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.state = 'snapshot';
    this.probeSent = false;
    this.pendingSnapshot = snapshotIndex;
    this.inflights.reset();
  }

  /** An ack up to `index` arrived. Returns whether match moved (stale/duplicate acks do not). */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (this.match < index) {
      this.match = index;
      updated = true;
      this.probeSent = false;
    }
    if (this.next < index + 1) this.next = index + 1;
    return updated;
  }

  /** A MsgApp with entries up to `lastIndex` was sent in replicate state: move next ahead optimistically. */
  sentEntries(lastIndex: number): void {
    this.next = lastIndex + 1;
    this.inflights.add(lastIndex);
  }

  /**
   * The follower rejected a MsgApp whose previous index was `rejected`; `probeFrom`
   * is where its log may match (from its hint). Returns false for stale rejections
   * (an older message, answered after we already moved on).
   */
  maybeDecrTo(rejected: number, probeFrom: number): boolean {
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
      // Our optimistic stream broke (e.g. lost message): restart from what is known to match.
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, probeFrom + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  /** Whether sending more to this peer must wait. */
  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflights.full();
      case 'snapshot':
        return true;
    }
  }
}
