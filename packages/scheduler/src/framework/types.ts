// The plugin framework's contracts: extension points, statuses, cycle state and the
// cluster events a plugin says could make a pod it rejected schedulable.
import type { Snapshot } from '../cache.js';
import type { NodeInfo } from '../node-info.js';
import type { NamespaceLabels, PodInfo } from '../pod-info.js';
import type { VolumeAccess } from '../volumes.js';

export type Code = 'Unschedulable' | 'UnschedulableAndUnresolvable' | 'Error' | 'Skip';

/** A non-success result. Success is `null`, so the hot path allocates nothing. */
export interface Status {
  readonly code: Code;
  readonly reasons: readonly string[];
}

export function unschedulable(...reasons: string[]): Status {
  return Object.freeze({ code: 'Unschedulable', reasons: Object.freeze(reasons) });
}

export function unresolvable(...reasons: string[]): Status {
  return Object.freeze({ code: 'UnschedulableAndUnresolvable', reasons: Object.freeze(reasons) });
}

export function errorStatus(message: string): Status {
  return Object.freeze({ code: 'Error', reasons: Object.freeze([message]) });
}

export const skip: Status = Object.freeze({ code: 'Skip', reasons: Object.freeze([]) });

/** Per-cycle scratch space where PreFilter/PreScore leave what Filter/Score read. */
export class CycleState {
  private readonly data = new Map<string, unknown>();
  /** Plugins whose PreFilter said Skip: their Filter is not run this cycle. */
  readonly skipFilter = new Set<string>();
  readonly skipScore = new Set<string>();
  /** Indexes of the filter plugins to run this cycle (set by the framework on first use). */
  activeFilters: number[] | null = null;

  write(key: string, value: unknown): void {
    this.data.set(key, value);
  }

  read<T>(key: string): T | undefined {
    return this.data.get(key) as T | undefined;
  }

  /**
   * A copy to change without touching this one (preemption judges a node without its
   * victims on a copy). Plugins replace what they change rather than mutate it, so
   * the values themselves are shared.
   */
  clone(): CycleState {
    const c = new CycleState();
    for (const [k, v] of this.data) c.data.set(k, v);
    for (const n of this.skipFilter) c.skipFilter.add(n);
    for (const n of this.skipScore) c.skipScore.add(n);
    c.activeFilters = this.activeFilters;
    return c;
  }
}

/** What plugins may read besides the pod and the node. */
export interface Handle {
  snapshot: Snapshot;
  namespaceLabels?: NamespaceLabels;
  /** Claims, volumes, classes and capacities, and the writes volume binding makes (absent: no volumes served). */
  volumes?: VolumeAccess;
}

export interface Plugin {
  readonly name: string;
  /** Cluster events that could make a pod this plugin rejected fit (queueing hints). */
  events?(): readonly ClusterEventRegistration[];
}

export interface PreFilterPlugin extends Plugin {
  preFilter(state: CycleState, pod: PodInfo, h: Handle): Status | null;
  /**
   * Kubernetes' PreFilterExtensions.RemovePod: updates what PreFilter left in `state`
   * as if `victim` were gone from `node` (preemption). Only plugins whose PreFilter
   * state counts other pods need it; they write a new value, never mutate the old.
   */
  removePod?(state: CycleState, pod: PodInfo, victim: PodInfo, node: NodeInfo, h: Handle): void;
}

export interface FilterPlugin extends Plugin {
  filter(state: CycleState, pod: PodInfo, node: NodeInfo, h: Handle): Status | null;
}

export interface PreScorePlugin extends Plugin {
  preScore(state: CycleState, pod: PodInfo, nodes: readonly NodeInfo[], h: Handle): Status | null;
}

export interface ScorePlugin extends Plugin {
  score(state: CycleState, pod: PodInfo, node: NodeInfo, h: Handle): number;
  /** Rewrites raw scores in place to 0..100. */
  normalizeScore?(state: CycleState, pod: PodInfo, scores: Float64Array | number[]): void;
}

/**
 * Runs in the binding cycle, after the node is chosen and before the pod is bound
 * (e.g. provisioning its volumes there). May wait; a non-null status fails the
 * binding and sends the pod back to the queue. Returns synchronously when it has
 * nothing to do, so pods without such needs are bound without an extra turn.
 */
export interface PreBindPlugin extends Plugin {
  preBind(
    state: CycleState,
    pod: PodInfo,
    nodeName: string,
    h: Handle,
  ): Status | null | Promise<Status | null>;
}

export const maxNodeScore = 100;

// ---- cluster events ----

export type EventResource =
  | 'Node'
  | 'Pod'
  | 'PersistentVolumeClaim'
  | 'PersistentVolume'
  | 'StorageClass'
  | 'CSIStorageCapacity';

/** Bit flags, so a registration can name several actions at once. */
export const ActionType = {
  Add: 1,
  Delete: 2,
  UpdateNodeAllocatable: 4,
  UpdateNodeLabel: 8,
  UpdateNodeTaint: 16,
  UpdateNodeCondition: 32,
  UpdatePodLabel: 64,
  UpdatePodOther: 128,
  /** Any update of the resources that are neither Nodes nor Pods (claims, volumes, classes, capacities). */
  Update: 128,
  All: 255,
} as const;

export interface ClusterEvent {
  resource: EventResource;
  action: number;
  /** A label for logs and metrics, e.g. "NodeAdd", "AssignedPodDelete". */
  label: string;
}

export interface ClusterEventRegistration {
  resource: EventResource;
  actions: number;
}

export function eventMatches(ev: ClusterEvent, reg: ClusterEventRegistration): boolean {
  return ev.resource === reg.resource && (ev.action & reg.actions) !== 0;
}
