// GETs of /openapi/v2, /openapi/v3 and /openapi/v3/<group-version>. Answers
// are JSON, and /openapi/v2 also protobuf (client-go's OpenAPISchema() asks
// only for application/com.github.proto-openapi.spec.v2@v1.0+protobuf). A
// client that takes neither gets 406, as Kubernetes' OpenAPI handler answers.
import type { Answer } from '../nonresource.js';
import type { OpenApiDocuments } from './documents.js';
import { OPENAPI_V2_PROTOBUF } from './v2-protobuf.js';

/** The media type an answer names: Go's mime parser refuses the '@' of the asked-for spelling. */
const OPENAPI_V2_PROTOBUF_ANSWERED = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

const mediaTypes = (accept: string) => accept.split(',').map((p) => p.split(';')[0].trim().toLowerCase());
const isJson = (t: string) => t === 'application/json' || t === '*/*' || t === 'application/*';
/** Both spellings client-go has used for the v2 protobuf. */
const isV2Protobuf = (t: string) => t === OPENAPI_V2_PROTOBUF || t === OPENAPI_V2_PROTOBUF_ANSWERED;

/** Whether the Accept header takes JSON (no header does). */
function acceptsJson(accept: string): boolean {
  return !accept.trim() || mediaTypes(accept).some(isJson);
}

/** Whether the client prefers the v2 protobuf: it is listed before any JSON. */
function prefersV2Protobuf(accept: string): boolean {
  for (const t of mediaTypes(accept)) {
    if (isV2Protobuf(t)) return true;
    if (isJson(t)) return false;
  }
  return false;
}

const NOT_ACCEPTABLE: Answer = { code: 406, text: '406 - Not Acceptable\n', contentType: 'text/plain' };

/** The answer for an OpenAPI path, or undefined when `path` is none. */
export function serveOpenApi(
  path: string,
  accept: string,
  docs: OpenApiDocuments,
  query: Record<string, unknown> = {},
): Answer | undefined {
  const isOpenApi = path === '/openapi/v2' || path === '/openapi/v3' || path.startsWith('/openapi/v3/');
  if (!isOpenApi) return undefined;
  if (path === '/openapi/v3') return { code: 200, body: docs.v3Root() };
  let found: { doc: unknown; hash: string } | undefined;
  if (path === '/openapi/v2') {
    found = docs.v2();
    if (prefersV2Protobuf(accept)) {
      return { code: 200, text: docs.v2Protobuf(), contentType: OPENAPI_V2_PROTOBUF_ANSWERED };
    }
  } else {
    const gv = docs.v3Path(path.slice('/openapi/v3/'.length));
    if (!gv) return undefined;
    found = docs.v3(gv.group, gv.version);
  }
  if (!acceptsJson(accept)) return NOT_ACCEPTABLE;
  const headers: Record<string, string> = { Vary: 'Accept' };
  const asked = typeof query.hash === 'string' ? query.hash : undefined;
  if (asked !== undefined && path !== '/openapi/v2') {
    // A URL with a hash names one version of the document: an old one is sent
    // on to the current, the current may be cached for good (what kubectl does).
    if (asked !== found.hash) {
      const location = `${path}?hash=${found.hash}`;
      return { code: 301, text: '', contentType: 'text/plain', headers: { Location: location } };
    }
    headers['Cache-Control'] = 'public, immutable';
    headers.Expires = new Date(Date.now() + 365 * 24 * 3600 * 1000).toUTCString();
  }
  return { code: 200, body: found.doc, etag: `"${found.hash}"`, headers };
}
