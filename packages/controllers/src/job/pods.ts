// The pods of a Job: how they are made from its template, and how their end is
// read. Every pod carries the job-tracking finalizer until the controller has
// counted it in the Job's status, so a pod that finishes (or is deleted) while
// the controller is down is still there to be counted when it comes back.
import type { Container, Job, LabelSelector, Pod } from '@kubit/api';
import { ownerRefFor, timeOf } from '../objects.js';
import {
  COMPLETION_INDEX_ANNOTATION,
  COMPLETION_INDEX_LABEL,
  INDEX_FAILURE_COUNT_ANNOTATION,
} from './indexes.js';

export const JOB_TRACKING_FINALIZER = 'batch.kubernetes.io/job-tracking';
export const CONTROLLER_UID_LABEL = 'batch.kubernetes.io/controller-uid';
export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';
export const COMPLETION_INDEX_ENV = 'JOB_COMPLETION_INDEX';

export function hasTrackingFinalizer(p: Pod): boolean {
  return p.metadata?.finalizers?.includes(JOB_TRACKING_FINALIZER) === true;
}

export function isIndexed(job: Job): boolean {
  return job.spec?.completionMode === 'Indexed';
}

/**
 * Whether only pods that reached the Failed phase are replaced (and counted):
 * podReplacementPolicy Failed, which a podFailurePolicy implies, since the
 * policy needs each pod's final state.
 */
export function onlyReplaceFailedPods(job: Job): boolean {
  return job.spec?.podReplacementPolicy === 'Failed' || job.spec?.podFailurePolicy !== undefined;
}

/**
 * How a pod ended, for counting: Succeeded and Failed phases; a pod being
 * deleted before it succeeded counts as failed (it will never get the chance),
 * unless only Failed pods count (Kubernetes' isPodFailed). Undefined while it runs.
 */
export function podOutcome(p: Pod, job: Job): 'Succeeded' | 'Failed' | undefined {
  const phase = p.status?.phase;
  if (phase === 'Succeeded') return 'Succeeded';
  if (phase === 'Failed') return 'Failed';
  if (p.metadata?.deletionTimestamp && !onlyReplaceFailedPods(job)) return 'Failed';
  return undefined;
}

export function isPodTerminal(p: Pod): boolean {
  return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
}

/** When a pod ended: its containers' latest finishedAt, else its deletion, else `now`. */
export function podFinishTime(p: Pod, now: number): number {
  let t = 0;
  for (const s of p.status?.containerStatuses ?? []) t = Math.max(t, timeOf(s.state?.terminated?.finishedAt));
  if (t === 0) t = timeOf(p.metadata?.deletionTimestamp);
  return t === 0 ? now : t;
}

/** A Job's pod selector: the one it has (the apiserver defaults it), or its controller-uid label. */
export function jobSelector(job: Job): LabelSelector {
  return job.spec?.selector ?? { matchLabels: { [CONTROLLER_UID_LABEL]: job.metadata?.uid ?? '' } };
}

/**
 * The pod a Job creates: its template, owned by the Job, with the tracking
 * finalizer; an Indexed Job's pod also carries its index (annotation, label,
 * JOB_COMPLETION_INDEX in every container, hostname `<job>-<index>`).
 */
export function podForJob(job: Job, index?: number, indexFailures = 0): Pod {
  const t = job.spec?.template;
  const meta = t?.metadata ?? {};
  const name = job.metadata?.name ?? '';
  const labels: Record<string, string> = {
    [CONTROLLER_UID_LABEL]: job.metadata?.uid ?? '',
    [JOB_NAME_LABEL]: name,
    ...meta.labels,
  };
  const annotations: Record<string, string> = { ...meta.annotations };
  const spec = structuredClone(t?.spec ?? { containers: [] });
  if (index !== undefined) {
    annotations[COMPLETION_INDEX_ANNOTATION] = String(index);
    labels[COMPLETION_INDEX_LABEL] = String(index);
    if (job.spec?.backoffLimitPerIndex !== undefined)
      annotations[INDEX_FAILURE_COUNT_ANNOTATION] = String(indexFailures);
    spec.hostname = `${name}-${index}`;
    spec.containers = spec.containers.map(withIndexEnv);
    if (spec.initContainers) spec.initContainers = spec.initContainers.map(withIndexEnv);
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: index === undefined ? `${name}-` : `${name}-${index}-`,
      namespace: job.metadata?.namespace,
      labels,
      annotations: Object.keys(annotations).length > 0 ? annotations : undefined,
      finalizers: [...(meta.finalizers ?? []), JOB_TRACKING_FINALIZER],
      ownerReferences: [ownerRefFor(job, 'Job', 'batch/v1')],
    },
    spec,
  };
}

function withIndexEnv(c: Container): Container {
  if (c.env?.some((e) => e.name === COMPLETION_INDEX_ENV)) return c;
  return {
    ...c,
    env: [
      ...(c.env ?? []),
      {
        name: COMPLETION_INDEX_ENV,
        valueFrom: { fieldRef: { fieldPath: `metadata.annotations['${COMPLETION_INDEX_ANNOTATION}']` } },
      },
    ],
  };
}
