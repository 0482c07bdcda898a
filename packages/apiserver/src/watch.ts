// Watch over HTTP: a chunked response carrying one JSON event per line, fed
// by the resource's watch cache.
import type { ServerResponse } from 'node:http';
import { expired } from '@kubit/api';
import type { Gauge } from '@kubit/daemon';
import type { KindDef } from './kinds/types.js';
import { parseResourceVersion, queryInt, queryString, type ResourceRequest } from './request.js';
import type { Ctx, Rest } from './rest.js';
import type { KObject } from './storage.js';
import { type IncludeObject, tableColumns, tableRows } from './table.js';
import { type EventType, TooOldError, type WatchEvent } from './watchcache.js';

/** Node's timers overflow past 2^31 ms (~24.8 days): a longer timeout would fire at once. */
const MAX_TIMER_SECONDS = 2_000_000;

export interface WatchOptions {
  /** How often BOOKMARK events go out to watchers that asked for them. */
  bookmarkIntervalMs: number;
  /**
   * A watch without timeoutSeconds is closed after a random time between this and
   * twice this, as Kubernetes' --min-request-timeout does: clients reconnect, and
   * not all at once.
   */
  minRequestTimeoutSeconds: number;
  openWatches: Gauge<'resource'>;
}

export interface WatchTarget {
  raw: ServerResponse;
  /** Called when the client goes away. */
  onClose(fn: () => void): void;
  /** Accept header said Table. */
  table: IncludeObject | undefined;
}

/**
 * The wire line of one cached object as one kind's event type. Every watcher
 * that receives the event gets the same object from the cache, so the line is
 * serialised once and the same buffer is written to all of them: with a
 * thousand watchers, JSON.stringify per watcher would dominate the fan-out.
 * Keyed weakly on the object, so lines go when the cache drops the object.
 */
const eventLines = new WeakMap<KObject, Map<KindDef, Partial<Record<EventType, Buffer>>>>();

export function sharedEventLine(
  def: KindDef,
  type: EventType,
  object: KObject,
  out: (o: KObject) => KObject,
): Buffer {
  let byDef = eventLines.get(object);
  if (!byDef) {
    byDef = new Map();
    eventLines.set(object, byDef);
  }
  let byType = byDef.get(def);
  if (!byType) {
    byType = {};
    byDef.set(def, byType);
  }
  let line = byType[type];
  if (!line) {
    line = Buffer.from(`${JSON.stringify({ type, object: out(object) })}\n`);
    byType[type] = line;
  }
  return line;
}

/** Validates and opens a watch; writes events until timeout, close or overflow. */
export async function serveWatch(
  rest: Rest,
  def: KindDef,
  ri: ResourceRequest,
  ctx: Ctx,
  target: WatchTarget,
  opts: WatchOptions,
): Promise<void> {
  const q = ctx.query;
  const filter = rest.filterFor(def, ri.namespace, q);
  const rv = parseResourceVersion(queryString(q, 'resourceVersion'));
  const timeout = queryInt(q, 'timeoutSeconds');
  const bookmarks = queryString(q, 'allowWatchBookmarks') === 'true';
  const sendInitial = queryString(q, 'sendInitialEvents') === 'true';
  // A watch on one object is a watch on the collection filtered by name.
  const nameFilter = ri.name ? (o: KObject) => o.metadata?.name === ri.name && filter(o) : filter;
  const cache = rest.cacheFor(def);
  await cache.start();

  const res = target.raw;
  res.writeHead(200, {
    'Content-Type': 'application/json',
    'Transfer-Encoding': 'chunked',
    'Cache-Control': 'no-cache, private',
  });
  res.flushHeaders();

  let first = true;
  const encode = (ev: WatchEvent): Buffer => {
    if (target.table && (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED')) {
      const object = {
        kind: 'Table',
        apiVersion: 'meta.k8s.io/v1',
        metadata: { resourceVersion: String(ev.object.metadata?.resourceVersion ?? '') },
        columnDefinitions: first ? tableColumns(def) : [],
        rows: tableRows(def, [rest.out(def, ev.object)], target.table),
      };
      first = false;
      return Buffer.from(`${JSON.stringify({ type: ev.type, object })}\n`);
    }
    if (ev.type === 'ERROR' || ev.type === 'BOOKMARK') {
      return Buffer.from(`${JSON.stringify({ type: ev.type, object: ev.object })}\n`);
    }
    return sharedEventLine(def, ev.type, ev.object, (o) => rest.out(def, o));
  };

  let sub: ReturnType<typeof cache.subscribe>;
  try {
    const initial = sendInitial || rv === undefined || rv === 0;
    sub = cache.subscribe(nameFilter, initial ? 'now' : rv!, initial);
  } catch (err) {
    if (err instanceof TooOldError) {
      res.end(encode({ type: 'ERROR', object: expired(err.message).status as unknown as KObject }));
      return;
    }
    throw err;
  }
  if (sendInitial) {
    sub.push({
      type: 'BOOKMARK',
      object: {
        kind: def.kind,
        apiVersion: rest.out(def, {}).apiVersion,
        metadata: {
          resourceVersion: String(cache.rev),
          annotations: { 'k8s.io/initial-events-end': 'true' },
        },
      },
    });
  }
  opts.openWatches.inc({ resource: def.resource });
  const timers: NodeJS.Timeout[] = [];
  const seconds =
    timeout !== undefined && timeout > 0
      ? Math.min(timeout, MAX_TIMER_SECONDS)
      : opts.minRequestTimeoutSeconds * (1 + Math.random());
  timers.push(setTimeout(() => sub.close('timeout'), seconds * 1000));
  if (bookmarks) {
    timers.push(
      setInterval(() => {
        sub.push({
          type: 'BOOKMARK',
          object: {
            kind: def.kind,
            apiVersion: String(rest.out(def, {}).apiVersion),
            metadata: { resourceVersion: String(Math.max(cache.rev, sub.lastRev)) },
          },
        });
      }, opts.bookmarkIntervalMs),
    );
  }
  target.onClose(() => sub.close('client closed'));
  try {
    while (!sub.closed) {
      const batch = await sub.next();
      if (batch.length === 0) continue;
      const lines = batch.map(encode);
      const data = lines.length === 1 ? lines[0] : Buffer.concat(lines);
      if (res.destroyed) break;
      if (!res.write(data)) {
        // The client reads slowly: wait for it, but never buffer more than the subscription allows.
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.on('drain', done);
          res.on('close', done);
          void sub.done.then(done);
        });
      }
    }
  } finally {
    for (const t of timers) clearTimeout(t);
    sub.close();
    opts.openWatches.dec({ resource: def.resource });
    // A client that stopped reading gets its connection cut: ending politely would buffer more.
    if (sub.reason === 'watcher fell too far behind') res.destroy();
    else if (!res.destroyed) res.end();
  }
}
