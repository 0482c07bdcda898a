// kubit wait --for=condition=Ready|delete|create|jsonpath={...}=value, and the
// readiness wait behind `apply --wait`. Progress goes to stderr: on a terminal
// a block redrawn in place (each object, and each pod of a workload with its
// phase, reason and ready count), otherwise one plain line per change.

import { isNotFound } from '@kubit/api';
import type { APIResourceInfo, KubeClient, KubeObject } from '@kubit/client';
import { resources, sleep } from '@kubit/client';
import { CliError } from '../errors.js';
import { type Factory, parseDurationMs } from '../factory.js';
import { renderJsonPath } from '../printers/jsonpath.js';
import { objectName } from '../printers/output.js';
import { LiveProgress } from '../progress.js';
import { type DeploymentShape, rolloutStatus } from '../rollout/deployment.js';
import { getIfExists, listObjects } from './fetch.js';
import { resolveTargets } from './targets.js';

export type WaitCondition =
  | { t: 'condition'; type: string; status: string }
  | { t: 'delete' }
  | { t: 'create' }
  | { t: 'jsonpath'; template: string; value?: string }
  | { t: 'ready' };

export function parseFor(spec: string): WaitCondition {
  if (spec === 'delete') return { t: 'delete' };
  if (spec === 'create') return { t: 'create' };
  if (spec.startsWith('condition=')) {
    const rest = spec.slice('condition='.length);
    const eq = rest.indexOf('=');
    const type = eq < 0 ? rest : rest.slice(0, eq);
    const status = eq < 0 ? 'True' : rest.slice(eq + 1);
    if (!type) throw new CliError(`unrecognized condition: "${spec}"`);
    return { t: 'condition', type, status };
  }
  if (spec.startsWith('jsonpath=')) {
    const rest = spec.slice('jsonpath='.length);
    // {.path}=value: the value follows the closing brace of the template.
    const close = rest.lastIndexOf('}');
    if (rest.startsWith('{') && close > 0) {
      const after = rest.slice(close + 1);
      return {
        t: 'jsonpath',
        template: rest.slice(0, close + 1),
        value: after.startsWith('=') ? after.slice(1) : undefined,
      };
    }
    const eq = rest.indexOf('=');
    const path = eq < 0 ? rest : rest.slice(0, eq);
    return { t: 'jsonpath', template: `{${path}}`, value: eq < 0 ? undefined : rest.slice(eq + 1) };
  }
  throw new CliError(`unrecognized condition: "${spec}"`);
}

interface Condition {
  type?: string;
  status?: string;
  reason?: string;
}

function conditions(obj: KubeObject): Condition[] {
  const status = (obj as { status?: { conditions?: Condition[] } }).status;
  return Array.isArray(status?.conditions) ? status.conditions : [];
}

/** Whether the object satisfies the condition (obj undefined: it does not exist). */
export function conditionMet(c: WaitCondition, obj: KubeObject | undefined): boolean {
  switch (c.t) {
    case 'delete':
      return obj === undefined;
    case 'create':
      return obj !== undefined;
    case 'condition':
      return (
        obj !== undefined &&
        conditions(obj).some(
          (x) =>
            x.type?.toLowerCase() === c.type.toLowerCase() &&
            x.status?.toLowerCase() === c.status.toLowerCase(),
        )
      );
    case 'jsonpath': {
      if (!obj) return false;
      const v = renderJsonPath(c.template, obj);
      return c.value === undefined ? v !== '' : v === c.value;
    }
    case 'ready':
      return obj !== undefined && isReady(obj);
  }
}

interface PodLike extends KubeObject {
  spec?: { containers?: unknown[]; selector?: { matchLabels?: Record<string, string> }; replicas?: number };
  status?: {
    phase?: string;
    reason?: string;
    replicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    observedGeneration?: number;
    conditions?: Condition[];
    containerStatuses?: {
      ready?: boolean;
      state?: { waiting?: { reason?: string }; terminated?: { reason?: string } };
    }[];
  };
}

function isWorkload(obj: KubeObject): boolean {
  return obj.kind === 'Deployment' || obj.kind === 'ReplicaSet';
}

/** Readiness for apply --wait: a finished rollout for workloads, the Ready condition when the kind has one, else existence. */
export function isReady(obj: KubeObject): boolean {
  const o = obj as PodLike;
  if (obj.kind === 'Deployment') {
    try {
      return rolloutStatus(obj as DeploymentShape).done;
    } catch {
      return false;
    }
  }
  if (obj.kind === 'ReplicaSet') {
    const want = o.spec?.replicas ?? 1;
    return (
      (o.status?.observedGeneration ?? 0) >= (obj.metadata?.generation ?? 0) &&
      (o.status?.readyReplicas ?? 0) >= want &&
      (o.status?.availableReplicas ?? 0) >= want
    );
  }
  const ready = conditions(obj).find((x) => x.type === 'Ready');
  if (ready) return ready.status === 'True';
  if (obj.kind === 'Pod') return false;
  return true;
}

/** Why a pod is not running yet: a container's waiting reason, the pod's reason, or Unschedulable. */
function podReason(p: PodLike): string | undefined {
  for (const c of p.status?.containerStatuses ?? []) {
    const r = c.state?.waiting?.reason ?? c.state?.terminated?.reason;
    if (r) return r;
  }
  if (p.status?.reason) return p.status.reason;
  const scheduled = conditions(p).find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False') return scheduled.reason ?? 'Unschedulable';
  return undefined;
}

/** One short line about where an object stands, for progress output. */
export function progressText(obj: KubeObject | undefined): string {
  if (!obj) return 'not found';
  const o = obj as PodLike;
  const parts: string[] = [];
  if (obj.metadata?.deletionTimestamp) parts.push('Terminating');
  if (obj.kind === 'Deployment') {
    try {
      parts.push(rolloutStatus(obj as DeploymentShape).detail);
    } catch (e) {
      parts.push(e instanceof Error ? e.message : String(e));
    }
    return parts.join(', ');
  }
  if (obj.kind === 'ReplicaSet') {
    parts.push(`${o.status?.readyReplicas ?? 0}/${o.spec?.replicas ?? 1} ready`);
    return parts.join(', ');
  }
  if (o.status?.phase) parts.push(o.status.phase);
  const cs = o.status?.containerStatuses ?? [];
  if (cs.length > 0) {
    const total = Math.max(cs.length, o.spec?.containers?.length ?? 0);
    parts.push(`${cs.filter((c) => c.ready).length}/${total} ready`);
  }
  const reason = obj.kind === 'Pod' || o.status?.phase ? podReason(o) : undefined;
  if (reason) parts.push(reason);
  const ready = conditions(obj).find((c) => c.type === 'Ready');
  if (ready && cs.length === 0) parts.push(`Ready=${ready.status}`);
  return parts.join(', ') || 'present';
}

/** Pod lines shown under a workload; more than this many are summarised. */
const MAX_POD_LINES = 12;

/** The progress lines for one item: itself, then (for workloads) each of its pods. */
async function progressLines(
  client: KubeClient,
  it: WaitItem,
  obj: KubeObject | undefined,
): Promise<string[]> {
  const lines = [`waiting for ${itemName(it)}: ${progressText(obj)}`];
  const selector = (obj as PodLike | undefined)?.spec?.selector?.matchLabels;
  if (!obj || !isWorkload(obj) || !selector) return lines;
  const labelSelector = Object.entries(selector)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  let pods: PodLike[] = [];
  try {
    pods = (await client.list<PodLike>(resources.pods, { namespace: it.namespace, labelSelector })).items;
  } catch {
    return lines; // progress is best effort; the wait itself goes on
  }
  pods.sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  for (const p of pods.slice(0, MAX_POD_LINES)) {
    lines.push(`  pod/${p.metadata?.name ?? ''}: ${progressText({ ...p, kind: 'Pod' })}`);
  }
  if (pods.length > MAX_POD_LINES) lines.push(`  ... and ${pods.length - MAX_POD_LINES} more pods`);
  return lines;
}

export interface WaitItem {
  r: APIResourceInfo;
  namespace: string | undefined;
  name: string;
}

function itemName(it: WaitItem): string {
  return objectName(it.r, { metadata: { name: it.name } });
}

function resourceLabel(it: WaitItem): string {
  return `${it.r.group ? `${it.r.resource}.${it.r.group}` : it.r.resource}/${it.name}`;
}

const POLL_MS = 250;

/**
 * Polls every item until each meets the condition (printing `met` for it on
 * stdout as it does), showing live progress for the rest; throws on timeout.
 */
async function waitUntil(
  f: Factory,
  items: readonly WaitItem[],
  cond: WaitCondition,
  timeoutMs: number,
  met: string,
): Promise<void> {
  const client = await f.client();
  const progress = new LiveProgress(f.io);
  const deadline = Date.now() + timeoutMs;
  let pending = [...items];
  try {
    for (;;) {
      const states = await Promise.all(
        pending.map(async (it) => {
          let obj: KubeObject | undefined;
          try {
            obj = await getIfExists(client, it.r, it.namespace, it.name);
          } catch (e) {
            if (!isNotFound(e)) throw e;
          }
          return { it, obj, done: conditionMet(cond, obj) };
        }),
      );
      const doneNow = states.filter((s) => s.done);
      if (doneNow.length > 0) {
        // Result lines go to stdout: take the live block away first so they do not mix.
        progress.clear();
        for (const s of doneNow)
          f.io.out.write(`${itemName(s.it)} ${met}
`);
      }
      pending = states.filter((s) => !s.done).map((s) => s.it);
      if (pending.length === 0) return;
      const lines = (
        await Promise.all(states.filter((s) => !s.done).map((s) => progressLines(client, s.it, s.obj)))
      ).flat();
      progress.update(lines);
      const left = deadline - Date.now();
      if (left <= 0) break;
      try {
        await sleep(Math.min(left, POLL_MS), f.io.signal);
      } catch {
        break;
      }
    }
  } finally {
    progress.clear();
  }
  throw new CliError(`timed out waiting for the condition on ${resourceLabel(pending[0])}`);
}

/** Waits for every item to be ready (apply --wait). */
export async function waitForAll(f: Factory, items: WaitItem[], timeoutMs: number): Promise<void> {
  await waitUntil(f, items, { t: 'ready' }, timeoutMs, 'ready');
}

interface WaitOptions {
  for: string;
  timeout?: string;
  selector?: string;
  all?: boolean;
  allNamespaces?: boolean;
  filename?: string[];
  recursive?: boolean;
}

export async function wait(f: Factory, args: string[], o: WaitOptions): Promise<void> {
  const cond = parseFor(o.for);
  const timeoutMs = parseDurationMs(o.timeout ?? '30s');
  const client = await f.client();
  const targets = await resolveTargets(f, args, o);
  const items: WaitItem[] = [];
  for (const t of targets) {
    if (t.names.length > 0) {
      for (const name of t.names) items.push({ r: t.r, namespace: t.namespace, name });
      continue;
    }
    if (!o.selector && !o.all) throw new CliError('resource name may not be empty');
    const list = await listObjects(client, t.r, t.namespace, { labelSelector: o.selector });
    for (const obj of list.items)
      items.push({ r: t.r, namespace: obj.metadata?.namespace, name: obj.metadata?.name ?? '' });
  }
  if (items.length === 0) throw new CliError('no matching resources found');
  if (cond.t !== 'delete' && cond.t !== 'create') {
    // A missing object is an error at once (kubectl does the same), unless we wait for its creation.
    for (const it of items) {
      const exists = await getIfExists(client, it.r, it.namespace, it.name);
      if (!exists) {
        const { notFound } = await import('@kubit/api');
        throw notFound({ group: it.r.group, resource: it.r.resource }, it.name);
      }
    }
  }
  await waitUntil(f, items, cond, timeoutMs, 'condition met');
}
