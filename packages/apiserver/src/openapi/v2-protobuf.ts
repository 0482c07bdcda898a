// The swagger 2.0 document in protobuf (gnostic's openapi.v2.Document), the
// form client-go's OpenAPISchema() asks for: kubectl reads it to validate on
// the client what the server does not (the items of a `kind: List`). Only
// what those readers use is written: swagger, info and the definitions with
// their vendor extensions (x-kubernetes-group-version-kind).
import { PbWriter } from '@kubit/wire';
import { dump } from 'js-yaml';

export const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';

type Json = Record<string, unknown>;

/** openapi.v2.NamedAny {name=1, value=2 Any{yaml=2}}: a vendor extension's value as YAML. */
function vendorExtension(w: PbWriter, field: number, name: string, value: unknown): void {
  const m = w.begin(field);
  w.stringAlways(1, name);
  const any = w.begin(2);
  w.stringAlways(2, dump(value));
  w.end(any);
  w.end(m);
}

/** openapi.v2.Schema. */
function schema(w: PbWriter, s: Json): void {
  w.string(1, s.$ref as string | undefined);
  w.string(2, s.format as string | undefined);
  w.string(4, s.description as string | undefined);
  w.bool(16, s.uniqueItems as boolean | undefined);
  for (const r of (s.required as string[] | undefined) ?? []) w.stringAlways(19, r);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') {
    const m = w.begin(21);
    const inner = w.begin(1);
    schema(w, s.additionalProperties as Json);
    w.end(inner);
    w.end(m);
  }
  if (typeof s.type === 'string') {
    const m = w.begin(22);
    w.stringAlways(1, s.type);
    w.end(m);
  }
  if (s.items && typeof s.items === 'object') {
    const m = w.begin(23);
    const inner = w.begin(1);
    schema(w, s.items as Json);
    w.end(inner);
    w.end(m);
  }
  for (const a of (s.allOf as Json[] | undefined) ?? []) {
    const m = w.begin(24);
    schema(w, a);
    w.end(m);
  }
  if (s.properties && typeof s.properties === 'object') {
    const m = w.begin(25);
    namedSchemas(w, s.properties as Record<string, Json>);
    w.end(m);
  }
  for (const [k, v] of Object.entries(s)) if (k.startsWith('x-')) vendorExtension(w, 31, k, v);
}

/** repeated NamedSchema additional_properties = 1 {name=1, value=2} (Definitions, Properties). */
function namedSchemas(w: PbWriter, byName: Record<string, Json>): void {
  for (const [name, s] of Object.entries(byName)) {
    const m = w.begin(1);
    w.stringAlways(1, name);
    const v = w.begin(2);
    schema(w, s);
    w.end(v);
    w.end(m);
  }
}

/** Encodes a swagger 2.0 document (as documents.ts builds it) as openapi.v2.Document. */
export function encodeOpenApiV2(doc: {
  swagger: string;
  info: Json;
  definitions: Record<string, Json>;
}): Buffer {
  const w = new PbWriter(1 << 16);
  w.string(1, doc.swagger);
  const info = w.begin(2);
  w.string(1, doc.info.title as string);
  w.string(2, doc.info.version as string);
  w.end(info);
  const defs = w.begin(9);
  namedSchemas(w, doc.definitions);
  w.end(defs);
  return w.finish();
}
