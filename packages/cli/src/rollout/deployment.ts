// What `rollout` needs to know about a Deployment and its ReplicaSets: how far
// a rollout has come (in kubectl's words), the revision history, and which
// template an undo writes back. Pure functions over the objects.

import type { LabelSelector } from '@kubit/api';
import type { KubeObject } from '@kubit/client';
import { CliError } from '../errors.js';

export const REVISION = 'deployment.kubernetes.io/revision';
export const CHANGE_CAUSE = 'kubernetes.io/change-cause';
export const POD_TEMPLATE_HASH = 'pod-template-hash';
export const RESTARTED_AT = 'kubectl.kubernetes.io/restartedAt';

/** Annotations that describe one ReplicaSet's bookkeeping, not the user's intent: undo leaves them. */
const NOT_COPIED_ON_UNDO = new Set([
  'kubectl.kubernetes.io/last-applied-configuration',
  REVISION,
  'deployment.kubernetes.io/revision-history',
  'deployment.kubernetes.io/desired-replicas',
  'deployment.kubernetes.io/max-replicas',
  'deprecated.deployment.rollback.to',
]);

export interface PodTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> } & Record<
    string,
    unknown
  >;
  spec?: Record<string, unknown>;
}

export interface DeploymentShape extends KubeObject {
  spec?: {
    replicas?: number;
    paused?: boolean;
    selector?: LabelSelector;
    template?: PodTemplate;
  };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    conditions?: { type: string; status: string; reason?: string }[];
  };
}

export interface ReplicaSetShape extends KubeObject {
  spec?: { replicas?: number; template?: PodTemplate };
}

export function revisionOf(o: KubeObject | undefined): number {
  const v = Number(o?.metadata?.annotations?.[REVISION] ?? '');
  return Number.isInteger(v) && v > 0 ? v : 0;
}

export interface RolloutState {
  message: string;
  done: boolean;
  /** The short form for progress lines ("1 of 3 updated replicas are available"). */
  detail: string;
}

/**
 * Where the rollout of `d` stands. Throws when it can no longer finish (its
 * progress deadline passed) or when it is not at the revision asked for.
 */
export function rolloutStatus(d: DeploymentShape, wantRevision = 0): RolloutState {
  const name = d.metadata?.name ?? '';
  if (wantRevision > 0) {
    const running = revisionOf(d);
    if (running !== wantRevision) {
      throw new CliError(
        `desired revision (${wantRevision}) is different from the running revision (${running})`,
      );
    }
  }
  const s = d.status ?? {};
  if ((d.metadata?.generation ?? 0) > (s.observedGeneration ?? 0)) {
    return {
      message: 'Waiting for deployment spec update to be observed...',
      done: false,
      detail: 'spec update not observed yet',
    };
  }
  const progressing = s.conditions?.find((c) => c.type === 'Progressing');
  if (progressing?.reason === 'ProgressDeadlineExceeded') {
    throw new CliError(`deployment "${name}" exceeded its progress deadline`);
  }
  const wanted = d.spec?.replicas ?? 1;
  const updated = s.updatedReplicas ?? 0;
  const total = s.replicas ?? 0;
  const available = s.availableReplicas ?? 0;
  const waiting = (what: string) => ({
    message: `Waiting for deployment "${name}" rollout to finish: ${what}...`,
    done: false,
    detail: what,
  });
  if (updated < wanted) return waiting(`${updated} out of ${wanted} new replicas have been updated`);
  if (total > updated) return waiting(`${total - updated} old replicas are pending termination`);
  if (available < updated) return waiting(`${available} of ${updated} updated replicas are available`);
  return {
    message: `deployment "${name}" successfully rolled out`,
    done: true,
    detail: `${available} of ${wanted} replicas available`,
  };
}

/** The ReplicaSets `d` controls (its uid in a controller ownerReference). */
export function ownedReplicaSets(d: DeploymentShape, all: readonly ReplicaSetShape[]): ReplicaSetShape[] {
  const uid = d.metadata?.uid;
  return all.filter((rs) => rs.metadata?.ownerReferences?.some((o) => o.controller && o.uid === uid));
}

export interface HistoryEntry {
  revision: number;
  changeCause: string;
  rs: ReplicaSetShape;
}

/** One entry per revision, oldest first. */
export function history(owned: readonly ReplicaSetShape[]): HistoryEntry[] {
  return owned
    .map((rs) => ({
      revision: revisionOf(rs),
      changeCause: rs.metadata?.annotations?.[CHANGE_CAUSE] ?? '',
      rs,
    }))
    .filter((e) => e.revision > 0)
    .sort((a, b) => a.revision - b.revision);
}

/** "REVISION  CHANGE-CAUSE" rows, aligned with two spaces as kubectl's tab writer does. */
export function historyTable(entries: readonly Pick<HistoryEntry, 'revision' | 'changeCause'>[]): string {
  const rows = [
    ['REVISION', 'CHANGE-CAUSE'],
    ...entries.map((e) => [String(e.revision), e.changeCause || '<none>']),
  ];
  const width = Math.max(...rows.map((r) => r[0].length)) + 2;
  return rows.map(([a, b]) => `${a.padEnd(width)}${b}\n`).join('');
}

/** The template without the label the controller adds to tell ReplicaSets apart. */
export function withoutHash(t: PodTemplate | undefined): PodTemplate {
  const copy: PodTemplate = structuredClone(t ?? {});
  const labels = copy.metadata?.labels;
  if (labels && POD_TEMPLATE_HASH in labels) {
    delete labels[POD_TEMPLATE_HASH];
  }
  return copy;
}

/** Deep equality of JSON values, insensitive to key order. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

export type UndoPlan =
  | { kind: 'rollback'; revision: number; template: PodTemplate; annotations: Record<string, string> }
  | { kind: 'skip'; revision: number };

/**
 * What `rollout undo` writes: the template of the ReplicaSet at `toRevision`
 * (0: the revision before the newest), and the Deployment's annotations with
 * the ReplicaSet's user annotations (such as the change cause) restored.
 */
export function planUndo(d: DeploymentShape, owned: readonly ReplicaSetShape[], toRevision = 0): UndoPlan {
  const name = d.metadata?.name ?? '';
  if (d.spec?.paused) {
    throw new CliError(
      `you cannot rollback a paused deployment; resume it first with 'kubit rollout resume deployment/${name}' and try again`,
    );
  }
  const entries = history(owned);
  let target: HistoryEntry | undefined;
  if (toRevision > 0) {
    target = entries.find((e) => e.revision === toRevision);
    if (!target) throw new CliError(`unable to find specified revision ${toRevision} in history`);
  } else {
    // The newest revision is the one running (or rolling out); undo goes to the one before it.
    target = entries.length >= 2 ? entries[entries.length - 2] : undefined;
    if (!target) throw new CliError(`no rollout history found for deployment "${name}"`);
  }
  const template = withoutHash(target.rs.spec?.template);
  if (sameJson(template, withoutHash(d.spec?.template))) return { kind: 'skip', revision: target.revision };
  const annotations: Record<string, string> = {};
  for (const [k, v] of Object.entries(d.metadata?.annotations ?? {})) annotations[k] = v;
  for (const [k, v] of Object.entries(target.rs.metadata?.annotations ?? {})) {
    if (!NOT_COPIED_ON_UNDO.has(k)) annotations[k] = v;
  }
  return { kind: 'rollback', revision: target.revision, template, annotations };
}
