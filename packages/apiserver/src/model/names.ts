// Small helpers about names and times the kinds share; name and label rules
// themselves are validated by @kubit/api.
import { badRequest } from '@kubit/api';

export type NameRule = 'subdomain' | 'label' | 'path';

/**
 * A timestamp as Kubernetes serializes it: metav1.Time to the second
 * ("2006-01-02T15:04:05Z"), metav1.MicroTime to the microsecond. Clients parse
 * these with fixed layouts, so whatever a writer sent is rewritten.
 */
export function normalizeTime(v: unknown, micro: boolean, field: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const ms = typeof v === 'string' ? Date.parse(v) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw badRequest(`parsing time ${JSON.stringify(v)} in field ${field}: not an RFC 3339 time`);
  }
  const iso = new Date(ms).toISOString();
  if (!micro) return `${iso.slice(0, 19)}Z`;
  const frac = typeof v === 'string' ? (/\.(\d+)/.exec(v)?.[1] ?? '') : '';
  return `${iso.slice(0, 19)}.${frac.padEnd(6, '0').slice(0, 6)}Z`;
}
