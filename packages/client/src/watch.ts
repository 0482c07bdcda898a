// A watch stream: newline-delimited JSON events read as they arrive, handed
// out through an async iterator (or a callback). The buffer is bounded: when
// the consumer falls behind, the socket is paused until it catches up, so a
// slow consumer costs memory for at most `maxBuffered` events.

import { StatusError } from '@kubit/api';
import { describeNetworkError, errorFromResponse } from './errors.js';
import type { StreamResponse } from './transport.js';
import type { WatchEvent } from './types.js';

export interface WatchStreamOptions<T> {
  /** Events held before the socket is paused (default 1000). */
  maxBuffered?: number;
  /** Largest accepted line (one event), bytes (default 32 MiB). */
  maxLineBytes?: number;
  /** Called for each event instead of buffering it for the iterator. */
  onEvent?: (event: WatchEvent<T>) => void;
  /** Called once when the stream ends: undefined for a normal end or stop(). */
  onClose?: (err: Error | undefined) => void;
}

/** Splits a byte stream into lines; keeps a partial last line between chunks. */
export class LineSplitter {
  private pending = '';
  constructor(private readonly maxLine = 32 * 1024 * 1024) {}

  push(chunk: string): string[] {
    const lines: string[] = [];
    let text = chunk;
    let from = 0;
    let nl = text.indexOf('\n');
    if (nl >= 0 && this.pending !== '') {
      // Only the first line of a chunk can continue the previous one.
      text = this.pending + chunk;
      nl += this.pending.length;
    }
    if (nl >= 0) this.pending = '';
    for (; nl >= 0; nl = text.indexOf('\n', from)) {
      // Blank lines (keep-alives) are skipped; a line is only ever trimmed to test that.
      if (nl > from && (text.charCodeAt(from) > 32 || text.slice(from, nl).trim() !== ''))
        lines.push(text.slice(from, nl));
      from = nl + 1;
    }
    this.pending += from === 0 ? text : text.slice(from);
    if (this.pending.length > this.maxLine) throw new Error(`watch event larger than ${this.maxLine} bytes`);
    return lines;
  }

  flush(): string[] {
    const rest = this.pending.trim();
    this.pending = '';
    return rest ? [rest] : [];
  }
}

/** Parses one event line, rejecting anything that is not {type, object}. */
export function parseWatchEvent<T>(line: string): WatchEvent<T> {
  const ev = JSON.parse(line) as { type?: unknown; object?: unknown };
  if (typeof ev !== 'object' || ev === null || typeof ev.type !== 'string' || typeof ev.object !== 'object') {
    throw new Error(`malformed watch event: ${line.slice(0, 200)}`);
  }
  return ev as WatchEvent<T>;
}

export class Watch<T> implements AsyncIterable<WatchEvent<T>> {
  /** Settles when the stream is over: with the error that ended it, or undefined. */
  readonly closed: Promise<Error | undefined>;
  private readonly buffer: WatchEvent<T>[] = [];
  private readonly controller = new AbortController();
  private readonly maxBuffered: number;
  private wake: (() => void) | undefined;
  private finished = false;
  private failure: Error | undefined;
  private response: StreamResponse | undefined;
  private paused = false;
  private settle!: (err: Error | undefined) => void;

  constructor(
    open: (signal: AbortSignal) => Promise<StreamResponse>,
    private readonly host: string,
    private readonly opts: WatchStreamOptions<T> = {},
  ) {
    this.maxBuffered = opts.maxBuffered ?? 1000;
    this.closed = new Promise((r) => {
      this.settle = r;
    });
    this.run(open).catch((e) => this.finish(e instanceof Error ? e : new Error(String(e))));
  }

  /** Ends the watch; iteration stops after the events already buffered. */
  stop(): void {
    if (this.finished) return;
    this.controller.abort();
    this.response?.stream.destroy();
    this.finish(undefined);
  }

  get stopped(): boolean {
    return this.finished;
  }

  private async run(open: (signal: AbortSignal) => Promise<StreamResponse>): Promise<void> {
    let res: StreamResponse;
    try {
      res = await open(this.controller.signal);
    } catch (e) {
      if (this.controller.signal.aborted) return this.finish(undefined);
      throw e;
    }
    this.response = res;
    const stream = res.stream;
    if (this.finished) {
      stream.destroy();
      return;
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      let body = '';
      for await (const chunk of stream) body += chunk.toString();
      const ra = res.headers['retry-after'];
      throw errorFromResponse(res.statusCode, body, typeof ra === 'string' ? ra : undefined);
    }
    const splitter = new LineSplitter(this.opts.maxLineBytes);
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      try {
        for (const line of splitter.push(chunk)) this.deliver(parseWatchEvent<T>(line));
      } catch (e) {
        stream.destroy();
        this.finish(e as Error);
      }
    });
    stream.on('end', () => {
      try {
        for (const line of splitter.flush()) this.deliver(parseWatchEvent<T>(line));
        this.finish(undefined);
      } catch (e) {
        this.finish(e as Error);
      }
    });
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (this.controller.signal.aborted) this.finish(undefined);
      else this.finish(err instanceof StatusError ? err : describeNetworkError(err, this.host));
    });
    stream.on('close', () => {
      // A socket closed without 'end' (server died mid-chunk) is an error, not a normal end.
      if (!this.finished)
        this.finish(
          this.controller.signal.aborted
            ? undefined
            : describeNetworkError(
                Object.assign(new Error('unexpected EOF'), { code: 'ECONNRESET' }),
                this.host,
              ),
        );
    });
  }

  private deliver(ev: WatchEvent<T>): void {
    if (this.finished) return;
    if (this.opts.onEvent) {
      this.opts.onEvent(ev);
      return;
    }
    this.buffer.push(ev);
    if (this.buffer.length >= this.maxBuffered && !this.paused && this.response) {
      this.paused = true;
      this.response.stream.pause();
    }
    this.notify();
  }

  private finish(err: Error | undefined): void {
    if (this.finished) return;
    this.finished = true;
    this.failure = err;
    this.settle(err);
    this.opts.onClose?.(err);
    this.notify();
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<WatchEvent<T>> {
    try {
      for (;;) {
        const ev = this.buffer.shift();
        if (ev) {
          if (this.paused && this.buffer.length <= this.maxBuffered / 2) {
            this.paused = false;
            this.response?.stream.resume();
          }
          yield ev;
          continue;
        }
        if (this.finished) {
          if (this.failure) throw this.failure;
          return;
        }
        await new Promise<void>((r) => {
          this.wake = r;
        });
      }
    } finally {
      // Breaking out of `for await` ends the watch.
      this.stop();
    }
  }
}
