// Registry credentials for a pull, from a pod's imagePullSecrets, matched to
// the image the way Kubernetes' kubelet credential keyring matches them
// (pkg/credentialprovider): each key of a docker config is a registry host
// (globs allowed per dot-separated part, a port only when the key has one)
// with an optional path prefix; keys are tried most specific first; Docker
// Hub's own key (index.docker.io) serves every image on Docker Hub. Pure: no
// I/O, so the rules are unit-tested on their own.

import type { AuthConfig } from '@kubit/cri';
import type { Secret } from 'kubernetes-types/core/v1.js';

export const DOCKER_CONFIG_JSON_TYPE = 'kubernetes.io/dockerconfigjson';
export const DOCKER_CONFIG_JSON_KEY = '.dockerconfigjson';
export const DOCKERCFG_TYPE = 'kubernetes.io/dockercfg';
export const DOCKERCFG_KEY = '.dockercfg';

/** Docker Hub's key in docker configs ("https://index.docker.io/v1/" once parsed). */
const DOCKER_HUB_KEY = 'index.docker.io';

/** One registry's credentials as a docker config holds them (auth decoded). */
export interface Credential {
  username: string;
  password: string;
  /** base64 of "username:password", as written. */
  auth: string;
  identityToken: string;
  registryToken: string;
}

export interface Keyring {
  /** Keys (host[:port][/path]) most specific first; several may share one key. */
  entries: { key: string; credential: Credential }[];
}

/** A secret an image pull cannot use, and why (the pull fails with this message). */
export class PullSecretError extends Error {
  override name = 'PullSecretError';
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function credentialOf(entry: unknown, where: string): Credential {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
    throw new PullSecretError(`${where} is not an object`);
  const e = entry as Record<string, unknown>;
  let username = str(e.username);
  let password = str(e.password);
  const auth = str(e.auth);
  if (auth && !username && !password) {
    // Docker writes only "auth" (base64 of user:password); the password may hold colons.
    const decoded = Buffer.from(auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new PullSecretError(`${where}.auth is not base64 of "username:password"`);
    username = decoded.slice(0, colon);
    password = decoded.slice(colon + 1);
  }
  return {
    username,
    password,
    auth,
    identityToken: str(e.identitytoken) || str(e.identityToken),
    registryToken: str(e.registrytoken) || str(e.registryToken),
  };
}

/** host[:port][/path] of a docker config key: scheme dropped, /v1/ and /v2/ API prefixes dropped. */
export function keyOf(location: string): string {
  const rest = location.replace(/^https?:\/\//, '');
  const slash = rest.indexOf('/');
  const host = (slash < 0 ? rest : rest.slice(0, slash)).toLowerCase();
  let path = slash < 0 ? '' : rest.slice(slash);
  if (path.startsWith('/v1/') || path.startsWith('/v2/')) path = path.slice(3);
  if (path === '/') path = '';
  return host + path;
}

/** The registries → credentials of one dockerconfigjson or dockercfg secret. */
export function credentialsOfSecret(secret: Secret): { key: string; credential: Credential }[] {
  const name = `${secret.metadata?.namespace ?? ''}/${secret.metadata?.name ?? ''}`;
  const type = secret.type ?? '';
  const dataKey =
    type === DOCKER_CONFIG_JSON_TYPE ? DOCKER_CONFIG_JSON_KEY : type === DOCKERCFG_TYPE ? DOCKERCFG_KEY : '';
  // Kubernetes reads only these two types for pulls; other secrets are skipped, as there.
  if (!dataKey) return [];
  const raw = secret.data?.[dataKey];
  if (!raw) return [];
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(raw, 'base64').toString('utf8'));
  } catch (e) {
    throw new PullSecretError(
      `image pull secret ${name}: ${dataKey} is not valid JSON (${(e as Error).message})`,
    );
  }
  const where = `image pull secret ${name}: ${dataKey}`;
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new PullSecretError(`${where} is not a JSON object`);
  let auths = doc as Record<string, unknown>;
  if (dataKey === DOCKER_CONFIG_JSON_KEY) {
    const a = auths.auths;
    if (typeof a !== 'object' || a === null || Array.isArray(a))
      throw new PullSecretError(`${where} has no "auths" object`);
    auths = a as Record<string, unknown>;
  }
  return Object.entries(auths).map(([location, entry]) => ({
    key: keyOf(location),
    credential: credentialOf(entry, `${where}["${location}"]`),
  }));
}

export function keyringOf(secrets: Secret[]): Keyring {
  const entries = secrets.flatMap(credentialsOfSecret).filter((e) => e.key !== '');
  // Reverse order: "quay.io/org" before "quay.io", "a.example.com" before "*.example.com".
  entries.sort((a, b) => (a.key < b.key ? 1 : a.key > b.key ? -1 : 0));
  return { entries };
}

/**
 * The repository an image reference names, normalized as Docker does:
 * `nginx:1` → docker.io/library/nginx, `user/app` → docker.io/user/app,
 * `reg:5000/a/b@sha256:…` → reg:5000/a/b.
 */
export function repositoryOf(image: string): string {
  let ref = image;
  const at = ref.indexOf('@');
  if (at >= 0) ref = ref.slice(0, at);
  const lastSlash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  if (colon > lastSlash) ref = ref.slice(0, colon);
  const first = ref.split('/', 1)[0] ?? '';
  const hasRegistry =
    ref.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasRegistry) return ref;
  return ref.includes('/') ? `docker.io/${ref}` : `docker.io/library/${ref}`;
}

function splitHostPort(hostPort: string): { parts: string[]; port: string } {
  const colon = hostPort.lastIndexOf(':');
  const host = colon < 0 ? hostPort : hostPort.slice(0, colon);
  return { parts: host.split('.'), port: colon < 0 ? '' : hostPort.slice(colon + 1) };
}

/** A shell-style glob on one host part: * any run, ? one character, [...] a class. */
function globMatches(glob: string, text: string): boolean {
  let re = '^';
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i] ?? '';
    if (ch === '*') re += '[^.]*';
    else if (ch === '?') re += '[^.]';
    else if (ch === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end < 0) return false;
      re += `[${glob
        .slice(i + 1, end)
        .replace(/^!/, '^')
        .replace(/\\/g, '\\\\')}]`;
      i = end;
    } else re += ch.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`${re}$`).test(text);
}

/** Whether a keyring key (host glob, port, path prefix) matches a repository. */
export function keyMatches(key: string, repository: string): boolean {
  const split = (s: string) => {
    const slash = s.indexOf('/');
    return slash < 0 ? { hostPort: s, path: '' } : { hostPort: s.slice(0, slash), path: s.slice(slash) };
  };
  const k = split(key);
  const r = split(repository);
  const kh = splitHostPort(k.hostPort);
  const rh = splitHostPort(r.hostPort.toLowerCase());
  if (kh.parts.length !== rh.parts.length || kh.port !== rh.port) return false;
  if (!kh.parts.every((p, i) => globMatches(p, rh.parts[i] ?? ''))) return false;
  return r.path.startsWith(k.path);
}

/** Whether the image is pulled from Docker Hub, which index.docker.io's credentials serve. */
function onDockerHub(repository: string): boolean {
  return repository.startsWith('docker.io/');
}

/**
 * The credentials to try for `image`, most specific first; empty: pull
 * anonymously. Mirrors of a registry see the same credentials (containerd
 * offers them to whichever host challenges).
 */
export function lookupCredentials(keyring: Keyring, image: string): AuthConfig[] {
  const repository = repositoryOf(image);
  let found = keyring.entries.filter((e) => keyMatches(e.key, repository));
  if (found.length === 0 && onDockerHub(repository))
    found = keyring.entries.filter((e) => e.key === DOCKER_HUB_KEY);
  return found.map(({ credential: c }) => ({
    username: c.username,
    password: c.password,
    auth: c.auth,
    identityToken: c.identityToken,
    registryToken: c.registryToken,
  }));
}
