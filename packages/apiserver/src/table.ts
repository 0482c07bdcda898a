// Table responses (Accept: application/json;as=Table;v=v1;g=meta.k8s.io): the
// rows kubectl get prints, computed by the server from each kind's columns.
import { humanDuration } from '@kubit/api';
import type { KindDef } from './kinds/types.js';
import type { KObject } from './storage.js';

// One humanDuration for the apiserver's rows and the CLI's printers (kinds/ imports it from here).
export { humanDuration } from '@kubit/api';

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
  const nameOf = (o: KObject) => def.table.nameCell?.(o) ?? o.metadata?.name ?? '';
  return items.map((o) => ({
    cells: def.table.nameLast
      ? [...def.table.cells(o, now), nameOf(o)]
      : [nameOf(o), ...def.table.cells(o, now)],
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
