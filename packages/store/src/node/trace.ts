// A debug timeline of the write path, off unless KUBIT_STORE_TRACE names a
// directory: each member then appends JSON lines (wall-clock ms with
// microsecond resolution, so the members' lines merge into one timeline) to
// <dir>/<pid>.jsonl. Used to find serial waits in one request's path
// (received → proposed → written → sent → acked → committed → applied →
// answered); never on in production.
import { openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Message, Ready } from '../raft/types.js';

const dir = process.env.KUBIT_STORE_TRACE;
export const tracing = dir !== undefined && dir !== '';

let lines: string[] = [];
let fd: number | undefined;

function flush(): void {
  if (lines.length === 0 || !dir) return;
  fd ??= openSync(join(dir, `${process.pid}.jsonl`), 'a');
  writeSync(fd, lines.join(''));
  lines = [];
}

if (tracing) {
  setInterval(flush, 500).unref();
  process.on('exit', flush);
}

function now(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000) / 1000;
}

export function trace(event: string, fields: Record<string, unknown> = {}): void {
  if (!tracing) return;
  lines.push(`${JSON.stringify({ t: now(), pid: process.pid, event, ...fields })}\n`);
}

function describe(ms: readonly Message[]): string[] {
  return ms.map((m) => {
    const n = m.entries?.length ?? 0;
    return `${m.type}>${m.to} i${m.index} c${m.commit}${n > 0 ? ` +${n}` : ''}`;
  });
}

export function traceMessages(event: string, ms: readonly Message[]): void {
  if (tracing && ms.length > 0) trace(event, { msgs: describe(ms) });
}

export function traceReady(rd: Ready, id: string): void {
  if (!tracing) return;
  const e = rd.entries;
  const c = rd.committedEntries;
  trace('ready', {
    id,
    entries: e.length > 0 ? `${e[0].index}-${e[e.length - 1].index}` : '',
    committed: c.length > 0 ? `${c[0].index}-${c[c.length - 1].index}` : '',
    msgs: describe(rd.messages),
  });
}
