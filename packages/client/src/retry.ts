// Bounded retries with exponential backoff and jitter. Which failures may be
// retried depends on whether the server can have acted on the request.

import { StatusError } from '@kubit/api';
import { ConnectionError } from './errors.js';

export interface RetryPolicy {
  /** Retries after the first attempt (0 disables retrying). */
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { maxRetries: 4, baseDelayMs: 100, maxDelayMs: 5_000 };

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The delay before retry number `attempt` (0-based), or undefined when the error
 * must not be retried. A refused connection or a 429 never reached a handler, so
 * any method may retry them; a reset or a 503 may have, so only reads retry.
 */
export function retryDelay(
  method: string,
  err: unknown,
  attempt: number,
  policy: RetryPolicy,
  random = Math.random,
): number | undefined {
  if (attempt >= policy.maxRetries) return undefined;
  const idempotent = IDEMPOTENT.has(method.toUpperCase());
  let hinted: number | undefined;
  if (err instanceof ConnectionError) {
    if (!err.refused && !idempotent) return undefined;
    if (err.code === 'ETOKEN') return undefined;
    if (err.message.includes('x509') || err.message.includes('tls:')) return undefined;
  } else if (err instanceof StatusError) {
    if (err.code === 429 || (err.code === 503 && idempotent)) {
      const secs = err.status.details?.retryAfterSeconds;
      if (secs && secs > 0) hinted = secs * 1000;
    } else {
      return undefined;
    }
  } else {
    return undefined;
  }
  return backoff(attempt, policy, random, hinted);
}

/** base·2^attempt, capped, with up to 50% extra jitter so clients spread out. */
export function backoff(
  attempt: number,
  policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>,
  random = Math.random,
  hinted?: number,
): number {
  const exp = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  const base = hinted !== undefined ? Math.min(policy.maxDelayMs, Math.max(hinted, exp)) : exp;
  return Math.round(base * (1 + 0.5 * random()));
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason ?? new Error('aborted'));
      return;
    }
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason ?? new Error('aborted'));
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
