// A CustomResourceDefinition's served versions as KindDefs, so the generic REST
// code, the watch cache and discovery serve custom objects as they serve
// built-in kinds. The version's OpenAPI v3 schema prunes, defaults and
// validates each object (@kubit/api's openapi-schema).
import {
  applySchemaDefaults,
  type FieldError,
  type OpenApiSchema,
  prune,
  validateAgainstSchema,
  validateCelRules,
} from '@kubit/api';
import { customResourceShape } from '../fieldmanager/shape.js';
import { arr, type Column, type KindDef, obj, str } from '../kinds/types.js';
import { objectMeta, S } from '../model/schema.js';
import type { KObject } from '../storage.js';
import { statusSubresource } from '../subresources/status.js';
import { age, humanDuration } from '../table.js';
import { getPath } from './jsonpath.js';
import { customScaleSubresource, type ScalePaths } from './scale.js';

/** The store segment of a CRD's objects: /registry/<group>/<plural>/..., as Kubernetes keys them. */
export const crdStorageResource = (group: string, plural: string): string => `${group}/${plural}`;

interface PrinterColumn {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

const AGE_COLUMN: PrinterColumn = {
  name: 'Age',
  type: 'date',
  jsonPath: '.metadata.creationTimestamp',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
};

function cell(o: KObject, c: PrinterColumn, now: number): unknown {
  const v = getPath(o, c.jsonPath);
  if (v === undefined || v === null) return c.type === 'date' ? '<unknown>' : '';
  if (c.type === 'date') {
    if (c.jsonPath === '.metadata.creationTimestamp') return age(o, now);
    const t = Date.parse(String(v));
    return Number.isNaN(t) ? '<invalid>' : humanDuration(now - t);
  }
  if (c.type === 'integer' || c.type === 'number') return typeof v === 'number' ? v : '';
  if (c.type === 'boolean') return typeof v === 'boolean' ? v : '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function columnType(t: string): Column['type'] {
  return (['string', 'integer', 'number', 'boolean', 'date'] as const).find((x) => x === t) ?? 'string';
}

/** The KindDef of one served version of a CRD. */
export function kindOfVersion(crd: KObject, version: Record<string, unknown>): KindDef {
  const spec = obj(crd.spec);
  const names = obj(spec.names);
  const group = str(spec.group);
  const plural = str(names.plural);
  const schema = obj(obj(version.schema).openAPIV3Schema) as OpenApiSchema;
  const subs = obj(version.subresources);
  const hasStatus = subs.status !== undefined;
  const scale = subs.scale !== undefined ? (obj(subs.scale) as unknown as ScalePaths) : undefined;
  const declared = arr(version.additionalPrinterColumns).map((c) => obj(c) as unknown as PrinterColumn);
  const columns = declared.length > 0 ? declared : [AGE_COLUMN];
  const kind = str(names.kind);
  return {
    group,
    version: str(version.name),
    kind,
    resource: plural,
    singular: str(names.singular) || kind.toLowerCase(),
    namespaced: spec.scope !== 'Cluster',
    ...(arr(names.shortNames).length > 0 ? { shortNames: arr(names.shortNames).map(str) } : {}),
    ...(arr(names.categories).length > 0 ? { categories: arr(names.categories).map(str) } : {}),
    schema: S.obj({ apiVersion: S.str, kind: S.str, metadata: objectMeta }, true),
    nameRule: 'subdomain',
    storageResource: crdStorageResource(group, plural),
    customResource: true,
    fieldShape: customResourceShape(schema),
    generation: true,
    subresources: [
      ...(hasStatus ? [statusSubresource] : []),
      ...(scale ? [customScaleSubresource(scale)] : []),
    ],
    example: { spec: {} },
    prune: (o) => prune(o, schema),
    defaults: (o) => applySchemaDefaults(o, schema),
    validate: (o): FieldError[] => [...validateAgainstSchema(o, schema), ...validateCelRules(o, schema)],
    // Transition rules (those naming oldSelf) compare with the stored object.
    validateUpdate: (o, old): FieldError[] => validateCelRules(o, schema, old),
    ...(hasStatus
      ? {
          prepareForCreate(o: KObject) {
            delete o.status;
          },
          prepareForUpdate(o: KObject, old: KObject) {
            if (old.status === undefined) delete o.status;
            else o.status = old.status;
          },
          prepareForStatusUpdate(o: KObject, old: KObject) {
            const status = o.status;
            for (const k of Object.keys(o)) if (k !== 'metadata') delete o[k];
            Object.assign(o, structuredClone(old), { metadata: o.metadata });
            if (status === undefined) delete o.status;
            else o.status = status;
          },
        }
      : {}),
    table: {
      columns: columns.map((c) => ({
        name: c.name,
        type: columnType(c.type),
        ...(c.format ? { format: c.format } : {}),
        description: c.description ?? '',
        priority: c.priority ?? 0,
      })),
      cells: (o, now) => columns.map((c) => cell(o, c, now)),
    },
  };
}

/** Every served version of a CRD as a KindDef (the storage version first). */
export function kindsOfCrd(crd: KObject): KindDef[] {
  const versions = arr(obj(crd.spec).versions).map(obj);
  return versions.filter((v) => v.served === true).map((v) => kindOfVersion(crd, v));
}
