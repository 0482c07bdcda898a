// The Shape field management walks a kind's objects with: the kind's structural
// schema (model/schema.ts) with the list types of its strategic-merge metadata
// (@kubit/api patch/schema.ts): a list merged on a key is an associative list on that
// key, a list merged as scalars a set, every other list atomic, as Kubernetes' types
// tag them. A CRD's shape comes from its OpenAPI v3 schema.
import {
  DEDUCED,
  type FieldMeta,
  type OpenApiSchema,
  type PatchSchema,
  patchSchemaFor,
  SCALAR,
  type Shape,
  shapeFromOpenApi,
} from '@kubit/api';
import { groupVersion, type KindDef } from '../kinds/types.js';
import { labelSelector, objectMeta, type Schema } from '../model/schema.js';

const shapes = new WeakMap<KindDef, Shape>();

/** The kind's shape, built once per KindDef. */
export function shapeOfKind(def: KindDef): Shape {
  let s = shapes.get(def);
  if (!s) {
    s =
      def.fieldShape ?? fromSchema(def.schema, patchSchemaFor(groupVersion(def), def.kind) ?? METADATA_ONLY);
    shapes.set(def, s);
  }
  return s;
}

/** Every kind's metadata merges finalizers as a set and owner references by uid. */
const METADATA_ONLY: PatchSchema = patchSchemaFor('v1', 'ConfigMap') as PatchSchema;

/** A custom resource: its schema's properties, and ObjectMeta as built-in kinds have it. */
export function customResourceShape(schema: OpenApiSchema): Shape {
  const root = shapeFromOpenApi(schema);
  const fields = root.t === 'struct' ? root.fields : {};
  const meta = fromSchema(objectMeta, metaPatchSchema());
  return {
    t: 'struct',
    fields: { ...fields, apiVersion: SCALAR, kind: SCALAR, metadata: meta },
    ...(root.t === 'struct' && root.rest ? { rest: root.rest } : {}),
  };
}

function metaPatchSchema(): PatchSchema | undefined {
  return METADATA_ONLY.fields.metadata?.schema;
}

function fromSchema(s: Schema, p: PatchSchema | undefined): Shape {
  switch (s.t) {
    case 'object': {
      const fields: Record<string, Shape> = Object.create(null);
      for (const [k, child] of Object.entries(s.fields)) {
        const meta = p && Object.hasOwn(p.fields, k) ? p.fields[k] : undefined;
        fields[k] = child.t === 'list' ? listShape(child.items, meta) : fromSchema(child, meta?.schema);
      }
      // LabelSelector is `+structType=atomic`: its owner owns it whole.
      return {
        t: 'struct',
        fields,
        ...(s.open ? { rest: DEDUCED } : {}),
        ...(s === labelSelector ? { atomic: true } : {}),
      };
    }
    case 'map':
      return { t: 'map', values: fromSchema(s.values, undefined) };
    case 'list':
      return listShape(s.items, undefined);
    case 'any':
      return DEDUCED;
    default:
      return SCALAR;
  }
}

function listShape(items: Schema, meta: FieldMeta | undefined): Shape {
  const itemShape = fromSchema(items, meta?.schema);
  if (meta?.strategy !== 'merge') return { t: 'list', items: itemShape, list: 'atomic' };
  if (meta.mergeKey) return { t: 'list', items: itemShape, list: 'map', keys: [meta.mergeKey] };
  return { t: 'list', items: itemShape, list: 'set' };
}
