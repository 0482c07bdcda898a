// The OpenAPI documents: /openapi/v3 (an index of group-versions, each with
// the hash of its document), /openapi/v3/api/v1 and /openapi/v3/apis/<g>/<v>,
// and /openapi/v2 (the whole API in one swagger 2.0 document). Built from the
// kinds the registry serves at the time of the request (kinds added at run
// time appear), cached until that set changes.
import { createHash } from 'node:crypto';
import type { KindRegistry } from '../kinds/index.js';
import type { KindDef, SubresourceDef } from '../kinds/types.js';
import type { Schema } from '../model/schema.js';
import { definitionName, type Flavor, nameSchemas, type OpenApiSchema, SchemaRenderer } from './schemas.js';
import { encodeOpenApiV2 } from './v2-protobuf.js';

const INFO = { title: 'Kubernetes', version: 'v1.32.0-kubit' };

interface Gvk {
  group: string;
  version: string;
  kind: string;
}

function subresourceKind(def: KindDef, sub: SubresourceDef): Gvk {
  return sub.kind ?? { group: def.group, version: def.version, kind: def.kind };
}

export function gvPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

/** Query parameters of a write that kubectl looks for (fieldValidation above all). */
function writeParameters(flavor: Flavor) {
  const p = (name: string, type: string) =>
    flavor === 'v3'
      ? { name, in: 'query', schema: { type, uniqueItems: true } }
      : { name, in: 'query', type, uniqueItems: true };
  return [
    p('dryRun', 'string'),
    p('fieldManager', 'string'),
    p('fieldValidation', 'string'),
    p('force', 'boolean'),
  ];
}

const PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/apply-patch+yaml',
];

/**
 * The PATCH operation of each resource and patchable subresource, with its
 * group-version-kind and the fieldValidation parameter: kubectl reads them to
 * learn that the server validates fields itself.
 */
function patchPaths(defs: KindDef[], flavor: Flavor): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const d of defs) {
    const base = `/${gvPath(d.group, d.version)}`;
    const item = d.namespaced
      ? `${base}/namespaces/{namespace}/${d.resource}/{name}`
      : `${base}/${d.resource}/{name}`;
    const op = (operationId: string, gvk: Gvk) => ({
      tags: [d.group || 'core'],
      operationId,
      parameters: writeParameters(flavor),
      ...(flavor === 'v3'
        ? {
            requestBody: {
              content: Object.fromEntries(PATCH_TYPES.map((t) => [t, { schema: { type: 'object' } }])),
              required: true,
            },
          }
        : { consumes: PATCH_TYPES, produces: ['application/json'] }),
      responses: { '200': { description: 'OK' } },
      'x-kubernetes-action': 'patch',
      'x-kubernetes-group-version-kind': gvk,
    });
    paths[item] = { patch: op(`patch${d.kind}`, { group: d.group, version: d.version, kind: d.kind }) };
    for (const sub of d.subresources) {
      if (!sub.verbs.includes('patch')) continue;
      const name = `patch${d.kind}${sub.name[0].toUpperCase()}${sub.name.slice(1)}`;
      paths[`${item}/${sub.name}`] = { patch: op(name, subresourceKind(d, sub)) };
    }
  }
  return paths;
}

export class OpenApiDocuments {
  private cacheKey = '';
  private cache = new Map<string, { doc: unknown; hash: string }>();

  constructor(
    private readonly kinds: KindRegistry,
    /** Every served group and its versions (kinds and the storage-less reviews). */
    private readonly groupVersions: () => { group: string; versions: string[] }[],
  ) {}

  /** Drops the cache when the served kinds changed (a CRD was added or removed). */
  private cached(key: string, build: () => unknown): { doc: unknown; hash: string } {
    const now = this.kinds.all.map((d) => `${d.group}/${d.version}/${d.resource}`).join(',');
    if (now !== this.cacheKey) {
      this.cache.clear();
      this.cacheKey = now;
    }
    let hit = this.cache.get(key);
    if (!hit) {
      const doc = build();
      const hash = createHash('sha512').update(JSON.stringify(doc)).digest('hex').slice(0, 128);
      hit = { doc, hash };
      this.cache.set(key, hit);
    }
    return hit;
  }

  private definitions(defs: KindDef[], flavor: Flavor): Record<string, OpenApiSchema> {
    const names = nameSchemas(this.kinds.all);
    const byName = new Map<string, Schema>();
    for (const [s, n] of names) if (!byName.has(n)) byName.set(n, s);
    const r = new SchemaRenderer(flavor, names, byName);
    const out: Record<string, OpenApiSchema> = {};
    for (const d of defs) {
      const name = definitionName(d);
      out[name] = {
        ...r.definition(name, d.schema),
        'x-kubernetes-group-version-kind': [{ group: d.group, kind: d.kind, version: d.version }],
      };
    }
    r.drain(out);
    return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
  }

  /** The /openapi/v3 index: every served group-version and where its document is. */
  v3Root() {
    const paths: Record<string, { serverRelativeURL: string }> = {};
    for (const { group, versions } of [{ group: '', versions: ['v1'] }, ...this.groupVersions()]) {
      for (const v of versions) {
        const p = gvPath(group, v);
        paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=${this.v3(group, v).hash}` };
      }
    }
    return { paths };
  }

  /** One group-version's OpenAPI v3 document and its hash. */
  v3(group: string, version: string): { doc: unknown; hash: string } {
    return this.cached(`v3:${group}/${version}`, () => {
      const defs = this.kinds.inGroupVersion(group, version);
      return {
        openapi: '3.0.0',
        info: INFO,
        paths: patchPaths(defs, 'v3'),
        components: { schemas: this.definitions(defs, 'v3') },
      };
    });
  }

  /** The swagger 2.0 document of the whole API. */
  v2(): { doc: unknown; hash: string } {
    return this.cached('v2', () => ({
      swagger: '2.0',
      info: INFO,
      paths: patchPaths(this.kinds.all, 'v2'),
      definitions: this.definitions(this.kinds.all, 'v2'),
    }));
  }

  /** The swagger 2.0 document as gnostic's protobuf, encoded once per set of kinds. */
  v2Protobuf(): Buffer {
    const { doc, hash } = this.v2();
    if (this.v2pb?.hash !== hash) {
      this.v2pb = { hash, bytes: encodeOpenApiV2(doc as Parameters<typeof encodeOpenApiV2>[0]) };
    }
    return this.v2pb.bytes;
  }
  private v2pb: { hash: string; bytes: Buffer } | undefined;

  /** The group-version `path` (after /openapi/v3/) names, when it is served. */
  v3Path(path: string): { group: string; version: string } | undefined {
    const p = path.split('/').filter((x) => x);
    if (p[0] === 'api' && p.length === 2 && p[1] === 'v1') return { group: '', version: 'v1' };
    if (p[0] === 'apis' && p.length === 3) {
      const gv = this.groupVersions().find((g) => g.group === p[1] && g.versions.includes(p[2]));
      if (gv) return { group: p[1], version: p[2] };
    }
    return undefined;
  }
}
