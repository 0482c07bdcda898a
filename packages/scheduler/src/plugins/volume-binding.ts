// VolumeBinding, as Kubernetes' plugin of that name: a pod whose claims are bound
// goes only where their volumes can be reached (PersistentVolume node affinity); a
// pod with an unbound WaitForFirstConsumer claim goes where a matching volume exists
// or its class can provision one (allowed topologies, published capacity). In the
// binding cycle it asks for those volumes on the chosen node (pre-binds a static
// volume, or writes selected-node for the node's provisioner) and waits until every
// claim is Bound, so the kubelet never sees the pod before its volumes exist.
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '@kubit/api';
import {
  ActionType,
  type CycleState,
  errorStatus,
  type FilterPlugin,
  type Handle,
  type PreBindPlugin,
  type PreFilterPlugin,
  type Status,
  skip,
  unresolvable,
  unschedulable,
} from '../framework/types.js';
import type { NodeInfo } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';
import {
  classAllowsNode,
  findMatchingVolume,
  isClaimBound,
  NO_PROVISIONER,
  nodeHasCapacity,
  podClaims,
  requestedBytes,
  type VolumeAccess,
  volumeFitsNode,
} from '../volumes.js';

export const VolumeBindingName = 'VolumeBinding';
export const errReasonBindConflict = "node(s) didn't find available persistent volumes to bind";
export const errReasonNodeConflict = 'node(s) had volume node affinity conflict';
export const errReasonNotEnoughSpace = 'node(s) did not have enough free storage';
export const errReasonPVNotExist =
  'node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)';
export const errUnboundImmediate = 'pod has unbound immediate PersistentVolumeClaims';

const stateKey = 'VolumeBinding';
const nodeConflict = unresolvable(errReasonNodeConflict);
const pvNotExist = unresolvable(errReasonPVNotExist);

interface DelayedClaim {
  claim: PersistentVolumeClaim;
  sc: StorageClass;
}

/** On the chosen node: each delayed claim with the static volume it gets, or none (provision it). */
type NodeDecision = { claim: PersistentVolumeClaim; volume?: PersistentVolume }[];

interface PodVolumes {
  boundVolumes: PersistentVolume[];
  /** A bound claim names a volume that does not exist. */
  missingVolume: boolean;
  delayed: DelayedClaim[];
  byNode: Map<string, NodeDecision>;
}

export interface VolumeBindingArgs {
  /** How long the binding cycle waits for the claims to be bound (Kubernetes' default: 600). */
  bindTimeoutSeconds?: number;
}

export class VolumeBinding implements PreFilterPlugin, FilterPlugin, PreBindPlugin {
  readonly name = VolumeBindingName;
  private readonly bindTimeoutMs: number;

  constructor(args: VolumeBindingArgs = {}) {
    this.bindTimeoutMs = (args.bindTimeoutSeconds ?? 600) * 1000;
  }

  events() {
    const addOrUpdate = ActionType.Add | ActionType.Update;
    return [
      {
        resource: 'Node' as const,
        actions: ActionType.Add | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint,
      },
      { resource: 'PersistentVolumeClaim' as const, actions: addOrUpdate },
      { resource: 'PersistentVolume' as const, actions: addOrUpdate },
      { resource: 'StorageClass' as const, actions: addOrUpdate },
      { resource: 'CSIStorageCapacity' as const, actions: addOrUpdate },
    ];
  }

  preFilter(state: CycleState, info: PodInfo, h: Handle): Status | null {
    const pod = info.pod;
    const claims = podClaims(pod);
    if (claims.length === 0) return skip;
    const access = h.volumes;
    if (!access) return unresolvable('the scheduler has no view of PersistentVolumeClaims');
    const ns = pod.metadata?.namespace ?? 'default';
    const st: PodVolumes = { boundVolumes: [], missingVolume: false, delayed: [], byNode: new Map() };
    let immediate = false;
    for (const { name, ephemeral } of claims) {
      const claim = access.claim(ns, name);
      if (!claim) {
        return unresolvable(
          ephemeral
            ? `waiting for ephemeral volume controller to create the persistentvolumeclaim "${name}"`
            : `persistentvolumeclaim "${name}" not found`,
        );
      }
      if (claim.status?.phase === 'Lost')
        return unresolvable(
          `persistentvolumeclaim "${name}" bound to non-existent persistentvolume "${claim.spec?.volumeName ?? ''}"`,
        );
      if (claim.metadata?.deletionTimestamp)
        return unresolvable(`persistentvolumeclaim "${name}" is being deleted`);
      if (ephemeral && !ownedBy(claim, pod.metadata?.uid)) {
        return unresolvable(
          `PVC ${ns}/${name} was not created for pod ${ns}/${pod.metadata?.name ?? ''} (pod is not owner)`,
        );
      }
      if (isClaimBound(claim)) {
        const pv = access.volume(claim.spec?.volumeName ?? '');
        if (pv) st.boundVolumes.push(pv);
        else st.missingVolume = true;
        continue;
      }
      // As Kubernetes' IsDelayBindingMode: no class, or a class that does not exist, is Immediate.
      const sc = access.storageClass(claim.spec?.storageClassName ?? '');
      if (sc?.volumeBindingMode === 'WaitForFirstConsumer') st.delayed.push({ claim, sc });
      else immediate = true;
    }
    if (immediate) return unresolvable(errUnboundImmediate);
    state.write(stateKey, st);
    return null;
  }

  filter(state: CycleState, _pod: PodInfo, node: NodeInfo, h: Handle): Status | null {
    const st = state.read<PodVolumes>(stateKey);
    if (!st) return null;
    if (st.missingVolume) return pvNotExist;
    for (const pv of st.boundVolumes) if (!volumeFitsNode(pv, node)) return nodeConflict;
    if (st.delayed.length === 0) return null;
    const access = h.volumes;
    if (!access) return null;
    const volumes = access.volumes();
    const taken = new Set<string>();
    const decision: NodeDecision = [];
    const reasons = new Set<string>();
    for (const { claim, sc } of st.delayed) {
      const pv = findMatchingVolume(claim, volumes, node, taken);
      if (pv) {
        taken.add(pv.metadata?.name ?? '');
        decision.push({ claim, volume: pv });
        continue;
      }
      if (
        sc.provisioner === NO_PROVISIONER ||
        !classAllowsNode(sc, node) ||
        !cloneReachable(claim, node, access)
      ) {
        reasons.add(errReasonBindConflict);
        continue;
      }
      if (!nodeHasCapacity(access.capacities(sc.metadata?.name ?? ''), node, requestedBytes(claim))) {
        reasons.add(errReasonNotEnoughSpace);
        continue;
      }
      decision.push({ claim });
    }
    if (reasons.size > 0) return unschedulable(...reasons);
    st.byNode.set(node.name, decision);
    return null;
  }

  preBind(
    state: CycleState,
    _pod: PodInfo,
    nodeName: string,
    h: Handle,
  ): Status | null | Promise<Status | null> {
    const st = state.read<PodVolumes>(stateKey);
    if (!st || st.delayed.length === 0) return null;
    const decision = st.byNode.get(nodeName);
    const access = h.volumes;
    if (!decision || !access) return errorStatus(`no volume decision for node ${nodeName}`);
    return this.bindVolumes(decision, nodeName, h);
  }

  private async bindVolumes(decision: NodeDecision, nodeName: string, h: Handle): Promise<Status | null> {
    const access = h.volumes;
    if (!access) return errorStatus('the scheduler has no view of PersistentVolumeClaims');
    try {
      for (const { claim, volume } of decision) {
        if (volume) await access.preBindVolume(volume, claim);
        else await access.selectNode(claim, nodeName);
      }
    } catch (err) {
      return errorStatus(`binding volumes: ${(err as Error).message}`);
    }
    const why = await access.waitForBound(
      decision.map((d) => d.claim),
      this.bindTimeoutMs,
    );
    return why === null ? null : errorStatus(`binding volumes: ${why}`);
  }
}

function ownedBy(claim: PersistentVolumeClaim, uid: string | undefined): boolean {
  return (claim.metadata?.ownerReferences ?? []).some((r) => r.controller === true && r.uid === uid);
}

/**
 * A claim cloned from another claim (dataSourceRef / dataSource) is made where its
 * source's volume is: node-local provisioners copy on the node, so only the source's
 * node can provision it. A source not bound yet decides nothing.
 */
function cloneReachable(claim: PersistentVolumeClaim, node: NodeInfo, access: VolumeAccess): boolean {
  const ds = claim.spec?.dataSourceRef ?? claim.spec?.dataSource;
  if (ds?.kind !== 'PersistentVolumeClaim' || (ds.apiGroup ?? '') !== '') return true;
  const source = access.claim(claim.metadata?.namespace ?? 'default', ds.name);
  const pv = source?.spec?.volumeName ? access.volume(source.spec.volumeName) : undefined;
  return !pv || volumeFitsNode(pv, node);
}
