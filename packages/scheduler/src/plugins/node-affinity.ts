import {
  ActionType,
  type CycleState,
  type FilterPlugin,
  type PreFilterPlugin,
  type PreScorePlugin,
  type ScorePlugin,
  type Status,
  skip,
  unresolvable,
} from '../framework/types.js';
import type { NodeInfo } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';
import { defaultNormalize, nodeSelectorTermMatches, podMatchesNodeSelectorAndAffinity } from './helpers.js';

export const NodeAffinityName = 'NodeAffinity';
export const errReasonNodeAffinity = "node(s) didn't match Pod's node affinity/selector";
const rejected = unresolvable(errReasonNodeAffinity);

/** nodeSelector and required node affinity as a filter; preferred terms' weights as a score. */
export class NodeAffinity implements PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin {
  readonly name = NodeAffinityName;
  events() {
    return [{ resource: 'Node' as const, actions: ActionType.Add | ActionType.UpdateNodeLabel }];
  }

  preFilter(_s: CycleState, pod: PodInfo): Status | null {
    const spec = pod.pod.spec;
    const hasSelector = spec?.nodeSelector !== undefined && Object.keys(spec.nodeSelector).length > 0;
    const hasRequired =
      spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution !== undefined;
    return hasSelector || hasRequired ? null : skip;
  }

  filter(_s: CycleState, pod: PodInfo, node: NodeInfo): Status | null {
    return podMatchesNodeSelectorAndAffinity(pod.pod, node) ? null : rejected;
  }

  preScore(_s: CycleState, pod: PodInfo): Status | null {
    const pref = pod.pod.spec?.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution;
    return pref && pref.length > 0 ? null : skip;
  }

  score(_s: CycleState, pod: PodInfo, node: NodeInfo): number {
    let total = 0;
    for (const p of pod.pod.spec?.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ??
      []) {
      if (p.weight !== 0 && nodeSelectorTermMatches(p.preference, node)) total += p.weight;
    }
    return total;
  }

  normalizeScore(_s: CycleState, _p: PodInfo, scores: Float64Array | number[]): void {
    defaultNormalize(scores, false);
  }
}
