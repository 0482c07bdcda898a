// A profile's plugins in extension-point order, and the loops that run them.
import type { NodeInfo } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';
import type {
  ClusterEventRegistration,
  CycleState,
  FilterPlugin,
  Handle,
  Plugin,
  PreBindPlugin,
  PreFilterPlugin,
  PreScorePlugin,
  ScorePlugin,
  Status,
} from './types.js';

export interface PluginStatus {
  status: Status;
  plugin: string;
}

export interface WeightedScorePlugin {
  plugin: ScorePlugin;
  weight: number;
}

export interface FrameworkPlugins {
  preFilter: PreFilterPlugin[];
  filter: FilterPlugin[];
  preScore: PreScorePlugin[];
  score: WeightedScorePlugin[];
  preBind?: PreBindPlugin[];
}

export class Framework {
  readonly preFilter: readonly PreFilterPlugin[];
  readonly filter: readonly FilterPlugin[];
  readonly preScore: readonly PreScorePlugin[];
  readonly score: readonly WeightedScorePlugin[];
  readonly preBind: readonly PreBindPlugin[];

  constructor(
    readonly schedulerName: string,
    plugins: FrameworkPlugins,
    /** 0 means adaptive, as in Kubernetes. */
    readonly percentageOfNodesToScore = 0,
  ) {
    this.preFilter = plugins.preFilter;
    this.filter = plugins.filter;
    this.preScore = plugins.preScore;
    this.score = plugins.score;
    this.preBind = plugins.preBind ?? [];
  }

  /** Every distinct plugin, with the events it asked to be woken for. */
  eventRegistrations(): Map<string, readonly ClusterEventRegistration[]> {
    const all = new Map<string, Plugin>();
    for (const p of [
      ...this.preFilter,
      ...this.filter,
      ...this.preScore,
      ...this.score.map((s) => s.plugin),
      ...this.preBind,
    ]) {
      all.set(p.name, p);
    }
    const out = new Map<string, readonly ClusterEventRegistration[]>();
    for (const [name, p] of all) out.set(name, p.events?.() ?? []);
    return out;
  }

  runPreFilter(state: CycleState, pod: PodInfo, h: Handle): PluginStatus | null {
    for (const p of this.preFilter) {
      const s = p.preFilter(state, pod, h);
      if (s === null) continue;
      if (s.code === 'Skip') {
        state.skipFilter.add(p.name);
        continue;
      }
      return { status: s, plugin: p.name };
    }
    return null;
  }

  /** Every PreFilter extension that ran this cycle, told that `victim` leaves `node`. */
  runRemovePod(state: CycleState, pod: PodInfo, victim: PodInfo, node: NodeInfo, h: Handle): void {
    for (const p of this.preFilter) {
      if (p.removePod && !state.skipFilter.has(p.name)) p.removePod(state, pod, victim, node, h);
    }
  }

  /** Runs the filters in order and stops at the first that rejects the node. */
  runFilter(state: CycleState, pod: PodInfo, node: NodeInfo, h: Handle): PluginStatus | null {
    const i = this.runFilterIndexed(state, pod, node, h);
    return i < 0 ? null : { status: this.lastFilterStatus!, plugin: this.filter[i].name };
  }

  /** The status of the last rejection seen by runFilterIndexed. */
  lastFilterStatus: Status | null = null;

  /**
   * The allocation-free form of runFilter for the hot loop: returns the index of
   * the rejecting plugin (its status in lastFilterStatus), or -1 when the node passes.
   */
  runFilterIndexed(state: CycleState, pod: PodInfo, node: NodeInfo, h: Handle): number {
    const active = state.activeFilters ?? this.activeFilters(state);
    const plugins = this.filter;
    for (let k = 0; k < active.length; k++) {
      const i = active[k];
      const s = plugins[i].filter(state, pod, node, h);
      if (s !== null) {
        this.lastFilterStatus = s;
        return i;
      }
    }
    return -1;
  }

  /** The indexes of the filters left after PreFilter's Skips, computed once per cycle. */
  activeFilters(state: CycleState): number[] {
    let active = state.activeFilters;
    if (active === null) {
      active = [];
      for (let i = 0; i < this.filter.length; i++)
        if (!state.skipFilter.has(this.filter[i].name)) active.push(i);
      state.activeFilters = active;
    }
    return active;
  }

  /**
   * Runs the PreBind plugins in order; the first failure wins. Synchronous (no
   * promise at all) when no plugin had anything to wait for.
   */
  runPreBind(
    state: CycleState,
    pod: PodInfo,
    nodeName: string,
    h: Handle,
  ): PluginStatus | null | Promise<PluginStatus | null> {
    for (let i = 0; i < this.preBind.length; i++) {
      const p = this.preBind[i];
      const s = p.preBind(state, pod, nodeName, h);
      if (s instanceof Promise) return this.finishPreBind(s, p.name, i + 1, state, pod, nodeName, h);
      if (s !== null) return { status: s, plugin: p.name };
    }
    return null;
  }

  private async finishPreBind(
    first: Promise<Status | null>,
    name: string,
    next: number,
    state: CycleState,
    pod: PodInfo,
    nodeName: string,
    h: Handle,
  ): Promise<PluginStatus | null> {
    const s = await first;
    if (s !== null) return { status: s, plugin: name };
    for (let i = next; i < this.preBind.length; i++) {
      const p = this.preBind[i];
      const r = await p.preBind(state, pod, nodeName, h);
      if (r !== null) return { status: r, plugin: p.name };
    }
    return null;
  }

  runPreScore(state: CycleState, pod: PodInfo, nodes: readonly NodeInfo[], h: Handle): PluginStatus | null {
    for (const p of this.preScore) {
      const s = p.preScore(state, pod, nodes, h);
      if (s === null) continue;
      if (s.code === 'Skip') {
        state.skipScore.add(p.name);
        continue;
      }
      return { status: s, plugin: p.name };
    }
    return null;
  }

  /** Score buffers reused from cycle to cycle (grown as needed): allocating them per pod feeds the GC. */
  private totals = new Float64Array(0);
  private scratch = new Float64Array(0);

  /**
   * Weighted sum of normalized scores per node, in the order of `nodes`. The result
   * is only valid until the next call (its buffer is reused): read it at once.
   */
  runScore(state: CycleState, pod: PodInfo, nodes: readonly NodeInfo[], h: Handle): Float64Array {
    const n = nodes.length;
    if (this.totals.length < n) {
      this.totals = new Float64Array(Math.max(n, this.totals.length * 2));
      this.scratch = new Float64Array(this.totals.length);
    }
    const totals = this.totals.subarray(0, n);
    const scratch = this.scratch.subarray(0, n);
    totals.fill(0);
    for (const { plugin, weight } of this.score) {
      if (state.skipScore.has(plugin.name)) continue;
      for (let i = 0; i < n; i++) scratch[i] = plugin.score(state, pod, nodes[i], h);
      plugin.normalizeScore?.(state, pod, scratch);
      for (let i = 0; i < n; i++) totals[i] += scratch[i] * weight;
    }
    return totals;
  }
}
