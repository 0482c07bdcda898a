import {
  ActionType,
  type CycleState,
  type FilterPlugin,
  type PreFilterPlugin,
  type Status,
  skip,
  unschedulable,
} from '../framework/types.js';
import type { NodeInfo } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';

export const NodePortsName = 'NodePorts';
export const errReasonNodePorts = "node(s) didn't have free ports for the requested pod ports";
const rejected = unschedulable(errReasonNodePorts);

/** A host port (protocol, port) is taken if any pod uses it on the same IP or on 0.0.0.0. */
export class NodePorts implements PreFilterPlugin, FilterPlugin {
  readonly name = NodePortsName;
  events() {
    return [
      { resource: 'Pod' as const, actions: ActionType.Delete },
      { resource: 'Node' as const, actions: ActionType.Add },
    ];
  }

  preFilter(_s: CycleState, pod: PodInfo): Status | null {
    return pod.hostPorts.length > 0 ? null : skip;
  }

  filter(_s: CycleState, pod: PodInfo, node: NodeInfo): Status | null {
    for (const hp of pod.hostPorts) {
      const ips = node.usedPorts.get(`${hp.protocol}/${hp.port}`);
      if (!ips) continue;
      if (hp.ip === '0.0.0.0' || ips.has('0.0.0.0') || ips.has(hp.ip)) return rejected;
    }
    return null;
  }
}
