// Patches: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

export * from './json-patch.js';
export * from './merge.js';
export {
  assertMaxDepth,
  deepClone,
  type JsonObject,
  type JsonValue,
  MAX_PATCH_DEPTH,
  PatchError,
  setOwn,
} from './safe.js';
export { type FieldMeta, type PatchSchema, patchSchemaFor } from './schema.js';
export * from './strategic.js';
