// A reader of Prometheus' text exposition format, enough for a kubelet's /metrics/resource:
// `name{label="value",...} value [timestamp-ms]` lines, comments skipped.

export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
  /** Milliseconds since the epoch, when the line carries one. */
  timestampMs?: number;
}

function unescapeLabel(v: string): string {
  return v.replace(/\\(["\\n])/g, (_m, c: string) => (c === 'n' ? '\n' : c));
}

/** The samples of a text exposition; a line that does not parse is an error naming it. */
export function parsePrometheusText(text: string): PromSample[] {
  const out: PromSample[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$/.exec(line);
    if (!m) throw new Error(`line ${i + 1} is not a Prometheus sample: ${line.slice(0, 200)}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      const re = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/gy;
      let lm: RegExpExecArray | null;
      let consumed = 0;
      // biome-ignore lint/suspicious/noAssignInExpressions: the sticky regexp walks the label list
      while ((lm = re.exec(m[2])) !== null) {
        labels[lm[1]] = unescapeLabel(lm[2]);
        consumed = re.lastIndex;
      }
      if (consumed !== m[2].length)
        throw new Error(`line ${i + 1} has malformed labels: ${line.slice(0, 200)}`);
    }
    const value = Number(m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : m[3]);
    if (Number.isNaN(value) && m[3] !== 'NaN') throw new Error(`line ${i + 1} has no numeric value: ${line}`);
    out.push({ name: m[1], labels, value, ...(m[4] !== undefined ? { timestampMs: Number(m[4]) } : {}) });
  }
  return out;
}
