// Start-up tracing: when each step of a pod's way to Running happened, to find
// where the time goes (bench:pod-startup reads it). Off unless asked for.
import { appendFileSync } from 'node:fs';

/** The steps, in the order a new pod goes through them. */
export type TraceStep =
  | 'watch-delivered'
  | 'sync-start'
  | 'volumes-ready'
  | 'sandbox-requested'
  | 'sandbox-started'
  | 'image-checked'
  | 'container-requested'
  | 'container-created'
  | 'start-requested'
  | 'container-started'
  | 'status-set'
  | 'status-written'
  /** The status published before ContainerStatus differed from what it then reported. */
  | 'status-corrected';

export type Tracer = (uid: string, step: TraceStep, detail?: string) => void;

/**
 * A tracer that appends one JSON line per step to `file`:
 * {"uid","step","t"(epoch ms, sub-ms precision),"detail"?}. Written
 * synchronously, since it is only for measurements.
 */
export function fileTracer(file: string): Tracer {
  const origin = Date.now() - performance.now();
  return (uid, step, detail) => {
    const t = origin + performance.now();
    appendFileSync(file, `${JSON.stringify({ uid, step, t, ...(detail ? { detail } : {}) })}\n`);
  };
}
