// Which PersistentVolume a claim may bind to, decided without I/O, as Kubernetes'
// pv_controller (findBestMatchForClaim / FindMatchingVolume): a volume pre-bound to
// the claim wins if it fits; otherwise the smallest Available volume of the claim's
// class with every requested access mode, the claim's volume mode, enough capacity,
// the labels the claim's selector asks for and, for a claim waiting for its first
// consumer, node affinity that admits the selected node.
import {
  compareQuantities,
  type PersistentVolume,
  type PersistentVolumeClaim,
  tryParseQuantity,
} from '@kubit/api';
import { selectorMatches } from '../labels.js';
import type { Node } from '../types.js';

const storageOf = (q: string | number | undefined) =>
  q === undefined ? undefined : tryParseQuantity(String(q));

/** The claim's class: the field, else the pre-GA annotation ("" is no class). */
export function claimClass(claim: PersistentVolumeClaim): string {
  return (
    claim.spec?.storageClassName ??
    claim.metadata?.annotations?.['volume.beta.kubernetes.io/storage-class'] ??
    ''
  );
}

export function volumeClass(pv: PersistentVolume): string {
  return (
    pv.spec?.storageClassName ?? pv.metadata?.annotations?.['volume.beta.kubernetes.io/storage-class'] ?? ''
  );
}

/** Whether the volume's claimRef names this claim (by uid once it has one). */
export function isPreBoundTo(pv: PersistentVolume, claim: PersistentVolumeClaim): boolean {
  const ref = pv.spec?.claimRef;
  if (!ref) return false;
  if (ref.name !== claim.metadata?.name || (ref.namespace ?? '') !== (claim.metadata?.namespace ?? ''))
    return false;
  return !ref.uid || ref.uid === claim.metadata?.uid;
}

/** Whether a required node selector admits a node (terms ORed, requirements ANDed). */
export function nodeSelectorAdmits(pv: PersistentVolume, node: Node | undefined): boolean {
  const terms = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return true;
  if (!node) return false;
  const labels = node.metadata?.labels ?? {};
  return terms.some((t) =>
    [...(t.matchExpressions ?? []), ...(t.matchFields ?? [])].every((e) => {
      const v = e.key === 'metadata.name' && t.matchFields?.includes(e) ? node.metadata?.name : labels[e.key];
      const values = e.values ?? [];
      switch (e.operator) {
        case 'In':
          return v !== undefined && values.includes(v);
        case 'NotIn':
          return v === undefined || !values.includes(v);
        case 'Exists':
          return v !== undefined;
        case 'DoesNotExist':
          return v === undefined;
        case 'Gt':
          return v !== undefined && Number(v) > Number(values[0]);
        case 'Lt':
          return v !== undefined && Number(v) < Number(values[0]);
        default:
          return false;
      }
    }),
  );
}

/** Why a volume cannot hold the claim, or undefined when it can (ignoring its claimRef). */
export function mismatch(
  pv: PersistentVolume,
  claim: PersistentVolumeClaim,
  node?: Node | null,
): string | undefined {
  if ((pv.spec?.volumeMode ?? 'Filesystem') !== (claim.spec?.volumeMode ?? 'Filesystem'))
    return 'incompatible volumeMode';
  if (volumeClass(pv) !== claimClass(claim)) return 'storageClassName does not match';
  const modes = pv.spec?.accessModes ?? [];
  if (!(claim.spec?.accessModes ?? []).every((m) => modes.includes(m))) return 'incompatible accessMode';
  const want = storageOf(claim.spec?.resources?.requests?.storage);
  const have = storageOf(pv.spec?.capacity?.storage);
  if (!have || (want && compareQuantities(have, want) < 0)) return 'insufficient capacity';
  if (claim.spec?.selector && !selectorMatches(claim.spec.selector, pv.metadata?.labels))
    return 'selector does not match';
  // undefined: no node to check against (Immediate binding); null: a node that is not known.
  if (node !== undefined && !nodeSelectorAdmits(pv, node ?? undefined)) return 'node affinity conflict';
  return undefined;
}

/**
 * The volume for an unbound claim: one pre-bound to it, else the smallest fitting
 * Available volume not reserved for another claim.
 */
export function findBestMatch(
  claim: PersistentVolumeClaim,
  volumes: readonly PersistentVolume[],
  node?: Node | null,
): PersistentVolume | undefined {
  let best: PersistentVolume | undefined;
  for (const pv of volumes) {
    if (pv.metadata?.deletionTimestamp) continue;
    if (isPreBoundTo(pv, claim)) {
      if (!mismatch(pv, claim, node)) return pv;
      continue;
    }
    if (pv.spec?.claimRef) continue;
    if (pv.status?.phase && pv.status.phase !== 'Available' && pv.status.phase !== 'Pending') continue;
    if (mismatch(pv, claim, node)) continue;
    const size = storageOf(pv.spec?.capacity?.storage);
    const bestSize = storageOf(best?.spec?.capacity?.storage);
    if (!best || (size && bestSize && compareQuantities(size, bestSize) < 0)) best = pv;
  }
  return best;
}
