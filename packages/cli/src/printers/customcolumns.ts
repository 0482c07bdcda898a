// -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName

import { CliError } from '../errors.js';
import { evaluate, formatValue, relaxedPath } from './jsonpath.js';
import { alignColumns } from './tabwriter.js';

export interface CustomColumn {
  header: string;
  path: ReturnType<typeof relaxedPath>;
}

export function parseCustomColumns(spec: string): CustomColumn[] {
  if (!spec.trim()) throw new CliError('custom-columns format specified but no custom columns given');
  return spec.split(',').map((part) => {
    const colon = part.indexOf(':');
    if (colon <= 0)
      throw new CliError(`unexpected custom-columns spec: ${part}, expected <header>:<json-path-expr>`);
    return { header: part.slice(0, colon), path: relaxedPath(part.slice(colon + 1)) };
  });
}

/** The cell for one column: several results joined by ",", nothing found is <none>. */
export function columnCell(col: CustomColumn, obj: unknown): string {
  const values = evaluate(col.path, obj);
  if (values.length === 0 || values.every((v) => v === undefined || v === null)) return '<none>';
  return values.map(formatValue).join(',');
}

export function renderCustomColumns(
  cols: readonly CustomColumn[],
  objs: readonly unknown[],
  headers = true,
): string {
  const rows = objs.map((o) => cols.map((c) => columnCell(c, o)));
  return alignColumns(headers ? [cols.map((c) => c.header), ...rows] : rows);
}
