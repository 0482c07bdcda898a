// A binary heap keyed by string, so entries can be found, updated and removed in O(log n).
export class KeyedHeap<T> {
  private readonly items: T[] = [];
  private readonly index = new Map<string, number>();

  constructor(
    private readonly keyOf: (t: T) => string,
    private readonly less: (a: T, b: T) => boolean,
  ) {}

  get size(): number {
    return this.items.length;
  }

  has(key: string): boolean {
    return this.index.has(key);
  }

  get(key: string): T | undefined {
    const i = this.index.get(key);
    return i === undefined ? undefined : this.items[i];
  }

  peek(): T | undefined {
    return this.items[0];
  }

  /** Inserts, or replaces the entry with the same key and restores heap order. */
  push(t: T): void {
    const key = this.keyOf(t);
    const i = this.index.get(key);
    if (i !== undefined) {
      this.items[i] = t;
      this.fix(i);
      return;
    }
    this.items.push(t);
    this.index.set(key, this.items.length - 1);
    this.up(this.items.length - 1);
  }

  pop(): T | undefined {
    if (this.items.length === 0) return undefined;
    return this.removeAt(0);
  }

  remove(key: string): T | undefined {
    const i = this.index.get(key);
    return i === undefined ? undefined : this.removeAt(i);
  }

  values(): IterableIterator<T> {
    return this.items.values();
  }

  private removeAt(i: number): T {
    const out = this.items[i];
    const last = this.items.pop()!;
    this.index.delete(this.keyOf(out));
    if (i < this.items.length) {
      this.items[i] = last;
      this.index.set(this.keyOf(last), i);
      this.fix(i);
    }
    return out;
  }

  private fix(i: number): void {
    if (!this.up(i)) this.down(i);
  }

  private swap(i: number, j: number): void {
    const a = this.items[i];
    const b = this.items[j];
    this.items[i] = b;
    this.items[j] = a;
    this.index.set(this.keyOf(b), i);
    this.index.set(this.keyOf(a), j);
  }

  private up(i: number): boolean {
    let moved = false;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(this.items[i], this.items[parent])) break;
      this.swap(i, parent);
      i = parent;
      moved = true;
    }
    return moved;
  }

  private down(i: number): void {
    const n = this.items.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < n && this.less(this.items[l], this.items[m])) m = l;
      if (r < n && this.less(this.items[r], this.items[m])) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }
}
