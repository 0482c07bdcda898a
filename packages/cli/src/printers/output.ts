// Choosing and running a printer for -o: the server's Table for humans,
// name, json, yaml, jsonpath and custom-columns otherwise.

import type { APIResourceInfo, KubeObject, Table } from '@kubit/client';
import { CliError } from '../errors.js';
import { type CustomColumn, parseCustomColumns, renderCustomColumns } from './customcolumns.js';
import { cellText, labelsText } from './humanize.js';
import { renderJsonPath } from './jsonpath.js';
import { sortKeys } from './sortkeys.js';
import { alignColumns } from './tabwriter.js';
import { toYaml } from './yaml.js';

export type OutputFormat =
  | { kind: 'table'; wide: boolean }
  | { kind: 'name' }
  | { kind: 'json' }
  | { kind: 'yaml' }
  | { kind: 'jsonpath'; template: string }
  | { kind: 'custom-columns'; columns: CustomColumn[] };

export const TABLE_ACCEPT =
  'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

const FORMATS = [
  'custom-columns',
  'custom-columns-file',
  'go-template',
  'go-template-file',
  'json',
  'jsonpath',
  'jsonpath-as-json',
  'jsonpath-file',
  'name',
  'template',
  'templatefile',
  'wide',
  'yaml',
];

export function parseOutput(o: string | undefined): OutputFormat {
  if (!o) return { kind: 'table', wide: false };
  if (o === 'wide') return { kind: 'table', wide: true };
  if (o === 'name') return { kind: 'name' };
  if (o === 'json') return { kind: 'json' };
  if (o === 'yaml') return { kind: 'yaml' };
  if (o.startsWith('jsonpath=')) return { kind: 'jsonpath', template: o.slice('jsonpath='.length) };
  if (o.startsWith('custom-columns='))
    return { kind: 'custom-columns', columns: parseCustomColumns(o.slice('custom-columns='.length)) };
  throw new CliError(
    `unable to match a printer suitable for the output format "${o}", allowed formats are: ${FORMATS.join(',')}`,
  );
}

/** "pod", "deployment.apps": how -o name and created/configured lines name a type. */
export function typeName(r: Pick<APIResourceInfo, 'kind' | 'group'>): string {
  const k = r.kind.toLowerCase();
  return r.group ? `${k}.${r.group}` : k;
}

export function objectName(r: Pick<APIResourceInfo, 'kind' | 'group'>, obj: KubeObject): string {
  return `${typeName(r)}/${obj.metadata?.name ?? ''}`;
}

/** A List wrapping several objects, as kubectl prints -o json/yaml for more than one. */
export function asList(items: readonly KubeObject[]): Record<string, unknown> {
  return { apiVersion: 'v1', items, kind: 'List', metadata: { resourceVersion: '' } };
}

/**
 * The object without metadata.managedFields: as kubectl, every printer leaves them out unless
 * --show-managed-fields asks for them (they are the server's bookkeeping, long and rarely read).
 */
export function omitManagedFields(obj: KubeObject): KubeObject {
  const meta = obj.metadata as (KubeObject['metadata'] & { managedFields?: unknown }) | undefined;
  if (!meta || meta.managedFields === undefined) return obj;
  const { managedFields: _omitted, ...rest } = meta;
  return { ...obj, metadata: rest };
}

/** Prints objects in a non-table format; `single` prints one object bare. */
export function printObjects(
  format: OutputFormat,
  items: readonly { r: APIResourceInfo; obj: KubeObject }[],
  single: boolean,
  headers = true,
  showManagedFields = false,
): string {
  const shown = showManagedFields ? items : items.map((i) => ({ r: i.r, obj: omitManagedFields(i.obj) }));
  const data = single && shown.length === 1 ? shown[0].obj : asList(shown.map((i) => i.obj));
  switch (format.kind) {
    case 'name':
      return shown.map((i) => `${objectName(i.r, i.obj)}\n`).join('');
    case 'json':
      return `${JSON.stringify(sortKeys(data), null, 4)}\n`;
    case 'yaml':
      return toYaml(data);
    case 'jsonpath':
      return renderJsonPath(format.template, data);
    case 'custom-columns':
      return renderCustomColumns(
        format.columns,
        shown.map((i) => i.obj),
        headers,
      );
    case 'table':
      throw new Error('tables are printed with printTable');
  }
}

export interface TableOptions {
  wide: boolean;
  headers: boolean;
  /** Prefix rows with a NAMESPACE column. */
  namespaceColumn: boolean;
  showLabels: boolean;
  labelColumns: string[];
  /** Prefix names with "kind/" (several types in one get). */
  kindPrefix?: string;
}

/** The rows (header first when asked) for a server Table. */
export function tableRows(table: Table, o: TableOptions): string[][] {
  const cols = table.columnDefinitions ?? [];
  const shown = cols.map((c, i) => ({ c, i })).filter(({ c }) => o.wide || c.priority === 0);
  const rows: string[][] = [];
  if (o.headers) {
    const h = shown.map(({ c }) => c.name.toUpperCase());
    if (o.namespaceColumn) h.unshift('NAMESPACE');
    for (const l of o.labelColumns) h.push(l.toUpperCase());
    if (o.showLabels) h.push('LABELS');
    rows.push(h);
  }
  for (const row of table.rows ?? []) {
    const meta = row.object?.metadata;
    const cells = shown.map(({ i, c }) => {
      const text = cellText(row.cells[i]);
      return c.format === 'name' && o.kindPrefix ? `${o.kindPrefix}/${text}` : text;
    });
    if (o.namespaceColumn) cells.unshift(meta?.namespace ?? '');
    for (const l of o.labelColumns) cells.push(meta?.labels?.[l] ?? '');
    if (o.showLabels) cells.push(labelsText(meta?.labels));
    rows.push(cells);
  }
  return rows;
}

export function printTable(table: Table, o: TableOptions): string {
  return alignColumns(tableRows(table, o));
}
