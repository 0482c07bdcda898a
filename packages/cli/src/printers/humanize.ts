// Small renderings shared by printers and describers.
import { humanDuration } from '@kubit/api';

export function ageOf(timestamp: unknown, now = Date.now()): string {
  if (typeof timestamp !== 'string' || !timestamp) return '<unknown>';
  const t = Date.parse(timestamp);
  return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t);
}

/** "a=b,c=d" or "<none>". */
export function labelsText(labels: Record<string, string> | undefined): string {
  const entries = Object.entries(labels ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? '<none>' : entries.map(([k, v]) => `${k}=${v}`).join(',');
}

/** A table cell as kubectl prints it (nil → <none>). */
export function cellText(v: unknown): string {
  if (v === null || v === undefined) return '<none>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return v.map(cellText).join(',');
  return JSON.stringify(v);
}
