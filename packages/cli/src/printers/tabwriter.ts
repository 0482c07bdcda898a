// Column alignment like Go's tabwriter as kubectl configures it: each column
// as wide as its widest cell plus three spaces; the last column is not padded.

export function alignColumns(rows: readonly (readonly string[])[], padding = 3): string {
  const widths: number[] = [];
  for (const r of rows) {
    for (let i = 0; i < r.length; i++) widths[i] = Math.max(widths[i] ?? 0, [...r[i]].length);
  }
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat(widths[i] - [...c].length + padding)))
        .join(''),
    )
    .map((l) => `${l.trimEnd()}\n`)
    .join('');
}
