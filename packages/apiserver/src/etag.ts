// Entity tags of the discovery and OpenAPI documents: clients (kubectl's disk
// cache, client-go's OpenAPI clients) send the last one back in If-None-Match
// and take a 304 as "what you have is current".
import { createHash } from 'node:crypto';

export function etagOf(body: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(body)).digest('hex')}"`;
}

/** Whether an If-None-Match header names `etag` (or is "*"); weak tags compare equal to strong ones. */
export function matchesEtag(ifNoneMatch: string | string[] | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const tags = (Array.isArray(ifNoneMatch) ? ifNoneMatch.join(',') : ifNoneMatch)
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''));
  return tags.includes('*') || tags.includes(etag);
}
