// Why a pod fits nowhere, worded as Kubernetes words it (FitError):
//   "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 2 Insufficient memory."
// Each node contributes its reasons; identical reasons are counted; the "<count> <reason>"
// strings are sorted as plain strings (so "1 …" sorts before "2 …"), joined with ", ".
// A PreFilter rejection applies to every node and is printed once instead.
//
// When preemption cannot help, the scheduler appends its verdict as Kubernetes does
// (" preemption: 0/3 nodes are available: …", preemption/default-preemption.ts).
import type { PluginStatus } from './framework/framework.js';
import type { CycleState } from './framework/types.js';

export const noNodesAvailableMsg = 'no nodes available to schedule pods';

export class FitError extends Error {
  constructor(
    readonly podKey: string,
    readonly numAllNodes: number,
    /** node name → the status of the filter that rejected it. */
    readonly nodeStatuses: ReadonlyMap<string, PluginStatus>,
    /** Set when a PreFilter plugin rejected the pod outright. */
    readonly preFilter: PluginStatus | null,
  ) {
    super(formatFitError(numAllNodes, nodeStatuses, preFilter));
    this.name = 'FitError';
  }

  /** The cycle's state after its filters ran (absent when PreFilter rejected the pod): preemption filters again with it. */
  state: CycleState | null = null;

  /** Plugins that rejected the pod somewhere: the queue wakes it only for their events. */
  unschedulablePlugins(): Set<string> {
    const out = new Set<string>();
    if (this.preFilter) out.add(this.preFilter.plugin);
    for (const s of this.nodeStatuses.values()) out.add(s.plugin);
    return out;
  }
}

export function formatFitError(
  numAllNodes: number,
  nodeStatuses: ReadonlyMap<string, PluginStatus>,
  preFilter: PluginStatus | null,
): string {
  if (numAllNodes === 0) return noNodesAvailableMsg;
  let msg = `0/${numAllNodes} nodes are available:`;
  if (preFilter) {
    msg += ` ${preFilter.status.reasons.join(', ')}.`;
    return msg;
  }
  const histogram = new Map<string, number>();
  for (const s of nodeStatuses.values()) {
    for (const r of s.status.reasons) histogram.set(r, (histogram.get(r) ?? 0) + 1);
  }
  const parts = [...histogram].map(([reason, n]) => `${n} ${reason}`);
  // Go's sort.Strings orders by bytes; JS's default sort orders by UTF-16 units, the same for these strings.
  parts.sort();
  if (parts.length > 0) msg += ` ${parts.join(', ')}.`;
  return msg;
}
