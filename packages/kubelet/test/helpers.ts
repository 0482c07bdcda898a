// Shared by the kubelet's tests: pod objects and waiting on a recording sink.
import { randomUUID } from 'node:crypto';
import type { Container, Pod, PodSpec, PodStatus } from 'kubernetes-types/core/v1.js';
import type { RecordingSink } from '../src/pods/sinks.js';

export function makePod(
  name: string,
  spec: Partial<PodSpec> & { containers: Container[] },
  namespace = 'default',
): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, uid: randomUUID(), creationTimestamp: new Date().toISOString() },
    spec: { nodeName: 'node-1', restartPolicy: 'Always', terminationGracePeriodSeconds: 1, ...spec },
  };
}

/** Resolves when `pred` holds for the pod's latest status (checked on every change and every 50 ms). */
export async function waitStatus(
  sink: RecordingSink,
  pod: Pod,
  what: string,
  pred: (s: PodStatus) => boolean,
  timeoutMs = 20_000,
): Promise<PodStatus> {
  const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const s = sink.status(key);
    if (s && pred(s)) return s;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(
    `timed out waiting for ${key}: ${what}; last status: ${JSON.stringify(sink.status(key), null, 1)}`,
  );
}

export async function waitUntil(
  what: string,
  pred: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export const FAST_BACKOFF = { initialMs: 300, maxMs: 1200, resetMs: 60_000 };

export function containerState(s: PodStatus, name: string) {
  return [...(s.containerStatuses ?? []), ...(s.initContainerStatuses ?? [])].find((c) => c.name === name);
}
