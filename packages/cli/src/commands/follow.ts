// Following one object as it changes: read it, then watch it from that
// version; a dropped watch (server restart, watch timeout) is resumed from the
// last version seen, after a re-read so nothing in between is missed.

import { isExpiredOrGone, isNotFound, StatusError } from '@kubit/api';
import type { APIResourceInfo, KubeClient, KubeObject } from '@kubit/client';
import { sleep } from '@kubit/client';

/**
 * Calls `see` with the object (undefined: it does not exist) now and after
 * every change, until `see` returns true or `signal` aborts (then resolves false).
 */
export async function followObject<T extends KubeObject>(
  client: KubeClient,
  r: APIResourceInfo,
  namespace: string | undefined,
  name: string,
  see: (obj: T | undefined) => boolean,
  signal: AbortSignal,
): Promise<boolean> {
  let failures = 0;
  let failingSince = 0;
  const failed = (e: unknown) => {
    // The server's answer is final; a dropped connection is retried for a while.
    if (e instanceof StatusError && !isExpiredOrGone(e) && !TRANSIENT.has(e.code)) throw e;
    if (failures++ === 0) failingSince = Date.now();
    if (Date.now() - failingSince > RETRY_BUDGET_MS) throw e;
  };
  while (!signal.aborted) {
    let rv = '';
    try {
      const obj = await client.get<T>(r, name, { namespace, signal });
      if (see(obj)) return true;
      rv = obj.metadata?.resourceVersion ?? '';
      failures = 0;
    } catch (e) {
      if (signal.aborted) return false;
      if (isNotFound(e)) {
        if (see(undefined)) return true;
      } else {
        failed(e);
        if (!(await pause(failures, signal))) return false;
        continue;
      }
    }
    try {
      const w = client.watch<T>(r, {
        namespace,
        fieldSelector: `metadata.name=${name}`,
        resourceVersion: rv || undefined,
        signal,
      });
      for await (const ev of w) {
        failures = 0;
        if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') continue;
        if (see(ev.type === 'DELETED' ? undefined : ev.object)) {
          w.stop();
          return true;
        }
      }
    } catch (e) {
      if (signal.aborted) return false;
      failed(e);
    }
    if (!(await pause(failures, signal))) return false;
  }
  return false;
}

const RETRY_BUDGET_MS = 120_000;

/** Answers that mean "not now" (a server starting or overloaded), not "never". */
const TRANSIENT = new Set([429, 500, 502, 503, 504]);

/** Backoff before the next attempt; false if aborted meanwhile. */
async function pause(failures: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(Math.min(2000, 100 * 2 ** failures), signal);
    return true;
  } catch {
    return false;
  }
}

/** An AbortSignal that fires on the caller's signal or after `timeoutMs` (0: never). */
export function deadlineSignal(
  timeoutMs: number,
  outer?: AbortSignal,
): { signal: AbortSignal; timedOut: () => boolean; dispose: () => void } {
  const ac = new AbortController();
  let expired = false;
  const timer =
    timeoutMs > 0
      ? setTimeout(() => {
          expired = true;
          ac.abort();
        }, timeoutMs)
      : undefined;
  const onAbort = () => ac.abort();
  outer?.addEventListener('abort', onAbort, { once: true });
  if (outer?.aborted) ac.abort();
  return {
    signal: ac.signal,
    timedOut: () => expired,
    dispose: () => {
      if (timer) clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
  };
}
