// The shape field management needs of a type: which values are leaves, which maps
// and structs are granular or atomic, and how each list's items are told apart
// (structured-merge-diff's schema: atomic lists, sets, and maps keyed on fields).
import type { OpenApiSchema } from '../validation/openapi-schema.js';

export type ListType = 'atomic' | 'set' | 'map';

export type Shape =
  /** A leaf: a string, number, boolean, int-or-string, quantity. */
  | { readonly t: 'scalar' }
  /** Fields known by name; `rest` types the others (a preserve-unknown-fields object). */
  | {
      readonly t: 'struct';
      readonly fields: Readonly<Record<string, Shape>>;
      readonly rest?: Shape;
      readonly atomic?: boolean;
    }
  /** A map from any string to values of one shape (labels, data, limits). */
  | { readonly t: 'map'; readonly values: Shape; readonly atomic?: boolean }
  | { readonly t: 'list'; readonly items: Shape; readonly list: ListType; readonly keys?: readonly string[] }
  /** Untyped: objects are granular maps, lists atomic, as structured-merge-diff deduces. */
  | { readonly t: 'deduced' };

export const SCALAR: Shape = Object.freeze({ t: 'scalar' });
export const DEDUCED: Shape = Object.freeze({ t: 'deduced' });

/** The shape of a structural OpenAPI v3 schema (a CRD version's), honouring its x-kubernetes-* list and map types. */
export function shapeFromOpenApi(s: OpenApiSchema | undefined, depth = 0): Shape {
  if (!s || depth > 64) return DEDUCED;
  const ext = s as OpenApiSchema & { 'x-kubernetes-map-type'?: string };
  if (s['x-kubernetes-int-or-string']) return SCALAR;
  if (s.type === 'array') {
    const list = s['x-kubernetes-list-type'] ?? 'atomic';
    const keys = list === 'map' ? (s['x-kubernetes-list-map-keys'] ?? []) : undefined;
    return { t: 'list', items: shapeFromOpenApi(s.items, depth + 1), list, ...(keys ? { keys } : {}) };
  }
  if (s.type === 'object' || s.properties || s.additionalProperties) {
    const atomic = ext['x-kubernetes-map-type'] === 'atomic';
    if (s.properties) {
      const fields: Record<string, Shape> = Object.create(null);
      for (const [k, v] of Object.entries(s.properties)) fields[k] = shapeFromOpenApi(v, depth + 1);
      const rest =
        typeof s.additionalProperties === 'object'
          ? shapeFromOpenApi(s.additionalProperties, depth + 1)
          : s['x-kubernetes-preserve-unknown-fields']
            ? DEDUCED
            : undefined;
      return { t: 'struct', fields, ...(rest ? { rest } : {}), ...(atomic ? { atomic } : {}) };
    }
    if (typeof s.additionalProperties === 'object') {
      return {
        t: 'map',
        values: shapeFromOpenApi(s.additionalProperties, depth + 1),
        ...(atomic ? { atomic } : {}),
      };
    }
    return atomic ? { t: 'map', values: DEDUCED, atomic } : DEDUCED;
  }
  if (s.type === undefined && s['x-kubernetes-preserve-unknown-fields']) return DEDUCED;
  return SCALAR;
}
