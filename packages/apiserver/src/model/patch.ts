// The three patch formats kubectl sends, applied by @kubit/api; a patch that
// is malformed or does not apply becomes its 400/422 Status.
import {
  applyJsonPatch,
  applyMergePatch,
  applyStrategicMergePatch,
  badRequest,
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

/** Applies a patch of one of the formats request.ts names (merge, apply, strategic, jsonpatch). */
export function applyPatchOfFormat(format: string, current: unknown, patch: unknown): unknown {
  switch (format) {
    case 'merge':
    case 'apply':
      if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
        throw badRequest('a merge patch must be a JSON object');
      }
      return mergePatch(current, patch);
    case 'strategic':
      return strategicMergePatch(current, patch);
    case 'jsonpatch':
      return jsonPatch(current, patch);
    default:
      throw badRequest(`unsupported patch type ${format}`);
  }
}
