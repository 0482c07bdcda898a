// A linearizability checker for recorded histories (Wing & Gong's search with
// Lowe's memoization of visited (linearized set, state) pairs). Histories are
// split into independent partitions (one per key for a key-value store), so
// each search stays small.
//
// An operation whose outcome is unknown (a client timeout) gets an infinite
// completion time and no output: it may take effect at any point after its
// invocation, or effectively never (after everything observed).

export interface Operation<I, O> {
  /** Who issued it (for messages only). */
  client?: number;
  input: I;
  /** undefined = unknown outcome (timed out). */
  output: O | undefined;
  /** Invocation time (any monotonic clock). */
  call: number;
  /** Completion time; Infinity for an unknown outcome. */
  return: number;
}

export interface Model<S, I, O> {
  init(): S;
  /** Applies `input` to `state`; ok=false if `output` could not be produced from `state`. */
  step(state: S, input: I, output: O | undefined): { ok: boolean; state: S };
  /** A string that identifies a state (for memoization). */
  hash(state: S): string;
  /** Independent sub-histories (e.g. one per key); default: one. */
  partition?(history: Operation<I, O>[]): Operation<I, O>[][];
}

export interface CheckResult<I, O> {
  ok: boolean;
  /** The first partition that could not be linearized. */
  failedPartition?: Operation<I, O>[];
}

interface Node<I, O> {
  op: Operation<I, O>;
  id: number;
  isCall: boolean;
  time: number;
  match?: Node<I, O>;
  prev?: Node<I, O>;
  next?: Node<I, O>;
}

function buildList<I, O>(ops: Operation<I, O>[]): Node<I, O> {
  const events: Node<I, O>[] = [];
  ops.forEach((op, id) => {
    const call: Node<I, O> = { op, id, isCall: true, time: op.call };
    const ret: Node<I, O> = { op, id, isCall: false, time: op.return };
    call.match = ret;
    events.push(call, ret);
  });
  // At equal times calls come first: touching operations count as concurrent (the lenient reading).
  events.sort((a, b) => a.time - b.time || (a.isCall === b.isCall ? 0 : a.isCall ? -1 : 1));
  const head = { isCall: false, time: Number.NEGATIVE_INFINITY } as Node<I, O>;
  let prev = head;
  for (const e of events) {
    prev.next = e;
    e.prev = prev;
    prev = e;
  }
  return head;
}

function lift<I, O>(call: Node<I, O>): void {
  const ret = call.match as Node<I, O>;
  (call.prev as Node<I, O>).next = call.next;
  if (call.next) call.next.prev = call.prev;
  (ret.prev as Node<I, O>).next = ret.next;
  if (ret.next) ret.next.prev = ret.prev;
}

function unlift<I, O>(call: Node<I, O>): void {
  const ret = call.match as Node<I, O>;
  (ret.prev as Node<I, O>).next = ret;
  if (ret.next) ret.next.prev = ret;
  (call.prev as Node<I, O>).next = call;
  if (call.next) call.next.prev = call;
}

/** Checks one partition. */
export function checkPartition<S, I, O>(model: Model<S, I, O>, ops: Operation<I, O>[]): boolean {
  const head = buildList(ops);
  let state = model.init();
  let linearized = 0n;
  const seen = new Set<string>();
  const stack: { node: Node<I, O>; state: S }[] = [];
  let entry = head.next;
  while (head.next) {
    if (!entry) return false;
    if (entry.isCall) {
      const r = model.step(state, entry.op.input, entry.op.output);
      const bit = 1n << BigInt(entry.id);
      const key = `${(linearized | bit).toString(36)}|${model.hash(r.state)}`;
      if (r.ok && !seen.has(key)) {
        seen.add(key);
        stack.push({ node: entry, state });
        state = r.state;
        linearized |= bit;
        lift(entry);
        entry = head.next;
      } else {
        entry = entry.next;
      }
    } else {
      // A completion with its call not yet linearized: undo the last choice.
      const top = stack.pop();
      if (!top) return false;
      state = top.state;
      linearized &= ~(1n << BigInt(top.node.id));
      unlift(top.node);
      entry = top.node.next;
    }
  }
  return true;
}

export function checkLinearizable<S, I, O>(
  model: Model<S, I, O>,
  history: Operation<I, O>[],
): CheckResult<I, O> {
  const parts = model.partition ? model.partition(history) : [history];
  for (const p of parts) {
    if (!checkPartition(model, p)) return { ok: false, failedPartition: p };
  }
  return { ok: true };
}

// ---- A key-value register model (put / get / delete per key) ----

export type KvInput =
  | { op: 'put'; key: string; value: string }
  | { op: 'get'; key: string }
  | { op: 'delete'; key: string };
/** get: the value read (null = absent); put/delete: nothing to check. */
export type KvOutput = { value?: string | null };

export const kvModel: Model<string | null, KvInput, KvOutput> = {
  init: () => null,
  step(state, input, output) {
    switch (input.op) {
      case 'put':
        return { ok: true, state: input.value };
      case 'delete':
        return { ok: true, state: null };
      case 'get':
        // A read with an unknown outcome observed nothing.
        if (output === undefined) return { ok: true, state };
        return { ok: (output.value ?? null) === state, state };
    }
  },
  hash: (s) => (s === null ? '\u0000' : `=${s}`),
  partition(history) {
    const byKey = new Map<string, Operation<KvInput, KvOutput>[]>();
    for (const op of history) {
      const list = byKey.get(op.input.key) ?? [];
      list.push(op);
      byKey.set(op.input.key, list);
    }
    return [...byKey.values()];
  },
};

/** Records operations with invocation and completion times. */
export class HistoryRecorder<I, O> {
  readonly ops: Operation<I, O>[] = [];
  private readonly t0 = performance.now();

  now(): number {
    return performance.now() - this.t0;
  }

  /** Runs `fn`, recording it; a thrown error records an unknown outcome (and is rethrown). */
  async record(input: I, fn: () => Promise<O>, client?: number): Promise<O> {
    const call = this.now();
    try {
      const output = await fn();
      this.ops.push({ client, input, output, call, return: this.now() });
      return output;
    } catch (err) {
      this.ops.push({ client, input, output: undefined, call, return: Number.POSITIVE_INFINITY });
      throw err;
    }
  }
}
