// etcdserverpb.Watch: many watchers per bidi stream. History comes from the
// MVCC state (every retained version), live events from the state machine
// right after each batch of committed entries is applied, so a watcher never
// misses or repeats a revision. A watcher gets one response per applied batch
// (holding every revision of the batch it wants, as etcd does for a watcher
// catching up), and each change is encoded once for all the watchers it goes to.

import type { Event, WatchCreateRequest, WatchRequest, WatchResponse } from '../messages.js';
import { inRange, type KeyRange, toKeyRange } from '../mvcc/keys.js';
import { toDeletedKeyValue, toKeyValue } from '../mvcc/kv.js';
import type { ChangeEvent } from '../mvcc/store.js';
import { encodeChange, encodeWatchEvents, encodeWatchResponseHead } from '../wire/etcd.js';
import { header, type ServerContext } from './context.js';
import type { DuplexCall, ServiceImplementation } from './grpc-server.js';

const FILTER_NOPUT = 0;
const FILTER_NODELETE = 1;
/** A response holding more event bytes than this is cut at the next revision (clients take 4 MiB by default). */
const MAX_RESPONSE_EVENT_BYTES = 1024 * 1024;

/** The changes of one applied revision. */
interface AppliedRevision {
  changes: ChangeEvent[];
  rev: number;
}

/** How many distinct event lists of one delivery keep their encoded form for the next watchers. */
const SHARED_EVENT_LISTS = 8;

/**
 * Encodes each change at most once per form (with or without prev_kv) for
 * all watchers, and each list of events a watcher gets at most once for all
 * the watchers that get the very same list (typically every watcher of a
 * prefix): those share the encoded bytes, and only their small response
 * heads differ.
 */
class ChangeEncoder {
  private readonly plain = new Map<ChangeEvent, Buffer>();
  private readonly withPrev = new Map<ChangeEvent, Buffer>();
  private readonly lists: { events: Buffer[]; encoded: Buffer }[] = [];

  /** The events part of a response holding `events` (from get()), shared when already built. */
  eventsPart(events: Buffer[]): Buffer {
    for (const l of this.lists) if (sameBuffers(l.events, events)) return l.encoded;
    const encoded = encodeWatchEvents(events);
    if (this.lists.length >= SHARED_EVENT_LISTS) this.lists.shift();
    this.lists.push({ events, encoded });
    return encoded;
  }

  get(ch: ChangeEvent, prevKv: boolean): Buffer {
    const cache = prevKv && ch.prev ? this.withPrev : this.plain;
    let b = cache.get(ch);
    if (!b) {
      b = encodeChange(ch.record, prevKv ? ch.prev : undefined);
      cache.set(ch, b);
    }
    return b;
  }
}

function sameBuffers(a: Buffer[], b: Buffer[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

interface Watcher {
  id: number;
  range: KeyRange;
  startRev: number;
  prevKv: boolean;
  noPut: boolean;
  noDelete: boolean;
  progressNotify: boolean;
}

type WatchStream = DuplexCall<WatchRequest, WatchResponse>;

class StreamWatchers {
  readonly watchers = new Map<number, Watcher>();
  private nextId = 0;

  constructor(
    private readonly ctx: ServerContext,
    private readonly stream: WatchStream,
    private readonly hub: WatchHub,
  ) {}

  // A client that stops reading is cut off by the gRPC server (its
  // --max-stream-buffered-bytes); writes to a cut-off stream are dropped.
  send(resp: WatchResponse): void {
    this.stream.write(resp);
  }

  handle(req: WatchRequest): void {
    if (req.create_request) this.create(req.create_request);
    else if (req.cancel_request) {
      const id = Number(req.cancel_request.watch_id);
      if (this.watchers.delete(id)) {
        this.send({ header: header(this.ctx), watch_id: id, canceled: true, events: [] });
      }
    } else if (req.progress_request) {
      this.send({ header: header(this.ctx), watch_id: -1, events: [] });
    }
  }

  private create(c: WatchCreateRequest): void {
    const mvcc = this.ctx.machine.mvcc;
    let id = Number(c.watch_id ?? 0);
    if (id === 0 || id === -1) {
      while (this.watchers.has(this.nextId)) this.nextId++;
      id = this.nextId++;
    } else if (this.watchers.has(id)) {
      this.send({
        header: header(this.ctx),
        watch_id: id,
        created: true,
        canceled: true,
        cancel_reason: 'watch ID already in use',
        events: [],
      });
      return;
    }
    const w: Watcher = {
      id,
      range: toKeyRange(c.key, c.range_end),
      startRev: Number(c.start_revision ?? 0),
      prevKv: c.prev_kv,
      noPut: c.filters?.includes(FILTER_NOPUT) ?? false,
      noDelete: c.filters?.includes(FILTER_NODELETE) ?? false,
      progressNotify: c.progress_notify,
    };
    this.send({ header: header(this.ctx), watch_id: id, created: true, events: [] });
    if (w.startRev > 0 && w.startRev < mvcc.compactRev) {
      this.send({
        header: header(this.ctx),
        watch_id: id,
        canceled: true,
        compact_revision: mvcc.compactRev,
        events: [],
      });
      return;
    }
    if (w.startRev > 0 && w.startRev <= mvcc.rev) {
      const past = mvcc.changesSince(w.range, w.startRev);
      const events = this.filter(w, past);
      if (events.length > 0) this.send({ header: header(this.ctx), watch_id: id, events });
    }
    if (w.startRev <= mvcc.rev) w.startRev = mvcc.rev + 1;
    this.watchers.set(id, w);
  }

  filter(w: Watcher, changes: ChangeEvent[]): Event[] {
    const out: Event[] = [];
    for (const ch of changes) {
      const deleted = ch.record.version === 0;
      if ((deleted && w.noDelete) || (!deleted && w.noPut)) continue;
      const ev: Event = {
        type: deleted ? 1 : 0,
        kv: deleted ? toDeletedKeyValue(ch.record) : toKeyValue(ch.record),
      };
      if (w.prevKv && ch.prev) ev.prev_kv = toKeyValue(ch.prev);
      out.push(ev);
    }
    return out;
  }

  /** Sends each watcher the changes it wants from `applied`, in revision order. */
  deliver(applied: AppliedRevision[], encoder: ChangeEncoder): void {
    for (const w of this.watchers.values()) {
      let out: Buffer[] = [];
      let size = 0;
      let lastRev = 0;
      for (const { changes, rev } of applied) {
        if (rev < w.startRev) continue;
        for (const ch of changes) {
          if (!inRange(w.range, ch.record.key)) continue;
          const deleted = ch.record.version === 0;
          if ((deleted && w.noDelete) || (!deleted && w.noPut)) continue;
          const ev = encoder.get(ch, w.prevKv);
          out.push(ev);
          size += ev.length;
        }
        lastRev = rev;
        if (size > MAX_RESPONSE_EVENT_BYTES) {
          this.sendEvents(w, rev, encoder.eventsPart(out));
          out = [];
          size = 0;
        }
      }
      if (out.length > 0) this.sendEvents(w, lastRev, encoder.eventsPart(out));
    }
  }

  /** A response of events to watcher `w` at revision `rev`: its own head, then the shared events part. */
  private sendEvents(w: Watcher, rev: number, events: Buffer): void {
    const head = encodeWatchResponseHead(header(this.ctx, rev), w.id, events.length);
    this.stream.writeFramed([head, events]);
  }

  progress(): void {
    for (const w of this.watchers.values()) {
      if (w.progressNotify) this.send({ header: header(this.ctx), watch_id: w.id, events: [] });
    }
  }

  close(): void {
    this.hub.streams.delete(this);
  }
}

export class WatchHub {
  readonly streams = new Set<StreamWatchers>();
  private progressTimer: NodeJS.Timeout | undefined;
  /** Revisions applied since the last flush. */
  private applied: AppliedRevision[] = [];

  constructor(
    private readonly ctx: ServerContext,
    progressIntervalMs = 10 * 60 * 1000,
  ) {
    this.progressTimer = setInterval(() => {
      for (const s of this.streams) s.progress();
    }, progressIntervalMs);
    this.progressTimer.unref();
  }

  /** A revision was applied; its events go out at the next flush (the end of the applied batch). */
  onChanges(changes: ChangeEvent[], rev: number): void {
    if (this.streams.size === 0) return;
    this.applied.push({ changes, rev });
  }

  flush(): void {
    if (this.applied.length === 0) return;
    const applied = this.applied;
    this.applied = [];
    const encoder = new ChangeEncoder();
    for (const s of this.streams) s.deliver(applied, encoder);
  }

  service(): ServiceImplementation {
    return {
      Watch: (stream: WatchStream) => {
        const s = new StreamWatchers(this.ctx, stream, this);
        this.streams.add(s);
        stream.on('data', (req: WatchRequest) => s.handle(req));
        stream.on('end', () => {
          s.close();
          stream.end();
        });
        stream.on('close', () => s.close());
      },
    };
  }

  stop(): void {
    if (this.progressTimer) clearInterval(this.progressTimer);
  }
}
