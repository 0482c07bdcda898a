// Turns the structural schemas of model/schema.ts into OpenAPI schema
// objects, v3 (components.schemas, refs through allOf) or v2 (definitions,
// plain $ref), under the names Kubernetes gives its definitions, with the
// descriptions and required fields of field-docs.ts.
import type { KindDef } from '../kinds/types.js';
import { type Schema, sharedSchemas } from '../model/schema.js';
import { commonFieldDocs, definitionDocs } from './field-docs.js';

export type Flavor = 'v2' | 'v3';
export type OpenApiSchema = Record<string, unknown>;

const INT_OR_STRING = 'io.k8s.apimachinery.pkg.util.intstr.IntOrString';
const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity';

/** Definitions that are no structural schema of ours: a JSON string with a format. */
const SCALAR_DEFINITIONS: Record<string, OpenApiSchema> = {
  [INT_OR_STRING]: {
    description:
      'A value that is either an integer or a string (a number or a percentage, a port or its name).',
    type: 'string',
    format: 'int-or-string',
  },
  [QUANTITY]: {
    description:
      'An amount of a resource, written as a number with an optional suffix: 100m, 1.5, 64Mi, 2Gi.',
    type: 'string',
  },
};

/** v3 says "integer or string" with its extension instead of a type (so kubectl explain shows IntOrString). */
const V3_SCALAR_DEFINITIONS: Record<string, OpenApiSchema> = {
  ...SCALAR_DEFINITIONS,
  [INT_OR_STRING]: {
    description: SCALAR_DEFINITIONS[INT_OR_STRING].description,
    format: 'int-or-string',
    'x-kubernetes-int-or-string': true,
  },
};

/**
 * The package part of a kind's definition name: Kubernetes' own groups live
 * under io.k8s.api.<first label of the group>; any other group (a custom
 * resource's) is its domain reversed, as Kubernetes names CRD schemas.
 */
export function definitionPrefix(group: string, version: string): string {
  if (group === '') return `io.k8s.api.core.${version}`;
  if (!group.includes('.') || group.endsWith('.k8s.io'))
    return `io.k8s.api.${group.split('.')[0]}.${version}`;
  return `${group.split('.').reverse().join('.')}.${version}`;
}

export function definitionName(def: Pick<KindDef, 'group' | 'version' | 'kind'>): string {
  return `${definitionPrefix(def.group, def.version)}.${def.kind}`;
}

const hasFields = (s: Schema): boolean => s.t === 'object' && Object.keys(s.fields).length > 0;

/**
 * The name of every schema node that becomes a definition of its own: the
 * shared pieces, each kind, and a kind's spec and status (FooSpec, FooStatus).
 * Built from the kinds served now, so kinds added at run time are named too.
 */
export function nameSchemas(kinds: readonly KindDef[]): Map<Schema, string> {
  const names = new Map<Schema, string>();
  for (const [name, s] of Object.entries(sharedSchemas)) names.set(s, name);
  for (const d of kinds) if (!names.has(d.schema)) names.set(d.schema, definitionName(d));
  for (const d of kinds) {
    if (d.schema.t !== 'object') continue;
    for (const part of ['spec', 'status'] as const) {
      const s = d.schema.fields[part];
      if (s && hasFields(s) && !names.has(s)) {
        names.set(s, `${definitionName(d)}${part[0].toUpperCase()}${part.slice(1)}`);
      }
    }
  }
  return names;
}

/** Renders schemas of one document, collecting the definitions they refer to. */
export class SchemaRenderer {
  /** Definition names referred to and not yet rendered. */
  private readonly pending: string[] = [];
  private readonly seen = new Set<string>();

  constructor(
    private readonly flavor: Flavor,
    private readonly names: Map<Schema, string>,
    private readonly byName: Map<string, Schema>,
  ) {}

  private ref(name: string): OpenApiSchema {
    if (!this.seen.has(name)) {
      this.seen.add(name);
      this.pending.push(name);
    }
    return this.flavor === 'v3'
      ? { allOf: [{ $ref: `#/components/schemas/${name}` }] }
      : { $ref: `#/definitions/${name}` };
  }

  /** A definition: the object itself, never a reference to it. */
  definition(name: string, schema: Schema): OpenApiSchema {
    this.seen.add(name);
    const out = this.node(schema, name, '', true);
    const about = definitionDocs[name]?.about;
    return about ? { description: about, ...out } : out;
  }

  /** Renders the referred-to definitions until none is left. */
  drain(into: Record<string, OpenApiSchema>): void {
    for (let name = this.pending.shift(); name !== undefined; name = this.pending.shift()) {
      if (into[name]) continue;
      const scalar = (this.flavor === 'v3' ? V3_SCALAR_DEFINITIONS : SCALAR_DEFINITIONS)[name];
      const s = this.byName.get(name);
      if (scalar) into[name] = scalar;
      else if (s) into[name] = this.definition(name, s);
    }
  }

  private node(s: Schema, owner: string, path: string, root = false): OpenApiSchema {
    const named = this.names.get(s);
    if (!root && named) return this.ref(named);
    switch (s.t) {
      case 'string':
        return { type: 'string' };
      case 'int':
        return { type: 'integer', format: 'int64' };
      case 'number':
        return { type: 'number', format: 'double' };
      case 'bool':
        return { type: 'boolean' };
      case 'intOrString':
        return this.ref(INT_OR_STRING);
      case 'quantity':
        return this.ref(QUANTITY);
      case 'any':
        return this.flavor === 'v3'
          ? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }
          : { type: 'object' };
      case 'map':
        return { type: 'object', additionalProperties: this.node(s.values, owner, path) };
      case 'list':
        return { type: 'array', items: this.node(s.items, owner, `${path}[]`) };
      case 'object': {
        const docs = definitionDocs[owner];
        const properties: Record<string, OpenApiSchema> = {};
        for (const [k, child] of Object.entries(s.fields)) {
          const childPath = path ? `${path}.${k}` : k;
          const rendered = this.node(child, owner, childPath);
          const childName = this.names.get(child);
          const description =
            docs?.fields?.[childPath] ??
            (path === '' ? commonFieldDocs[k] : undefined) ??
            (childName ? definitionDocs[childName]?.about : undefined);
          properties[k] = description ? { description, ...rendered } : rendered;
          if (childName && this.flavor === 'v3') properties[k].default = {};
        }
        const out: OpenApiSchema = { type: 'object' };
        if (Object.keys(properties).length > 0) out.properties = properties;
        const required = docs?.required?.[path];
        if (required && required.length > 0) out.required = required;
        if (s.open && this.flavor === 'v3') out['x-kubernetes-preserve-unknown-fields'] = true;
        return out;
      }
    }
  }
}
