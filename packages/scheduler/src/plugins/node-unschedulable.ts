import { ActionType, type FilterPlugin, type Status, unresolvable } from '../framework/types.js';
import type { NodeInfo } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';
import { toleratesAny } from './helpers.js';

export const NodeUnschedulableName = 'NodeUnschedulable';
export const errReasonUnschedulable = 'node(s) were unschedulable';
const rejected = unresolvable(errReasonUnschedulable);
const unschedulableTaint = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };

/** Rejects cordoned nodes (spec.unschedulable) unless the pod tolerates the unschedulable taint. */
export class NodeUnschedulable implements FilterPlugin {
  readonly name = NodeUnschedulableName;
  events() {
    return [{ resource: 'Node' as const, actions: ActionType.Add | ActionType.UpdateNodeTaint }];
  }
  filter(_s: unknown, pod: PodInfo, node: NodeInfo): Status | null {
    if (!node.unschedulable) return null;
    return toleratesAny(pod.tolerations, unschedulableTaint) ? null : rejected;
  }
}
