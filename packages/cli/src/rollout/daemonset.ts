// What `rollout` needs to know about a DaemonSet and its ControllerRevisions,
// as kubectl does it client-side: how far a rollout has come (kubectl's
// DaemonSetStatusViewer), the revision history, and which revision an undo
// applies (its data is a strategic merge patch that replaces the template).
// Pure functions over the objects.

import type { LabelSelector } from '@kubit/api';
import type { KubeObject } from '@kubit/client';
import { CliError } from '../errors.js';
import { CHANGE_CAUSE, type HistoryEntry, type PodTemplate, sameJson } from './deployment.js';

export interface DaemonSetShape extends KubeObject {
  spec?: {
    selector?: LabelSelector;
    template?: PodTemplate;
    updateStrategy?: { type?: string };
  };
  status?: {
    observedGeneration?: number;
    desiredNumberScheduled?: number;
    updatedNumberScheduled?: number;
    numberAvailable?: number;
  };
}

export interface RevisionShape extends KubeObject {
  revision?: number;
  data?: unknown;
}

/** Where the DaemonSet's rollout stands, in kubectl's words. */
export function daemonSetRolloutStatus(ds: DaemonSetShape): { message: string; done: boolean } {
  if ((ds.spec?.updateStrategy?.type ?? 'RollingUpdate') !== 'RollingUpdate') {
    throw new CliError('rollout status is only available for RollingUpdate strategy type');
  }
  const name = ds.metadata?.name ?? '';
  const s = ds.status ?? {};
  if ((ds.metadata?.generation ?? 0) > (s.observedGeneration ?? 0)) {
    return { message: 'Waiting for daemon set spec update to be observed...', done: false };
  }
  const desired = s.desiredNumberScheduled ?? 0;
  const updated = s.updatedNumberScheduled ?? 0;
  const available = s.numberAvailable ?? 0;
  if (updated < desired) {
    return {
      message: `Waiting for daemon set "${name}" rollout to finish: ${updated} out of ${desired} new pods have been updated...`,
      done: false,
    };
  }
  if (available < desired) {
    return {
      message: `Waiting for daemon set "${name}" rollout to finish: ${available} of ${desired} updated pods are available...`,
      done: false,
    };
  }
  return { message: `daemon set "${name}" successfully rolled out`, done: true };
}

/** The revisions the DaemonSet controls, oldest first. */
export function ownedRevisions(ds: DaemonSetShape, all: readonly RevisionShape[]): RevisionShape[] {
  return all
    .filter((cr) => cr.metadata?.ownerReferences?.some((r) => r.controller && r.uid === ds.metadata?.uid))
    .sort((a, b) => (a.revision ?? 0) - (b.revision ?? 0));
}

/** History rows for historyTable (the change cause is the revision's annotation). */
export function revisionHistory(owned: readonly RevisionShape[]): Omit<HistoryEntry, 'rs'>[] {
  return owned.map((cr) => ({
    revision: cr.revision ?? 0,
    changeCause: cr.metadata?.annotations?.[CHANGE_CAUSE] ?? '',
  }));
}

/** The template a revision puts back (its patch, without the replace directive). */
export function revisionTemplate(cr: RevisionShape): PodTemplate {
  const data = cr.data as { spec?: { template?: Record<string, unknown> } } | undefined;
  const { $patch: _directive, ...template } = structuredClone(data?.spec?.template ?? {});
  return template as PodTemplate;
}

export type DaemonSetUndoPlan =
  | { kind: 'rollback'; revision: number; patch: unknown }
  | { kind: 'skip'; revision: number };

/** Which revision `rollout undo` applies: `toRevision`, or (0) the one before the newest. */
export function planDaemonSetUndo(
  ds: DaemonSetShape,
  owned: readonly RevisionShape[],
  toRevision = 0,
): DaemonSetUndoPlan {
  let target: RevisionShape | undefined;
  if (toRevision > 0) {
    target = owned.find((cr) => cr.revision === toRevision);
    if (!target) throw new CliError(`unable to find specified revision ${toRevision} in history`);
  } else {
    target = owned.length >= 2 ? owned[owned.length - 2] : undefined;
    if (!target) throw new CliError('no last revision to roll back to');
  }
  const revision = target.revision ?? 0;
  if (sameJson(revisionTemplate(target), ds.spec?.template)) return { kind: 'skip', revision };
  return { kind: 'rollback', revision, patch: target.data };
}
