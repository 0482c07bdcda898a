// The manager a write is recorded under: the request's fieldManager, else the
// User-Agent's first segment (`kubectl/v1.30.0 (linux/amd64) kubernetes/abc` →
// `kubectl`), printable characters only, at most 128 bytes, as Kubernetes derives it.
import { fieldErrors, invalid } from '@kubit/api';

const MAX_BYTES = 128;

function printable(ch: string): boolean {
  return /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(ch);
}

export function managerFromUserAgent(userAgent: string | undefined): string {
  let out = '';
  let bytes = 0;
  for (const ch of (userAgent ?? '').split('/')[0]) {
    if (!printable(ch)) continue;
    const n = Buffer.byteLength(ch);
    if (bytes + n > MAX_BYTES) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/** The fieldManager option, checked as Kubernetes checks it (422 on the options kind), else from the User-Agent. */
export function managerOf(
  fieldManager: string | undefined,
  userAgent: string | undefined,
  optionsKind: string,
): string {
  if (fieldManager === undefined || fieldManager === '') return managerFromUserAgent(userAgent);
  if (fieldManager.length > MAX_BYTES) {
    throw invalid({ group: 'meta.k8s.io', kind: optionsKind }, '', [
      fieldErrors.tooLong('fieldManager', fieldManager, MAX_BYTES),
    ]);
  }
  for (const ch of fieldManager) {
    if (!printable(ch)) {
      throw invalid({ group: 'meta.k8s.io', kind: optionsKind }, '', [
        fieldErrors.invalid('fieldManager', fieldManager, 'must be composed of printable characters'),
      ]);
    }
  }
  return fieldManager;
}
