// Table responses (Accept: application/json;as=Table;v=v1;g=meta.k8s.io): the
// rows kubectl get prints, computed by the server from each kind's columns.
import type { KindDef } from './kinds/types.js';
import type { KObject } from './storage.js';

/** Kubernetes' short human duration: 45s, 3m20s, 5h, 12d, 2y. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const years = Math.floor(hours / 24 / 365);
  if (years < 8) {
    const d = Math.floor(hours / 24) % 365;
    return d === 0 ? `${years}y` : `${years}y${d}d`;
  }
  return `${years}y`;
}

export function age(obj: KObject, now: number): string {
  const ts = obj.metadata?.creationTimestamp;
  if (typeof ts !== 'string') return '<unknown>';
  return humanDuration(now - Date.parse(ts));
}

const NAME_COLUMN = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description:
    'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically.',
  priority: 0,
};

function partialMetadata(obj: KObject) {
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata ?? {} };
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

export function tableRows(def: KindDef, items: KObject[], include: IncludeObject, now = Date.now()) {
  return items.map((o) => ({
    cells: def.table.nameLast
      ? [...def.table.cells(o, now), o.metadata?.name ?? '']
      : [o.metadata?.name ?? '', ...def.table.cells(o, now)],
    ...(include === 'None' ? {} : { object: include === 'Object' ? o : partialMetadata(o) }),
  }));
}

export function tableColumns(def: KindDef) {
  if (def.table.nameLast) return [...def.table.columns, { ...NAME_COLUMN, priority: 1 }];
  return [NAME_COLUMN, ...def.table.columns];
}

export function toTable(
  def: KindDef,
  items: KObject[],
  listMeta: Record<string, unknown>,
  include: IncludeObject,
  withColumns = true,
) {
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    ...(withColumns ? { columnDefinitions: tableColumns(def) } : { columnDefinitions: null }),
    rows: tableRows(def, items, include),
  };
}
