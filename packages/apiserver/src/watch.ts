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
import { TooOldError, type WatchEvent } from './watchcache.js';

export interface WatchOptions {
  /** How often BOOKMARK events go out to watchers that asked for them. */
  bookmarkIntervalMs: number;
  /** The longest a watch stays open when the client gives no timeoutSeconds. */
  maxTimeoutSeconds: number;
  openWatches: Gauge<'resource'>;
}

export interface WatchTarget {
  raw: ServerResponse;
  /** Called when the client goes away. */
  onClose(fn: () => void): void;
  /** Accept header said Table. */
  table: IncludeObject | undefined;
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
  const encode = (ev: WatchEvent): string => {
    let object: unknown =
      ev.type === 'ERROR' || ev.type === 'BOOKMARK' ? ev.object : rest.out(def, ev.object);
    if (target.table && (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED')) {
      object = {
        kind: 'Table',
        apiVersion: 'meta.k8s.io/v1',
        metadata: { resourceVersion: String(ev.object.metadata?.resourceVersion ?? '') },
        columnDefinitions: first ? tableColumns(def) : [],
        rows: tableRows(def, [object as KObject], target.table),
      };
      first = false;
    }
    return `${JSON.stringify({ type: ev.type, object })}\n`;
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
    timeout !== undefined && timeout > 0 ? Math.min(timeout, opts.maxTimeoutSeconds) : opts.maxTimeoutSeconds;
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
      const text = batch.map(encode).join('');
      if (res.destroyed) break;
      if (!res.write(text)) {
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
