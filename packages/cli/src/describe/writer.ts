// The layout kubectl describe uses: "Key:\tvalue" lines, indented by level,
// aligned like Go's tabwriter (padding 2): a column is aligned over a run of
// consecutive lines that all have a cell in it; a line without one ends the run.

export class DescribeWriter {
  private readonly lines: string[] = [];

  /** Writes one line at an indentation level; cells are separated by \t. */
  line(level: number, text: string): void {
    this.lines.push('  '.repeat(level) + text);
  }

  /** "Key:\tvalue" (value "<none>" when empty). */
  kv(level: number, key: string, value: string | number | boolean | undefined | null): void {
    const v = value === undefined || value === null || value === '' ? '<none>' : String(value);
    this.line(level, `${key}:\t${v}`);
  }

  /** A map as "Key:\tk=v" then continuation lines "\tk=v" (kubectl's labels layout). */
  map(level: number, key: string, m: Record<string, string> | undefined, sep = '='): void {
    const entries = Object.entries(m ?? {}).sort(([a], [b]) => a.localeCompare(b));
    if (entries.length === 0) {
      this.kv(level, key, '<none>');
      return;
    }
    entries.forEach(([k, v], i) => {
      this.line(level, `${i === 0 ? `${key}:` : ''}\t${k}${sep}${v}`);
    });
  }

  toString(): string {
    return align(this.lines.map((l) => l.split('\t')));
  }
}

/** Go tabwriter semantics: cells terminated by a tab are aligned per column block; the last cell is free. */
export function align(rows: string[][], padding = 2): string {
  const widths: number[][] = rows.map((r) => new Array(Math.max(0, r.length - 1)).fill(0));
  const fill = (col: number, start: number, end: number) => {
    let i = start;
    while (i < end) {
      if (rows[i].length - 1 <= col) {
        i++;
        continue;
      }
      let j = i;
      let w = 0;
      while (j < end && rows[j].length - 1 > col) {
        w = Math.max(w, [...rows[j][col]].length + padding);
        j++;
      }
      for (let k = i; k < j; k++) widths[k][col] = w;
      fill(col + 1, i, j);
      i = j;
    }
  };
  fill(0, 0, rows.length);
  return rows
    .map((r, i) => r.map((c, j) => (j < r.length - 1 ? c.padEnd(widths[i][j]) : c)).join(''))
    .map((l) => `${l}\n`)
    .join('');
}

/** A container's Command: and Args: lines as kubectl describe writes them, one part a line beneath. */
export function writeCommandAndArgs(
  w: DescribeWriter,
  indent: number,
  c: { command?: string[]; args?: string[] },
): void {
  if (c.command?.length) {
    w.line(indent, 'Command:');
    for (const part of c.command) w.line(indent + 1, part);
  }
  if (c.args?.length) {
    w.line(indent, 'Args:');
    for (const part of c.args) w.line(indent + 1, part);
  }
}
