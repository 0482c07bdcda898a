// The scheduler's picture of the cluster: nodes, the pods bound to them, and pods
// it has "assumed" onto a node before the binding comes back through the watch.
//
// Why a snapshot is cheap here: Kubernetes clones changed NodeInfos into a
// snapshot because its informers run on other threads while a cycle runs. In
// Node.js a scheduling cycle (filter + score) is synchronous, so nothing can change
// the cache in the middle of one; the snapshot hands out the live NodeInfos and
// only rebuilds its node lists when nodes come or go or affinity pods move.
// A snapshot must therefore not be kept across an `await`.
import { NodeInfo, NodeTrait } from './node-info.js';
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
  /** How many nodes (with a Node object) have the NodeTrait bit, so plugins can skip work none needs. */
  nodesWithTrait(trait: number): number;
  /**
   * The nodes running pods that carry a label, as a label-pair key ("namespace\0key=value",
   * see labelPairKey), with how many such pods each runs (nodes already deleted included).
   * Lets a single-label affinity term find its pods without visiting every node.
   */
  nodesWithPodLabel(pairKey: string): ReadonlyMap<NodeInfo, number> | undefined;
}

const traitBits = [NodeTrait.Unschedulable, NodeTrait.HardTaint, NodeTrait.SoftTaint];

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
  /** Per NodeTrait bit (in traitBits order), how many nodes have it. */
  private readonly traitCounts = traitBits.map(() => 0);
  private readonly podLabelNodes = new Map<string, Map<NodeInfo, number>>();

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
    else this.countTraits(ni.traits, -1);
    ni.setNode(node);
    this.countTraits(ni.traits, 1);
    return ni;
  }

  private countTraits(traits: number, sign: 1 | -1): void {
    if (traits === 0) return;
    for (let i = 0; i < traitBits.length; i++) if ((traits & traitBits[i]) !== 0) this.traitCounts[i] += sign;
  }

  nodesWithTrait(trait: number): number {
    let n = 0;
    for (let i = 0; i < traitBits.length; i++) if ((trait & traitBits[i]) !== 0) n += this.traitCounts[i];
    return n;
  }

  nodesWithPodLabel(pairKey: string): ReadonlyMap<NodeInfo, number> | undefined {
    return this.podLabelNodes.get(pairKey);
  }

  private countPodLabels(info: PodInfo, ni: NodeInfo, sign: 1 | -1): void {
    for (const pair of info.labelPairs) {
      let nodes = this.podLabelNodes.get(pair);
      if (!nodes) {
        if (sign < 0) continue;
        nodes = new Map();
        this.podLabelNodes.set(pair, nodes);
      }
      const n = (nodes.get(ni) ?? 0) + sign;
      if (n > 0) nodes.set(ni, n);
      else nodes.delete(ni);
      if (nodes.size === 0) this.podLabelNodes.delete(pair);
    }
  }

  removeNode(name: string): void {
    const ni = this.nodeInfos.get(name);
    if (!ni) return;
    if (ni.node !== null) this.countTraits(ni.traits, -1);
    ni.traits = 0;
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
    this.countPodLabels(info, ni, 1);
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
    this.countPodLabels(st.info, ni, -1);
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
