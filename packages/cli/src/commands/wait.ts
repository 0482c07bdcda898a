// kubit wait --for=condition=Ready|delete|create|jsonpath={...}=value, and the
// readiness wait behind `apply --wait`. Progress goes to stderr: a live,
// rewritten line on a terminal, one plain line per change otherwise.

import { isNotFound } from '@kubit/api';
import type { APIResourceInfo, KubeClient, KubeObject } from '@kubit/client';
import { sleep } from '@kubit/client';
import { CliError } from '../errors.js';
import { type Factory, parseDurationMs } from '../factory.js';
import type { IO } from '../io.js';
import { renderJsonPath } from '../printers/jsonpath.js';
import { objectName } from '../printers/output.js';
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

/** Readiness for apply --wait: Ready condition when the kind has one, replicas for workloads, else existence. */
export function isReady(obj: KubeObject): boolean {
  const conds = conditions(obj);
  const ready = conds.find((x) => x.type === 'Ready');
  if (ready) return ready.status === 'True';
  const o = obj as {
    spec?: { replicas?: number };
    status?: { readyReplicas?: number; availableReplicas?: number };
  };
  if (obj.kind === 'Deployment' || obj.kind === 'ReplicaSet') {
    return (o.status?.readyReplicas ?? 0) >= (o.spec?.replicas ?? 1);
  }
  if (obj.kind === 'Pod') return false;
  return true;
}

/** One short line about where an object stands, for progress output. */
export function progressText(obj: KubeObject | undefined): string {
  if (!obj) return 'not found';
  const o = obj as {
    status?: {
      phase?: string;
      containerStatuses?: { ready?: boolean; state?: { waiting?: { reason?: string } } }[];
    };
    metadata?: { deletionTimestamp?: string };
  };
  const parts: string[] = [];
  if (obj.metadata?.deletionTimestamp) parts.push('Terminating');
  if (o.status?.phase) parts.push(o.status.phase);
  const cs = o.status?.containerStatuses ?? [];
  if (cs.length > 0) {
    parts.push(`${cs.filter((c) => c.ready).length}/${cs.length} ready`);
    const waiting = cs.map((c) => c.state?.waiting?.reason).find(Boolean);
    if (waiting) parts.push(waiting);
  }
  const ready = conditions(obj).find((c) => c.type === 'Ready');
  if (ready && cs.length === 0) parts.push(`Ready=${ready.status}`);
  return parts.join(', ') || 'present';
}

class Progress {
  private last = new Map<string, string>();
  private live = false;
  constructor(private readonly io: IO) {}

  show(name: string, text: string): void {
    if (this.last.get(name) === text) return;
    this.last.set(name, text);
    if (this.io.isTTY) {
      this.io.err.write(`\r\u001b[Kwaiting for ${name}: ${text}`);
      this.live = true;
    } else {
      this.io.err.write(`waiting for ${name}: ${text}\n`);
    }
  }

  clear(): void {
    if (this.live) this.io.err.write('\r\u001b[K');
    this.live = false;
  }
}

export interface WaitItem {
  r: APIResourceInfo;
  namespace: string | undefined;
  name: string;
}

/** Polls until the condition holds for the item; false on timeout. */
async function waitOne(
  client: KubeClient,
  it: WaitItem,
  c: WaitCondition,
  deadline: number,
  progress: Progress,
  signal?: AbortSignal,
): Promise<boolean> {
  const label = objectName(it.r, { metadata: { name: it.name } });
  for (;;) {
    let obj: KubeObject | undefined;
    try {
      obj = await getIfExists(client, it.r, it.namespace, it.name);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    if (conditionMet(c, obj)) return true;
    progress.show(label, progressText(obj));
    const left = deadline - Date.now();
    if (left <= 0) return false;
    try {
      await sleep(Math.min(left, 250), signal);
    } catch {
      return false;
    }
  }
}

function resourceLabel(it: WaitItem): string {
  return `${it.r.group ? `${it.r.resource}.${it.r.group}` : it.r.resource}/${it.name}`;
}

/** Waits for every item to be ready (apply --wait). */
export async function waitForAll(f: Factory, items: WaitItem[], timeoutMs: number): Promise<void> {
  const client = await f.client();
  const progress = new Progress(f.io);
  const deadline = Date.now() + timeoutMs;
  for (const it of items) {
    const ok = await waitOne(client, it, { t: 'ready' }, deadline, progress, f.io.signal);
    progress.clear();
    if (!ok) throw new CliError(`timed out waiting for the condition on ${resourceLabel(it)}`);
    f.io.out.write(`${objectName(it.r, { metadata: { name: it.name } })} ready\n`);
  }
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
  const progress = new Progress(f.io);
  const deadline = Date.now() + timeoutMs;
  for (const it of items) {
    if (cond.t !== 'delete' && cond.t !== 'create') {
      // A missing object is an error at once (kubectl does the same), unless we wait for its creation.
      const exists = await getIfExists(client, it.r, it.namespace, it.name);
      if (!exists) {
        const { notFound } = await import('@kubit/api');
        throw notFound({ group: it.r.group, resource: it.r.resource }, it.name);
      }
    }
    const ok = await waitOne(client, it, cond, deadline, progress, f.io.signal);
    progress.clear();
    if (!ok) throw new CliError(`timed out waiting for the condition on ${resourceLabel(it)}`);
    f.io.out.write(`${objectName(it.r, { metadata: { name: it.name } })} condition met\n`);
  }
}
