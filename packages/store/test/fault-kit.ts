// Shared by the fault tests: a recorded client workload against real
// kubit-store members, and the checks every fault test ends with (the
// history is linearizable, every acknowledged write is there).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  checkLinearizable,
  HistoryRecorder,
  type KvInput,
  type KvOutput,
  kvModel,
  sleep,
  waitFor,
} from '@kubit/testkit';
import { KvClient } from './kv-client.js';

/**
 * Whether a failed call certainly never reached a member: the connection was
 * never made. Such a call can be left out of the history; any other failure
 * (deadline, "request timed out", "leader changed") is an unknown outcome.
 */
export function neverSent(err: unknown): boolean {
  const e = err as { code?: number; details?: string; message?: string };
  const text = `${e.details ?? ''} ${e.message ?? ''}`;
  return e.code === 14 && /ECONNREFUSED|No connection established|EHOSTUNREACH|ENETUNREACH/.test(text);
}

export type History = HistoryRecorder<KvInput, KvOutput>;

/** Records a put: acknowledged, unknown (timeout, lost connection) or left out (never sent). */
export async function recordPut(
  history: History,
  client: KvClient,
  key: string,
  value: string,
  who?: number,
  onError?: (err: unknown) => void,
): Promise<'ok' | 'unknown' | 'not-sent'> {
  const call = history.now();
  try {
    await client.put(key, value);
    history.ops.push({
      client: who,
      input: { op: 'put', key, value },
      output: {},
      call,
      return: history.now(),
    });
    return 'ok';
  } catch (err) {
    onError?.(err);
    if (neverSent(err)) return 'not-sent';
    history.ops.push({
      client: who,
      input: { op: 'put', key, value },
      output: undefined,
      call,
      return: Number.POSITIVE_INFINITY,
    });
    return 'unknown';
  }
}

/** Records a linearizable read; a failed read observed nothing and is left out. Rethrows the failure. */
export async function recordGet(
  history: History,
  client: KvClient,
  key: string,
  who?: number,
): Promise<string | null> {
  const call = history.now();
  const value = await client.get(key);
  history.ops.push({
    client: who,
    input: { op: 'get', key },
    output: { value },
    call,
    return: history.now(),
  });
  return value;
}

export interface WorkloadOptions {
  clients?: number;
  /** Shared keys every client reads and writes (lin/0 ..). */
  keys?: number;
  timeoutMs?: number;
}

/**
 * Clients that put and get a few shared keys and put unique keys (ack/...),
 * each call to a random member of `endpoints`, every call recorded.
 */
export class Workload {
  readonly history: History = new HistoryRecorder<KvInput, KvOutput>();
  /** Unique keys whose put was acknowledged. */
  readonly acknowledged = new Map<string, string>();
  /** Calls with a known outcome so far. */
  completed = 0;
  /** The latest failures, for a timeout's message. */
  private readonly failures: string[] = [];
  private endpoints: string[];
  private readonly clients = new Map<string, KvClient>();
  private readonly runners: Promise<void>[] = [];
  private stopping = false;
  private readonly opts: Required<WorkloadOptions>;
  /** Keys and values of this workload are its own: the checker's model starts from absent keys. */
  private readonly run = randomBytes(3).toString('hex');

  constructor(endpoints: string[], opts: WorkloadOptions = {}) {
    this.endpoints = [...endpoints];
    this.opts = { clients: 4, keys: 6, timeoutMs: 5000, ...opts };
  }

  get keys(): string[] {
    return Array.from({ length: this.opts.keys }, (_, i) => `lin/${this.run}/${i}`);
  }

  /** The members calls go to from now on (calls in flight finish where they went). */
  setEndpoints(endpoints: string[]): void {
    assert.ok(endpoints.length > 0, 'a workload needs at least one endpoint');
    this.endpoints = [...endpoints];
  }

  client(endpoint: string): KvClient {
    let c = this.clients.get(endpoint);
    if (!c) {
      c = new KvClient([endpoint], this.opts.timeoutMs);
      this.clients.set(endpoint, c);
    }
    return c;
  }

  start(): void {
    for (let c = 0; c < this.opts.clients; c++) this.runners.push(this.runClient(c));
  }

  private async runClient(c: number): Promise<void> {
    for (let i = 0; !this.stopping; i++) {
      const endpoint = this.endpoints[Math.floor(Math.random() * this.endpoints.length)];
      const client = this.client(endpoint);
      const key = this.keys[Math.floor(Math.random() * this.opts.keys)];
      let ok = false;
      const note = (err: unknown) => this.noteFailure(endpoint, err);
      try {
        if (i % 3 === 0) {
          const r = await recordPut(this.history, client, key, `${this.run}-c${c}-${i}`, c, note);
          ok = r === 'ok';
        } else if (i % 3 === 1) {
          await recordGet(this.history, client, key, c);
          ok = true;
        } else {
          const unique = `ack/${this.run}/${c}/${i}`;
          const value = `${this.run}-v${c}-${i}`;
          const r = await recordPut(this.history, client, unique, value, c, note);
          ok = r === 'ok';
          if (ok) this.acknowledged.set(unique, value);
        }
      } catch (err) {
        ok = false;
        this.noteFailure(endpoint, err);
      }
      if (ok) this.completed++;
      // A failing member (killed, partitioned, no leader) is not hammered in a tight loop.
      else await sleep(100);
    }
  }

  private noteFailure(endpoint: string, err: unknown): void {
    const e = err as { details?: string; message?: string };
    this.failures.push(`${endpoint}: ${e.details || e.message || String(err)}`);
    if (this.failures.length > 8) this.failures.shift();
  }

  /** Waits for `n` more calls with a known outcome. */
  async progress(n: number, what: string, timeoutMs = 120_000): Promise<void> {
    const target = this.completed + n;
    try {
      await waitFor(`${n} more successful calls ${what}`, () => this.completed >= target, timeoutMs, 50);
    } catch (err) {
      throw new Error(
        `${(err as Error).message} (${this.completed} so far; latest failures:\n${this.failures.join('\n')})`,
      );
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.runners);
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
  }

  /**
   * Reads every shared key and every acknowledged unique key linearizably
   * through `endpoint` (retrying failures), recording the reads, and checks
   * each acknowledged unique write is there.
   */
  async verifyAcknowledged(endpoint: string): Promise<void> {
    const client = this.client(endpoint);
    for (const key of this.keys) {
      await waitFor(`a linearizable read of ${key} via ${endpoint}`, () =>
        recordGet(this.history, client, key).then(() => true),
      );
    }
    const all = await waitFor(`a read of ack/ via ${endpoint}`, async () => {
      const r = await client.call<{ kvs: { key: Buffer; value: Buffer }[] }>('Range', {
        key: Buffer.from('ack/'),
        range_end: Buffer.from('ack0'),
      });
      return new Map(r.kvs.map((kv) => [kv.key.toString(), kv.value.toString()]));
    });
    const lost = [...this.acknowledged].filter(([k, v]) => all.get(k) !== v);
    assert.deepEqual(lost, [], `acknowledged writes lost: ${lost.map(([k, v]) => `${k}=${v}`).join(' ')}`);
  }
}

/** Fails with the operations of the first key whose history is not linearizable. */
export function assertLinearizable(history: History): void {
  const result = checkLinearizable(kvModel, history.ops);
  const show = (ops: typeof history.ops) =>
    ops
      .map(
        (o) =>
          `${o.input.op} ${o.input.key}${o.input.op === 'put' ? `=${o.input.value}` : ''} -> ${
            o.output === undefined ? '?' : JSON.stringify(o.output.value ?? null)
          } [${o.call.toFixed(0)}, ${o.return.toFixed(0)}]`,
      )
      .join('\n');
  assert.ok(
    result.ok,
    `history not linearizable; that key's operations:\n${show(result.failedPartition ?? [])}`,
  );
}
