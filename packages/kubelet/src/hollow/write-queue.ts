// A bounded pool for apiserver writes: at most `concurrency` run at once, the
// rest wait in FIFO order. A task whose key is already waiting is dropped, so a
// slow apiserver makes heartbeats coalesce instead of piling up without bound.
export class WriteQueue {
  private readonly waiting = new Map<string, () => Promise<void>>();
  private active = 0;
  private idle: (() => void)[] = [];

  constructor(
    private readonly concurrency: number,
    private readonly onError: (err: unknown, key: string) => void,
  ) {
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new Error(`write queue: concurrency must be a positive integer, got ${concurrency}`);
    }
  }

  /** Tasks waiting (not yet started). */
  get size(): number {
    return this.waiting.size;
  }

  push(key: string, task: () => Promise<void>): void {
    if (this.waiting.has(key)) return;
    this.waiting.set(key, task);
    this.pump();
  }

  /** Resolves once nothing is waiting or running. */
  drain(): Promise<void> {
    if (this.active === 0 && this.waiting.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Forgets everything still waiting (running tasks finish). */
  clear(): void {
    this.waiting.clear();
    this.pump();
  }

  private pump(): void {
    while (this.active < this.concurrency && this.waiting.size > 0) {
      const [key, task] = this.waiting.entries().next().value as [string, () => Promise<void>];
      this.waiting.delete(key);
      this.active++;
      void task()
        .catch((err) => this.onError(err, key))
        .finally(() => {
          this.active--;
          this.pump();
        });
    }
    if (this.active === 0 && this.waiting.size === 0) {
      for (const resolve of this.idle.splice(0)) resolve();
    }
  }
}
