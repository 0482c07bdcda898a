// The scheduler's picture of the cluster: nodes, the pods bound to them, and pods
// it has "assumed" onto a node before the binding comes back through the watch.
//
// Why a snapshot is cheap here: Kubernetes clones changed NodeInfos into a
// snapshot because its informers run on other threads while a cycle runs. In
// Node.js a scheduling cycle (filter + score) is synchronous, so nothing can change
// the cache in the middle of one; the snapshot hands out the live NodeInfos and
// only rebuilds its node lists when nodes come or go or affinity pods move.
// A snapshot must therefore not be kept across an `await`.
import { NodeInfo } from './node-info.js';
import { hasAffinityTerms, newPodInfo, type PodInfo, podKey } from './pod-info.js';
import { TermIndex } from './term-index.js';
import type { Node, Pod } from './types.js';

interface PodState {
  info: PodInfo;
  nodeName: string;
  assumed: boolean;
  bindingFinished: boolean;
  /** When an assumed pod whose binding finished is dropped if the watch has not confirmed it. */
  deadline: number;
}

export interface Snapshot {
  /** Nodes that exist (have a Node object), in a stable order. */
  readonly nodes: readonly NodeInfo[];
  get(name: string): NodeInfo | undefined;
  /** Existing pods' affinity terms, by distinct term. */
  readonly existingTerms: TermIndex;
}

export interface CacheOptions {
  /** How long an assumed pod whose binding succeeded waits for the watch to confirm it. */
  assumedPodTtlMs?: number;
  now?: () => number;
}

export class SchedulerCache implements Snapshot {
  private readonly nodeInfos = new Map<string, NodeInfo>();
  private readonly podStates = new Map<string, PodState>();
  private readonly ttlMs: number;
  private readonly now: () => number;
  private nodeList: NodeInfo[] = [];
  private nodeListDirty = true;
  readonly existingTerms = new TermIndex();

  constructor(opts: CacheOptions = {}) {
    this.ttlMs = opts.assumedPodTtlMs ?? 30_000;
    this.now = opts.now ?? Date.now;
  }

  // ---- nodes ----

  addOrUpdateNode(node: Node): NodeInfo {
    const name = node.metadata?.name ?? '';
    let ni = this.nodeInfos.get(name);
    if (!ni) {
      ni = new NodeInfo(name);
      this.nodeInfos.set(name, ni);
    }
    if (ni.node === null) this.nodeListDirty = true;
    ni.setNode(node);
    return ni;
  }

  removeNode(name: string): void {
    const ni = this.nodeInfos.get(name);
    if (!ni) return;
    // Pods still on a deleted node keep a node-less entry until they are deleted,
    // as Kubernetes does, so their removal later balances the books.
    if (ni.pods.size === 0) this.nodeInfos.delete(name);
    else ni.node = null;
    this.nodeListDirty = true;
  }

  // ---- pods ----

  /** A pod seen bound (spec.nodeName set) through the watch. Confirms an assumption. */
  addPod(pod: Pod): void {
    // If the pod was assumed, the watch confirms it: the server's object replaces
    // ours (on the node the server says, should it differ) and the TTL no longer applies.
    this.placePod(newPodInfo(pod), pod.spec?.nodeName ?? '');
  }

  updatePod(pod: Pod): void {
    this.addPod(pod);
  }

  removePod(pod: Pod): void {
    this.removeKey(podKey(pod));
  }

  /** Places a pod on a node in the cache before its binding is confirmed. */
  assumePod(info: PodInfo, nodeName: string): void {
    if (this.podStates.has(info.key)) throw new Error(`pod ${info.key} is already in the scheduler cache`);
    this.placePod(info, nodeName);
    const st = this.podStates.get(info.key)!;
    st.assumed = true;
  }

  /** The binding call returned; start the clock for the watch to confirm it. */
  finishBinding(key: string): void {
    const st = this.podStates.get(key);
    if (!st?.assumed) return;
    st.bindingFinished = true;
    st.deadline = this.now() + this.ttlMs;
  }

  /** The binding failed: undo the assumption. */
  forgetPod(key: string): void {
    const st = this.podStates.get(key);
    if (st?.assumed) this.removeKey(key);
  }

  isAssumed(key: string): boolean {
    return this.podStates.get(key)?.assumed === true;
  }

  /** Drops assumed pods whose binding finished but never showed up in the watch. Returns their keys. */
  cleanupExpiredAssumedPods(): string[] {
    const now = this.now();
    const expired: string[] = [];
    for (const [key, st] of this.podStates) {
      if (st.assumed && st.bindingFinished && st.deadline <= now) expired.push(key);
    }
    for (const key of expired) this.removeKey(key);
    return expired;
  }

  podCount(): number {
    return this.podStates.size;
  }

  nodeOf(key: string): string | undefined {
    return this.podStates.get(key)?.nodeName;
  }

  private placePod(info: PodInfo, nodeName: string): void {
    const old = this.podStates.get(info.key);
    if (old) this.removeKey(info.key);
    let ni = this.nodeInfos.get(nodeName);
    if (!ni) {
      ni = new NodeInfo(nodeName);
      this.nodeInfos.set(nodeName, ni);
    }
    ni.addPod(info);
    if (hasAffinityTerms(info)) this.existingTerms.add(info, ni);
    this.podStates.set(info.key, { info, nodeName, assumed: false, bindingFinished: false, deadline: 0 });
  }

  private removeKey(key: string): void {
    const st = this.podStates.get(key);
    if (!st) return;
    this.podStates.delete(key);
    const ni = this.nodeInfos.get(st.nodeName);
    if (!ni) return;
    ni.removePod(key);
    if (hasAffinityTerms(st.info)) this.existingTerms.remove(st.info, ni);
    if (ni.node === null && ni.pods.size === 0) this.nodeInfos.delete(st.nodeName);
  }

  // ---- snapshot ----

  /** The view one scheduling cycle uses. Valid until the caller next awaits. */
  snapshot(): Snapshot {
    return this;
  }

  get nodes(): readonly NodeInfo[] {
    if (this.nodeListDirty) {
      this.nodeList = [...this.nodeInfos.values()].filter((n) => n.node !== null);
      this.nodeListDirty = false;
    }
    return this.nodeList;
  }

  get(name: string): NodeInfo | undefined {
    const ni = this.nodeInfos.get(name);
    return ni?.node ? ni : undefined;
  }
}
