// Container logs as the CRI runtime writes them: one file per container
// instance, each line "<RFC3339Nano> <stdout|stderr> <P|F> <content>", where P
// marks a partial line continued by the next entry and F a full one.
import { open, stat } from 'node:fs/promises';

export interface LogEntry {
  /** The timestamp as written (RFC3339 with nanoseconds). */
  time: string;
  timeMs: number;
  stream: 'stdout' | 'stderr';
  /** Full (F) or partial (P). */
  tag: 'F' | 'P';
  content: string;
}

/** Parses one CRI log line; undefined when it is not one. */
export function parseCriLogLine(line: string): LogEntry | undefined {
  const m = /^(\S+) (stdout|stderr) ([FP]) ?(.*)$/.exec(line);
  if (!m) return undefined;
  const timeMs = Date.parse(m[1]);
  if (Number.isNaN(timeMs)) return undefined;
  return { time: m[1], timeMs, stream: m[2] as 'stdout' | 'stderr', tag: m[3] as 'F' | 'P', content: m[4] };
}

export interface LogOptions {
  follow?: boolean;
  tailLines?: number;
  timestamps?: boolean;
  sinceTimeMs?: number;
  limitBytes?: number;
}

/** Joins partial entries into whole lines as the user wrote them. */
function* joinLines(
  entries: Iterable<LogEntry>,
  pending: { entry?: LogEntry; text: string },
): Generator<{ time: string; timeMs: number; text: string }> {
  for (const e of entries) {
    if (!pending.entry) pending.entry = e;
    pending.text += e.content;
    if (e.tag === 'F') {
      yield { time: pending.entry.time, timeMs: pending.entry.timeMs, text: `${pending.text}\n` };
      pending.entry = undefined;
      pending.text = '';
    }
  }
}

function format(line: { time: string; text: string }, timestamps: boolean | undefined): string {
  return timestamps ? `${line.time} ${line.text}` : line.text;
}

/**
 * The log of one container instance, as the kubelet's /containerLogs serves it.
 * With `follow`, keeps reading what is appended until `stillRunning()` turns
 * false (and the file is drained) or `signal` aborts.
 */
export async function* readContainerLog(
  path: string,
  opts: LogOptions,
  stillRunning: () => Promise<boolean>,
  signal?: AbortSignal,
  pollMs = 200,
): AsyncGenerator<string> {
  const file = await open(path, 'r');
  let budget = opts.limitBytes ?? Number.POSITIVE_INFINITY;
  const emit = (s: string): string | undefined => {
    if (budget <= 0) return undefined;
    const buf = Buffer.from(s);
    if (buf.length <= budget) {
      budget -= buf.length;
      return s;
    }
    const cut = buf.subarray(0, budget).toString();
    budget = 0;
    return cut;
  };
  try {
    let position = 0;
    let carry = '';
    const pending: { entry?: LogEntry; text: string } = { text: '' };
    const readNew = async (): Promise<LogEntry[]> => {
      const size = (await file.stat()).size;
      if (size < position) position = 0; // truncated
      if (size === position) return [];
      const buf = Buffer.alloc(size - position);
      const { bytesRead } = await file.read(buf, 0, buf.length, position);
      position += bytesRead;
      const text = carry + buf.subarray(0, bytesRead).toString('utf8');
      const lines = text.split('\n');
      carry = lines.pop() ?? '';
      return lines.map(parseCriLogLine).filter((e): e is LogEntry => e !== undefined);
    };
    const since = opts.sinceTimeMs;
    let lines = [...joinLines(await readNew(), pending)].filter(
      (l) => since === undefined || l.timeMs >= since,
    );
    if (opts.tailLines !== undefined && opts.tailLines >= 0)
      lines = lines.slice(Math.max(0, lines.length - opts.tailLines));
    for (const l of lines) {
      const out = emit(format(l, opts.timestamps));
      if (out === undefined) return;
      yield out;
    }
    if (!opts.follow) return;
    while (!signal?.aborted && budget > 0) {
      const entries = await readNew();
      for (const l of joinLines(entries, pending)) {
        if (since !== undefined && l.timeMs < since) continue;
        const out = emit(format(l, opts.timestamps));
        if (out === undefined) return;
        yield out;
      }
      if (entries.length === 0) {
        if (!(await stillRunning())) {
          // One last read: the runtime may have flushed after we looked.
          const rest = await readNew();
          for (const l of joinLines(rest, pending)) {
            const out = emit(format(l, opts.timestamps));
            if (out === undefined) return;
            yield out;
          }
          return;
        }
        await new Promise((r) => setTimeout(r, pollMs));
      }
    }
  } finally {
    await file.close();
  }
}

export async function fileExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
