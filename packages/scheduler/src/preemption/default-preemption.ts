// The PostFilter point, as Kubernetes' DefaultPreemption plugin: when a pod fits
// nowhere, find the nodes where taking lower-priority pods away would make it fit
// (the profile's filters run again on a copy of the node without them), choose the
// victims and the node (victims.ts), and say what to evict. The scheduler then
// evicts them, nominates the node on the pod and schedules it once the room is free.
import type { Snapshot } from '../cache.js';
import type { FitError } from '../fit-error.js';
import { formatFitError } from '../fit-error.js';
import type { Framework, PluginStatus } from '../framework/framework.js';
import { type CycleState, type Handle, unresolvable, unschedulable } from '../framework/types.js';
import { nodeInfoWith } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';
import { type DisruptionBudget, type NodeVictims, pickNode, selectVictimsOnNode } from './victims.js';

export const PLUGIN_NAME = 'DefaultPreemption';

export type PreemptionOutcome =
  | { kind: 'preempt'; candidate: NodeVictims }
  /** Nothing to do; `message` is what Kubernetes appends to the FitError ("preemption: …"). */
  | { kind: 'none'; message: string };

export interface PreemptionContext {
  fwk: Framework;
  snapshot: Snapshot;
  handle: Handle;
  pod: PodInfo;
  fit: FitError;
  /** The failed cycle's state; null when a PreFilter rejected the pod (no node can then help). */
  state: CycleState | null;
  budgets: readonly DisruptionBudget[];
  /** The node this pod was nominated to by an earlier preemption, if any. */
  nominatedNode?: string;
}

const NO_VICTIMS = 'No preemption victims found for incoming pod';
const NOT_HELPFUL = 'Preemption is not helpful for scheduling';

/**
 * Kubernetes' PodEligibleToPreemptOthers: a pod with preemptionPolicy Never does not
 * preempt; one already nominated to a node where lower-priority pods are still
 * terminating waits for them rather than preempting again.
 */
function ineligible(ctx: PreemptionContext): string | undefined {
  if (ctx.pod.pod.spec?.preemptionPolicy === 'Never') return 'not eligible due to preemptionPolicy=Never.';
  if (!ctx.nominatedNode) return undefined;
  const ni = ctx.snapshot.get(ctx.nominatedNode);
  if (!ni) return undefined;
  for (const p of ni.pods.values()) {
    if (p.pod.metadata?.deletionTimestamp && p.priority < ctx.pod.priority)
      return 'not eligible due to a terminating pod on the nominated node.';
  }
  return undefined;
}

export function preempt(ctx: PreemptionContext): PreemptionOutcome {
  const why = ineligible(ctx);
  if (why) return { kind: 'none', message: `preemption: ${why}` };
  const statuses = new Map<string, PluginStatus>();
  const candidates: NodeVictims[] = [];
  const state = ctx.state;
  for (const [name, rejected] of ctx.fit.nodeStatuses) {
    const ni = ctx.snapshot.get(name);
    // A node that no removal can fix (a taint, a selector, a PreFilter's verdict) is not looked at.
    if (!ni || !state || rejected.status.code !== 'Unschedulable') {
      statuses.set(name, { plugin: PLUGIN_NAME, status: unresolvable(NOT_HELPFUL) });
      continue;
    }
    const fits = (keys: ReadonlySet<string>) => {
      // PreFilter's counts (inter-pod affinity) forget the removed pods too.
      const without = state.clone();
      for (const k of keys) {
        const victim = ni.pods.get(k);
        if (victim) ctx.fwk.runRemovePod(without, ctx.pod, victim, ni, ctx.handle);
      }
      return ctx.fwk.runFilterIndexed(without, ctx.pod, nodeInfoWith(ni, keys), ctx.handle) < 0;
    };
    const c = selectVictimsOnNode(name, ctx.pod, [...ni.pods.values()], ctx.budgets, fits);
    if (c) candidates.push(c);
    else statuses.set(name, { plugin: PLUGIN_NAME, status: unschedulable(NO_VICTIMS) });
  }
  const chosen = pickNode(candidates);
  if (chosen) return { kind: 'preempt', candidate: chosen };
  return {
    kind: 'none',
    message: `preemption: ${formatFitError(ctx.fit.numAllNodes, statuses, null)}`,
  };
}
