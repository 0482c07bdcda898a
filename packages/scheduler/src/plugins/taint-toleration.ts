import {
  ActionType,
  type CycleState,
  type FilterPlugin,
  type Handle,
  type PreFilterPlugin,
  type PreScorePlugin,
  type ScorePlugin,
  type Status,
  skip,
  unresolvable,
} from '../framework/types.js';
import { type NodeInfo, NodeTrait } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';
import { defaultNormalize, tolerates, toleratesAny } from './helpers.js';

export const TaintTolerationName = 'TaintToleration';

/**
 * Filter: a node's NoSchedule/NoExecute taints must all be tolerated.
 * Score: fewer untolerated PreferNoSchedule taints is better.
 */
export class TaintToleration implements PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin {
  readonly name = TaintTolerationName;
  events() {
    return [{ resource: 'Node' as const, actions: ActionType.Add | ActionType.UpdateNodeTaint }];
  }

  /** No node has a NoSchedule or NoExecute taint: every node passes, skip the per-node check. */
  preFilter(_s: CycleState, _p: PodInfo, h: Handle): Status | null {
    return h.snapshot.nodesWithTrait(NodeTrait.HardTaint) === 0 ? skip : null;
  }

  /**
   * No node has a PreferNoSchedule taint: every node would score the same (100 after
   * normalizing), which moves no node ahead of another, so the score is skipped.
   */
  preScore(_s: CycleState, _p: PodInfo, _n: readonly NodeInfo[], h: Handle): Status | null {
    return h.snapshot.nodesWithTrait(NodeTrait.SoftTaint) === 0 ? skip : null;
  }

  filter(_s: CycleState, pod: PodInfo, node: NodeInfo): Status | null {
    for (const taint of node.taints) {
      if (taint.effect !== 'NoSchedule' && taint.effect !== 'NoExecute') continue;
      if (!toleratesAny(pod.tolerations, taint)) {
        return unresolvable(`node(s) had untolerated taint {${taint.key}: ${taint.value ?? ''}}`);
      }
    }
    return null;
  }

  score(_s: CycleState, pod: PodInfo, node: NodeInfo): number {
    let n = 0;
    for (const taint of node.taints) {
      if (taint.effect !== 'PreferNoSchedule') continue;
      let ok = false;
      // Only tolerations that could apply to PreferNoSchedule count (empty effect or that effect).
      for (const t of pod.tolerations) {
        if ((!t.effect || t.effect === 'PreferNoSchedule') && tolerates(t, taint)) {
          ok = true;
          break;
        }
      }
      if (!ok) n++;
    }
    return n;
  }

  normalizeScore(_s: CycleState, _p: PodInfo, scores: Float64Array | number[]): void {
    defaultNormalize(scores, true);
  }
}
