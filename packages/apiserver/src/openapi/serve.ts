// GETs of /openapi/v2, /openapi/v3 and /openapi/v3/<group-version>. Answers
// are JSON; a client that takes only protobuf (client-go's v2 client asks for
// application/com.github.proto-openapi.spec.v2@v1.0+protobuf first) gets 406,
// as Kubernetes' OpenAPI handler answers a type it cannot write, and then asks
// again for JSON.
import type { Answer } from '../nonresource.js';
import type { OpenApiDocuments } from './documents.js';

/** Whether the Accept header takes JSON (no header, or a wildcard, does). */
function acceptsJson(accept: string): boolean {
  if (!accept.trim()) return true;
  return accept
    .split(',')
    .map((p) => p.split(';')[0].trim().toLowerCase())
    .some((t) => t === 'application/json' || t === '*/*' || t === 'application/*');
}

const NOT_ACCEPTABLE: Answer = { code: 406, text: '406 - Not Acceptable\n', contentType: 'text/plain' };

/** The answer for an OpenAPI path, or undefined when `path` is none. */
export function serveOpenApi(path: string, accept: string, docs: OpenApiDocuments): Answer | undefined {
  const isOpenApi = path === '/openapi/v2' || path === '/openapi/v3' || path.startsWith('/openapi/v3/');
  if (!isOpenApi) return undefined;
  if (path === '/openapi/v3') return { code: 200, body: docs.v3Root() };
  let found: { doc: unknown; hash: string } | undefined;
  if (path === '/openapi/v2') found = docs.v2();
  else {
    const gv = docs.v3Path(path.slice('/openapi/v3/'.length));
    if (!gv) return undefined;
    found = docs.v3(gv.group, gv.version);
  }
  if (!acceptsJson(accept)) return NOT_ACCEPTABLE;
  return { code: 200, body: found.doc, etag: `"${found.hash}"` };
}
