import {
  ActionType,
  type FilterPlugin,
  type PreFilterPlugin,
  type Status,
  skip,
  unresolvable,
} from '../framework/types.js';
import type { NodeInfo } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';

export const NodeNameName = 'NodeName';
export const errReasonNodeName = "node(s) didn't match the requested node name";
const rejected = unresolvable(errReasonNodeName);

/** A pod that names its node (spec.nodeName) fits only there. */
export class NodeName implements PreFilterPlugin, FilterPlugin {
  readonly name = NodeNameName;
  events() {
    return [{ resource: 'Node' as const, actions: ActionType.Add }];
  }
  /** A pod that names no node passes everywhere: skip the per-node check. */
  preFilter(_s: unknown, pod: PodInfo): Status | null {
    return pod.pod.spec?.nodeName ? null : skip;
  }
  filter(_s: unknown, pod: PodInfo, node: NodeInfo): Status | null {
    const want = pod.pod.spec?.nodeName;
    return !want || want === node.name ? null : rejected;
  }
}
