// Image references as Docker and containerd parse them (the distribution
// reference grammar): [DOMAIN/]PATH[:TAG][@DIGEST], normalized so that
// `nginx` is docker.io/library/nginx:latest. Pure, so its rules are unit-tested.

import { CliError } from '../errors.js';

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const DOMAIN =
  /^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const NAME_MAX = 255;

export const DOCKER_HUB = 'docker.io';

export interface ImageReference {
  /** docker.io, quay.io, 127.0.0.1:5000 */
  domain: string;
  /** library/nginx, org/app */
  path: string;
  /** The tag; "latest" when neither a tag nor a digest was given. */
  tag?: string;
  digest?: string;
}

/** Why `ref` is not an image reference (Docker's words after the colon), or the parsed reference. */
export function parseReference(ref: string): ImageReference {
  const bad = (why: string) =>
    new CliError(`"${ref}" is not an image reference: invalid reference format${why ? `: ${why}` : ''}`);
  if (ref === '' || ref.trim() !== ref) throw bad('');
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw bad('bad digest');
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw bad('bad tag');
  }
  if (rest.length > NAME_MAX) throw bad(`repository name must not be more than ${NAME_MAX} characters`);
  const parts = rest.split('/');
  let domain = DOCKER_HUB;
  const first = parts[0] ?? '';
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    if (!DOMAIN.test(first)) throw bad('bad registry host');
    domain = first;
    parts.shift();
  }
  if (parts.length === 0 || parts.some((p) => !COMPONENT.test(p))) {
    throw bad(rest.toLowerCase() !== rest ? 'repository name must be lowercase' : '');
  }
  if (domain === DOCKER_HUB && parts.length === 1) parts.unshift('library');
  const path = parts.join('/');
  if (!tag && !digest) tag = 'latest';
  return { domain, path, ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) };
}

/** The fully normalized name: docker.io/library/nginx:latest. */
export function formatReference(r: ImageReference): string {
  return `${r.domain}/${r.path}${r.tag ? `:${r.tag}` : ''}${r.digest ? `@${r.digest}` : ''}`;
}

/** Whether `s` has the form of a reference at all (a path that is not a file is then taken as one). */
export function looksLikeReference(s: string): boolean {
  try {
    parseReference(s);
    return true;
  } catch {
    return false;
  }
}
