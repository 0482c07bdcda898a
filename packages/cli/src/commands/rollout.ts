// kubit rollout status|history|undo|restart|pause|resume for Deployments
// (and status|history|undo|restart for DaemonSets), with kubectl's messages.

import { labelSelectorAsSelector, StatusError } from '@kubit/api';
import type { APIResourceInfo, KubeClient, KubeObject } from '@kubit/client';
import { resources } from '@kubit/client';
import { CliError, PerTargetErrors } from '../errors.js';
import { type Factory, parseDurationMs } from '../factory.js';
import { objectName, parseOutput, printObjects } from '../printers/output.js';
import {
  type DaemonSetShape,
  daemonSetRolloutStatus,
  ownedRevisions,
  planDaemonSetUndo,
  type RevisionShape,
  revisionHistory,
  revisionTemplate,
} from '../rollout/daemonset.js';
import {
  type DeploymentShape,
  history,
  historyTable,
  ownedReplicaSets,
  planUndo,
  RESTARTED_AT,
  type ReplicaSetShape,
  rolloutStatus,
  withoutHash,
} from '../rollout/deployment.js';
import { describeTemplate } from '../rollout/template.js';
import { deadlineSignal, followObject } from './follow.js';
import { resolveTargets } from './targets.js';

export const ROLLOUT_SUBCOMMANDS = ['status', 'history', 'undo', 'restart', 'pause', 'resume'] as const;
export type RolloutSubcommand = (typeof ROLLOUT_SUBCOMMANDS)[number];

interface RolloutOptions {
  filename?: string[];
  recursive?: boolean;
  selector?: string;
  watch?: boolean;
  timeout?: string;
  revision?: number;
  toRevision?: number;
  output?: string;
}

interface Item {
  r: APIResourceInfo;
  namespace: string | undefined;
  name: string;
}

const isDaemonSet = (r: APIResourceInfo) => r.group === 'apps' && r.kind === 'DaemonSet';
/** What kubectl does for DaemonSets too (they cannot be paused). */
const DAEMONSET_SUBCOMMANDS: readonly RolloutSubcommand[] = ['status', 'history', 'undo', 'restart'];

/** The objects named on the command line: Deployments, and DaemonSets for what they support. */
async function items(f: Factory, sub: RolloutSubcommand, args: string[], o: RolloutOptions): Promise<Item[]> {
  const client = await f.client();
  const targets = await resolveTargets(f, args, o);
  const out: Item[] = [];
  for (const t of targets) {
    if (isDaemonSet(t.r) && (sub === 'pause' || sub === 'resume')) {
      throw new CliError(
        `${t.r.resource}.${t.r.group} ${sub === 'pause' ? 'pausing' : 'resuming'} is not supported`,
      );
    }
    const supported =
      (t.r.group === 'apps' && t.r.kind === 'Deployment') ||
      (isDaemonSet(t.r) && DAEMONSET_SUBCOMMANDS.includes(sub));
    if (!supported) {
      const what = sub === 'status' ? 'status viewer' : sub === 'history' ? 'history viewer' : sub;
      throw new CliError(
        `no ${what} has been implemented for ${t.r.kind}${t.r.group ? `.${t.r.group}` : ''}`,
      );
    }
    let names = t.names;
    if (names.length === 0) {
      if (!o.selector) throw new CliError('required resource not specified');
      const list = await client.listAll(t.r, { namespace: t.namespace, labelSelector: o.selector });
      names = list.items.map((i) => i.metadata?.name ?? '');
    }
    for (const name of names) out.push({ r: t.r, namespace: t.namespace, name });
  }
  if (out.length === 0) throw new CliError('no resources found');
  return out;
}

export async function rollout(
  f: Factory,
  sub: RolloutSubcommand,
  args: string[],
  o: RolloutOptions,
): Promise<void> {
  const list = await items(f, sub, args, o);
  const client = await f.client();
  const errors = new PerTargetErrors(f.io.err);
  await errors.each(list, async (it) => {
    if (isDaemonSet(it.r) && sub !== 'restart') {
      if (sub === 'status') await daemonSetStatus(f, client, it, o);
      else if (sub === 'history') await daemonSetHistory(f, client, it, o);
      else if (sub === 'undo') await daemonSetUndo(f, client, it, o.toRevision ?? 0);
      return;
    }
    switch (sub) {
      case 'status':
        await status(f, client, it, o);
        break;
      case 'history':
        await showHistory(f, client, it, o);
        break;
      case 'undo':
        await undo(f, client, it, o.toRevision ?? 0);
        break;
      case 'restart':
      case 'pause':
      case 'resume':
        await setField(f, client, it, sub);
        break;
    }
  });
  errors.finish();
}

/**
 * Prints each new state of a rollout until it completes (or once, with --watch=false):
 * `statusOf` says what a Deployment's or a DaemonSet's status means.
 */
async function followRollout<T extends KubeObject>(
  f: Factory,
  client: KubeClient,
  it: Item,
  o: RolloutOptions,
  resource: string,
  statusOf: (obj: T) => { message: string; done: boolean },
): Promise<void> {
  let last = '';
  let done = false;
  const see = (obj: T | undefined): boolean => {
    if (!obj) throw new CliError(`${resource} "${it.name}" not found`);
    const s = statusOf(obj);
    if (s.message !== last) f.io.out.write(`${s.message}\n`);
    last = s.message;
    done = s.done;
    return s.done || o.watch === false;
  };
  // Read once first, so a missing object is the server's NotFound.
  const first = await client.get<T>(it.r, it.name, { namespace: it.namespace });
  if (o.watch === false) {
    see(first);
    return;
  }
  const deadline = deadlineSignal(parseDurationMs(o.timeout ?? '0s'), f.io.signal);
  try {
    await followObject<T>(client, it.r, it.namespace, it.name, see, deadline.signal);
  } finally {
    deadline.dispose();
  }
  if (!done && deadline.timedOut()) throw new CliError('timed out waiting for the condition');
}

function status(f: Factory, client: KubeClient, it: Item, o: RolloutOptions): Promise<void> {
  const want = o.revision ?? 0;
  return followRollout<DeploymentShape>(f, client, it, o, 'deployments.apps', (d) => rolloutStatus(d, want));
}

async function ownedBy(client: KubeClient, d: DeploymentShape): Promise<ReplicaSetShape[]> {
  const labelSelector = labelSelectorAsSelector(d.spec?.selector).toString();
  const list = await client.listAll<ReplicaSetShape>(resources.replicasets, {
    namespace: d.metadata?.namespace,
    labelSelector: labelSelector || undefined,
  });
  return ownedReplicaSets(d, list.items);
}

async function showHistory(f: Factory, client: KubeClient, it: Item, o: RolloutOptions): Promise<void> {
  const d = await client.get<DeploymentShape>(it.r, it.name, { namespace: it.namespace });
  const entries = history(await ownedBy(client, d));
  const label = objectName(it.r, d);
  const rev = o.revision ?? 0;
  if (rev > 0) {
    const e = entries.find((x) => x.revision === rev);
    if (!e) throw new CliError(`unable to find the specified revision`);
    const template = withoutHash(e.rs.spec?.template);
    if (o.output) {
      const obj = { apiVersion: 'v1', kind: 'PodTemplate', metadata: {}, template };
      f.io.out.write(printObjects(parseOutput(o.output), [{ r: it.r, obj }], true));
      return;
    }
    f.io.out.write(`${label} with revision #${rev}\n${describeTemplate(template)}\n`);
    return;
  }
  if (o.output) {
    const objs = entries.map((e) => ({ r: it.r, obj: e.rs }));
    f.io.out.write(printObjects(parseOutput(o.output), objs, false));
    return;
  }
  f.io.out.write(`${label} \n${historyTable(entries)}\n`);
}

/** Writes the chosen revision's template back, guarded by the Deployment's resourceVersion. */
async function undo(f: Factory, client: KubeClient, it: Item, toRevision: number): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const d = await client.get<DeploymentShape>(it.r, it.name, { namespace: it.namespace });
    const plan = planUndo(d, await ownedBy(client, d), toRevision);
    const label = objectName(it.r, d);
    if (plan.kind === 'skip') {
      f.io.out.write(
        `${label} skipped rollback (current template already matches revision ${plan.revision})\n`,
      );
      return;
    }
    const next: DeploymentShape = {
      ...d,
      metadata: { ...d.metadata, annotations: plan.annotations },
      spec: { ...d.spec, template: plan.template },
    };
    try {
      await client.update(it.r, next, { namespace: it.namespace });
      f.io.out.write(`${label} rolled back\n`);
      return;
    } catch (e) {
      // The controller writes the Deployment too (its revision annotation): read again and retry.
      if (!(e instanceof StatusError && e.code === 409) || attempt >= 4) throw e;
    }
  }
}

/** Prints each new state of a DaemonSet's rollout until it completes (or once, with --watch=false). */
function daemonSetStatus(f: Factory, client: KubeClient, it: Item, o: RolloutOptions): Promise<void> {
  return followRollout<DaemonSetShape>(f, client, it, o, 'daemonsets.apps', daemonSetRolloutStatus);
}

/** The ControllerRevisions the DaemonSet controls (found by its selector, as kubectl does). */
async function revisionsOf(client: KubeClient, ds: DaemonSetShape): Promise<RevisionShape[]> {
  const labelSelector = labelSelectorAsSelector(ds.spec?.selector).toString();
  const list = await client.listAll<RevisionShape>(resources.controllerrevisions, {
    namespace: ds.metadata?.namespace,
    labelSelector: labelSelector || undefined,
  });
  return ownedRevisions(ds, list.items);
}

async function daemonSetHistory(f: Factory, client: KubeClient, it: Item, o: RolloutOptions): Promise<void> {
  const ds = await client.get<DaemonSetShape>(it.r, it.name, { namespace: it.namespace });
  const owned = await revisionsOf(client, ds);
  const label = objectName(it.r, ds);
  const rev = o.revision ?? 0;
  if (rev > 0) {
    const cr = owned.find((x) => x.revision === rev);
    if (!cr) throw new CliError(`unable to find the specified revision`);
    const template = revisionTemplate(cr);
    if (o.output) {
      const obj = { apiVersion: 'v1', kind: 'PodTemplate', metadata: {}, template };
      f.io.out.write(printObjects(parseOutput(o.output), [{ r: it.r, obj }], true));
      return;
    }
    f.io.out.write(`${label} with revision #${rev}\n${describeTemplate(template)}\n`);
    return;
  }
  if (o.output) {
    f.io.out.write(
      printObjects(
        parseOutput(o.output),
        owned.map((obj) => ({ r: it.r, obj })),
        false,
      ),
    );
    return;
  }
  f.io.out.write(`${label} \n${historyTable(revisionHistory(owned))}\n`);
}

/** Applies the chosen revision's patch (which replaces the template), as kubectl does. */
async function daemonSetUndo(f: Factory, client: KubeClient, it: Item, toRevision: number): Promise<void> {
  const ds = await client.get<DaemonSetShape>(it.r, it.name, { namespace: it.namespace });
  const plan = planDaemonSetUndo(ds, await revisionsOf(client, ds), toRevision);
  const label = objectName(it.r, ds);
  if (plan.kind === 'skip') {
    f.io.out.write(
      `${label} skipped rollback (current template already matches revision ${plan.revision})\n`,
    );
    return;
  }
  await client.patch(it.r, it.name, plan.patch, { namespace: it.namespace, type: 'strategic' });
  f.io.out.write(`${label} rolled back\n`);
}

/** restart, pause and resume: one merge patch each, refused when it would change nothing. */
async function setField(
  f: Factory,
  client: KubeClient,
  it: Item,
  sub: 'restart' | 'pause' | 'resume',
): Promise<void> {
  const d = await client.get<DeploymentShape>(it.r, it.name, { namespace: it.namespace });
  const paused = d.spec?.paused === true;
  const refuse = (why: string) => new CliError(`${it.r.resource}.${it.r.group} "${it.name}" ${why}`);
  let patch: Record<string, unknown>;
  let done: string;
  switch (sub) {
    case 'pause':
      if (paused) throw refuse('is already paused');
      patch = { spec: { paused: true } };
      done = 'paused';
      break;
    case 'resume':
      if (!paused) throw refuse('is not paused');
      patch = { spec: { paused: null } };
      done = 'resumed';
      break;
    case 'restart':
      if (paused) throw refuse("can't restart paused deployment (run rollout resume first)");
      patch = {
        spec: { template: { metadata: { annotations: { [RESTARTED_AT]: rfc3339Local(new Date()) } } } },
      };
      done = 'restarted';
      break;
  }
  const updated = await client.patch<DeploymentShape>(it.r, it.name, patch, {
    namespace: it.namespace,
    type: 'merge',
  });
  f.io.out.write(`${objectName(it.r, updated)} ${done}\n`);
}

/** RFC 3339 in local time with its offset, as Go's time.Now().Format(time.RFC3339) gives it. */
export function rfc3339Local(d: Date): string {
  const p = (n: number) => String(Math.abs(n)).padStart(2, '0');
  const off = -d.getTimezoneOffset();
  const zone = off === 0 ? 'Z' : `${off > 0 ? '+' : '-'}${p(Math.trunc(off / 60))}:${p(off % 60)}`;
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}${zone}`;
}
