import {
  ActionType,
  type FilterPlugin,
  type Handle,
  type PreFilterPlugin,
  type Status,
  skip,
  unresolvable,
} from '../framework/types.js';
import { type NodeInfo, NodeTrait } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';
import { toleratesAny } from './helpers.js';

export const NodeUnschedulableName = 'NodeUnschedulable';
export const errReasonUnschedulable = 'node(s) were unschedulable';
const rejected = unresolvable(errReasonUnschedulable);
const unschedulableTaint = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };

/** Rejects cordoned nodes (spec.unschedulable) unless the pod tolerates the unschedulable taint. */
export class NodeUnschedulable implements PreFilterPlugin, FilterPlugin {
  readonly name = NodeUnschedulableName;
  events() {
    return [{ resource: 'Node' as const, actions: ActionType.Add | ActionType.UpdateNodeTaint }];
  }
  /** Nothing to check when no node is cordoned, or when the pod tolerates cordons. */
  preFilter(_s: unknown, pod: PodInfo, h: Handle): Status | null {
    if (h.snapshot.nodesWithTrait(NodeTrait.Unschedulable) === 0) return skip;
    return toleratesAny(pod.tolerations, unschedulableTaint) ? skip : null;
  }
  filter(_s: unknown, pod: PodInfo, node: NodeInfo): Status | null {
    if (!node.unschedulable) return null;
    return toleratesAny(pod.tolerations, unschedulableTaint) ? null : rejected;
  }
}
