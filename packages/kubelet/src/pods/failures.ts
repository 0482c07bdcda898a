// The one way the kubelet lets a call fail without failing what it was doing
// (a best-effort stop or remove, a clean-up): it logs which call failed, for
// which pod, and why, instead of swallowing the error.

import { isNotFound } from '@kubit/cri';
import type { Logger } from '@kubit/daemon';

export interface FailedCall {
  /** The pod the call was for: "namespace/name", or its uid when that is all the caller knows. */
  pod: string;
  /** The call and its target, e.g. "StopContainer 3f2a…". */
  call: string;
  /**
   * The level for an error that is not expected. Default warn; debug for a call
   * whose error someone else reads (and reports) later.
   */
  level?: 'warn' | 'debug';
  /** Errors that are expected and mean nothing is wrong (default: NotFound, the thing is gone already). */
  expected?: (err: unknown) => boolean;
}

/** A rejection handler for `promise.catch(...)`: logs the failure and resolves to undefined. */
export function logFailure(log: Logger, what: FailedCall): (err: unknown) => undefined {
  return (err) => {
    const expected = (what.expected ?? isNotFound)(err);
    const level = expected ? 'debug' : (what.level ?? 'warn');
    const message = err instanceof Error ? err.message : String(err);
    log[level]({ pod: what.pod, call: what.call, err: message }, `${what.call} failed`);
    return undefined;
  };
}
