// The swagger 2.0 document in protobuf (gnostic's openapi.v2.Document), the
// form client-go's OpenAPISchema() asks for: kubectl reads it to validate on
// the client what the server does not (the items of a `kind: List`), and
// kubectl before v3 documents reads its PATCH operations' query parameters to
// learn that the server validates fields. Only what those readers use is
// written: swagger, info, the PATCH operations and the definitions, with
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

/** openapi.v2.Operation: tags, operationId, consumes, produces, query parameters, responses, extensions. */
function operation(w: PbWriter, op: Json): void {
  for (const t of (op.tags as string[] | undefined) ?? []) w.stringAlways(1, t);
  w.string(5, op.operationId as string | undefined);
  for (const t of (op.produces as string[] | undefined) ?? []) w.stringAlways(6, t);
  for (const t of (op.consumes as string[] | undefined) ?? []) w.stringAlways(7, t);
  for (const p of (op.parameters as Json[] | undefined) ?? []) {
    // ParametersItem{parameter=1} → Parameter{non_body_parameter=2} → NonBodyParameter{query=3}
    const item = w.begin(8);
    const param = w.begin(1);
    const nonBody = w.begin(2);
    const query = w.begin(3);
    w.string(2, p.in as string);
    w.string(4, p.name as string);
    w.string(6, p.type as string);
    w.bool(20, p.uniqueItems as boolean | undefined);
    w.end(query);
    w.end(nonBody);
    w.end(param);
    w.end(item);
  }
  const responses = w.begin(9);
  for (const [code, r] of Object.entries((op.responses as Record<string, Json> | undefined) ?? {})) {
    // NamedResponseValue{name=1, value=2 ResponseValue{response=1 Response{description=1}}}
    const named = w.begin(1);
    w.stringAlways(1, code);
    const value = w.begin(2);
    const response = w.begin(1);
    w.string(1, r.description as string | undefined);
    w.end(response);
    w.end(value);
    w.end(named);
  }
  w.end(responses);
  for (const [k, v] of Object.entries(op)) if (k.startsWith('x-')) vendorExtension(w, 13, k, v);
}

/** openapi.v2.Paths {path=2 NamedPathItem{name=1, value=2 PathItem{patch=8}}}. */
function paths(w: PbWriter, byPath: Record<string, { patch?: Json }>): void {
  for (const [path, item] of Object.entries(byPath)) {
    const named = w.begin(2);
    w.stringAlways(1, path);
    const value = w.begin(2);
    if (item.patch) {
      const op = w.begin(8);
      operation(w, item.patch);
      w.end(op);
    }
    w.end(value);
    w.end(named);
  }
}

/** Encodes a swagger 2.0 document (as documents.ts builds it) as openapi.v2.Document. */
export function encodeOpenApiV2(doc: {
  swagger: string;
  info: Json;
  paths: Record<string, { patch?: Json }>;
  definitions: Record<string, Json>;
}): Buffer {
  const w = new PbWriter(1 << 16);
  w.string(1, doc.swagger);
  const info = w.begin(2);
  w.string(1, doc.info.title as string);
  w.string(2, doc.info.version as string);
  w.end(info);
  const p = w.begin(8);
  paths(w, doc.paths);
  w.end(p);
  const defs = w.begin(9);
  namedSchemas(w, doc.definitions);
  w.end(defs);
  return w.finish();
}
