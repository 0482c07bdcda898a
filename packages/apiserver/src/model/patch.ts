// The three patch formats kubectl sends, applied by @kubit/api; a patch that
// is malformed or does not apply becomes its 400/422 Status.
import {
  applyJsonPatch,
  applyMergePatch,
  applyStrategicMergePatch,
  PatchError,
  patchSchemaFor,
} from '@kubit/api';

function statusOnError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof PatchError) throw err.toStatusError();
    throw err;
  }
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  return statusOnError(() => applyMergePatch(target, patch));
}

/** RFC 6902 JSON patch. */
export function jsonPatch(doc: unknown, ops: unknown): unknown {
  return statusOnError(() => applyJsonPatch(doc, ops));
}

/** Kubernetes' strategic merge patch, with the list merge keys of the object's kind. */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  const t = (target ?? {}) as { apiVersion?: unknown; kind?: unknown };
  const schema = patchSchemaFor(String(t.apiVersion ?? ''), String(t.kind ?? ''));
  return statusOnError(() => applyStrategicMergePatch(target, patch, schema));
}
