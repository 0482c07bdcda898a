// Flow control for one follower in the replicate state: a bounded ring of the
// last indexes of MsgApps sent but not yet acknowledged. When it is full the
// leader stops sending until acks (or a heartbeat response) free slots, so a
// slow follower cannot make the leader queue unbounded data.

export class Inflights {
  private readonly buf: number[];
  private start = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    this.buf = new Array<number>(capacity).fill(0);
  }

  full(): boolean {
    return this.count >= this.capacity;
  }

  size(): number {
    return this.count;
  }

  /** Records a MsgApp whose last entry is `lastIndex` (indexes are added in increasing order). */
  add(lastIndex: number): void {
    if (this.full()) return;
    this.buf[(this.start + this.count) % this.capacity] = lastIndex;
    this.count++;
  }

  /** The follower acknowledged everything up to `index`: free every message ending at or before it. */
  freeLE(index: number): void {
    while (this.count > 0 && this.buf[this.start] <= index) {
      this.start = (this.start + 1) % this.capacity;
      this.count--;
    }
  }

  /** Frees one slot: a heartbeat response proves the follower alive, so allow one more probe-like send. */
  freeFirst(): void {
    if (this.count === 0) return;
    this.start = (this.start + 1) % this.capacity;
    this.count--;
  }

  reset(): void {
    this.start = 0;
    this.count = 0;
  }
}
