// kubeconfig files as kubectl reads them: --kubeconfig names one file; otherwise
// $KUBECONFIG lists several (":"-separated) merged first-wins; otherwise
// ~/.kube/config. A context picks a cluster, a user and a namespace; command-line
// overrides win over all of it. Relative file paths inside a kubeconfig are
// relative to the file that names them.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import * as yaml from 'js-yaml';

export interface KubeCluster {
  server?: string;
  'certificate-authority'?: string;
  'certificate-authority-data'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'tls-server-name'?: string;
}
export interface KubeUser {
  'client-certificate'?: string;
  'client-certificate-data'?: string;
  'client-key'?: string;
  'client-key-data'?: string;
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
}
export interface KubeContext {
  cluster: string;
  user: string;
  namespace?: string;
}
export interface KubeConfig {
  apiVersion?: string;
  kind?: string;
  preferences?: Record<string, unknown>;
  clusters: { name: string; cluster: KubeCluster }[];
  users: { name: string; user: KubeUser }[];
  contexts: { name: string; context: KubeContext }[];
  'current-context'?: string;
}

/** A kubeconfig together with the file each entry came from (for writing back). */
export interface LoadedKubeConfig {
  config: KubeConfig;
  /** Files in precedence order (only those that exist). */
  files: string[];
  /** The file that should receive edits when none defines the entry yet. */
  primaryFile: string;
  origin: {
    clusters: Map<string, string>;
    users: Map<string, string>;
    contexts: Map<string, string>;
    currentContext?: string;
  };
}

/** Everything needed to talk to one apiserver. */
export interface ClientConfig {
  server: string;
  /** PEM bundle of trusted CAs; Node's defaults when absent. */
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  tokenFile?: string;
  insecureSkipTLSVerify?: boolean;
  tlsServerName?: string;
  /** The namespace of the selected context ("default" when none). */
  namespace: string;
  /** Name of the context used ('' when none). */
  contextName?: string;
}

/** Command-line overrides, named after kubectl's flags. */
export interface KubeConfigOverrides {
  kubeconfig?: string;
  context?: string;
  cluster?: string;
  user?: string;
  namespace?: string;
  server?: string;
  token?: string;
  certificateAuthority?: string;
  clientCertificate?: string;
  clientKey?: string;
  insecureSkipTlsVerify?: boolean;
}

export class KubeConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeConfigError';
  }
}

export function emptyKubeConfig(): KubeConfig {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    preferences: {},
    clusters: [],
    users: [],
    contexts: [],
    'current-context': '',
  };
}

function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Makes relative paths in a file's entries absolute against that file's directory. */
function absolutize<T extends object>(entry: T, keys: readonly string[], base: string): T {
  const out = { ...entry } as Record<string, unknown>;
  for (const k of keys) {
    const v = out[k];
    if (typeof v === 'string' && v && !isAbsolute(v)) out[k] = resolve(base, v);
  }
  return out as T;
}

/** Parses one kubeconfig file's text; `file` is used for messages and relative paths. */
export function parseKubeConfig(text: string, file = '<kubeconfig>'): KubeConfig {
  let doc: unknown;
  try {
    doc = text.trim() ? yaml.load(text) : {};
  } catch (e) {
    throw new KubeConfigError(
      `error loading config file "${file}": ${e instanceof Error ? e.message.split('\n')[0] : e}`,
    );
  }
  if (doc === null || doc === undefined) doc = {};
  if (!isRecord(doc)) throw new KubeConfigError(`error loading config file "${file}": not a mapping`);
  const base = dirname(resolve(file));
  const cfg = emptyKubeConfig();
  if (typeof doc.apiVersion === 'string') cfg.apiVersion = doc.apiVersion;
  if (isRecord(doc.preferences)) cfg.preferences = doc.preferences;
  cfg['current-context'] = typeof doc['current-context'] === 'string' ? doc['current-context'] : '';
  for (const c of asArray(doc.clusters)) {
    if (!isRecord(c) || typeof c.name !== 'string') continue;
    const cluster = isRecord(c.cluster) ? (c.cluster as KubeCluster) : {};
    cfg.clusters.push({ name: c.name, cluster: absolutize(cluster, ['certificate-authority'], base) });
  }
  for (const u of asArray(doc.users)) {
    if (!isRecord(u) || typeof u.name !== 'string') continue;
    const user = isRecord(u.user) ? (u.user as KubeUser) : {};
    cfg.users.push({
      name: u.name,
      user: absolutize(user, ['client-certificate', 'client-key', 'tokenFile'], base),
    });
  }
  for (const c of asArray(doc.contexts)) {
    if (!isRecord(c) || typeof c.name !== 'string') continue;
    const ctx = isRecord(c.context) ? c.context : {};
    cfg.contexts.push({
      name: c.name,
      context: {
        cluster: typeof ctx.cluster === 'string' ? ctx.cluster : '',
        user: typeof ctx.user === 'string' ? ctx.user : '',
        ...(typeof ctx.namespace === 'string' && ctx.namespace ? { namespace: ctx.namespace } : {}),
      },
    });
  }
  return cfg;
}

/** The files kubectl would read, in precedence order. */
export function kubeconfigFiles(explicit?: string, env: NodeJS.ProcessEnv = process.env): string[] {
  if (explicit) return [resolve(explicit)];
  const list = env.KUBECONFIG;
  if (list) {
    const seen = new Set<string>();
    const out: string[] = [];
    for (const f of list.split(delimiter)) {
      if (!f) continue;
      const abs = resolve(f);
      if (!seen.has(abs)) {
        seen.add(abs);
        out.push(abs);
      }
    }
    return out;
  }
  return [join(env.HOME || homedir(), '.kube', 'config')];
}

/** Merges configs, the first one to define a name (or current-context) winning. */
export function mergeKubeConfigs(configs: readonly { file: string; config: KubeConfig }[]): LoadedKubeConfig {
  const merged = emptyKubeConfig();
  const origin: LoadedKubeConfig['origin'] = { clusters: new Map(), users: new Map(), contexts: new Map() };
  for (const { file, config } of configs) {
    if (!merged['current-context'] && config['current-context']) {
      merged['current-context'] = config['current-context'];
      origin.currentContext = file;
    }
    for (const c of config.clusters) {
      if (origin.clusters.has(c.name)) continue;
      origin.clusters.set(c.name, file);
      merged.clusters.push(c);
    }
    for (const u of config.users) {
      if (origin.users.has(u.name)) continue;
      origin.users.set(u.name, file);
      merged.users.push(u);
    }
    for (const c of config.contexts) {
      if (origin.contexts.has(c.name)) continue;
      origin.contexts.set(c.name, file);
      merged.contexts.push(c);
    }
    if (config.preferences && Object.keys(merged.preferences ?? {}).length === 0)
      merged.preferences = config.preferences;
  }
  const files = configs.map((c) => c.file);
  return { config: merged, files, primaryFile: files[0] ?? '', origin };
}

/** Reads and merges the kubeconfig files kubectl would use. */
export function loadKubeConfig(explicit?: string, env: NodeJS.ProcessEnv = process.env): LoadedKubeConfig {
  const candidates = kubeconfigFiles(explicit, env);
  const loaded: { file: string; config: KubeConfig }[] = [];
  for (const file of candidates) {
    if (!existsSync(file)) {
      if (explicit) throw new KubeConfigError(`stat ${explicit}: no such file or directory`);
      continue;
    }
    loaded.push({ file, config: parseKubeConfig(readFileSync(file, 'utf8'), file) });
  }
  const result = mergeKubeConfigs(loaded);
  // Edits go to the first file named even if it does not exist yet, as kubectl does.
  result.primaryFile = candidates[0] ?? '';
  return result;
}

function readPem(file: string, what: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new KubeConfigError(
      `unable to read ${what} from "${file}": ${code === 'ENOENT' ? 'no such file or directory' : String(e)}`,
    );
  }
}

function fromData(data: string, what: string): Buffer {
  const buf = Buffer.from(data, 'base64');
  if (buf.length === 0) throw new KubeConfigError(`${what} is not valid base64`);
  return buf;
}

/** Picks the context, cluster and user and applies overrides: what a client needs. */
export function resolveClientConfig(loaded: KubeConfig, overrides: KubeConfigOverrides = {}): ClientConfig {
  const contextName = overrides.context || loaded['current-context'] || '';
  let context: KubeContext | undefined;
  if (contextName) {
    context = loaded.contexts.find((c) => c.name === contextName)?.context;
    if (!context && overrides.context) throw new KubeConfigError(`context "${contextName}" does not exist`);
  }
  const clusterName = overrides.cluster || context?.cluster || '';
  const userName = overrides.user || context?.user || '';
  const cluster = clusterName ? loaded.clusters.find((c) => c.name === clusterName)?.cluster : undefined;
  if (clusterName && !cluster && overrides.cluster)
    throw new KubeConfigError(`cluster "${clusterName}" does not exist`);
  const user = userName ? (loaded.users.find((u) => u.name === userName)?.user ?? {}) : {};
  if (contextName && !context && !overrides.server) {
    throw new KubeConfigError(`context was not found for specified context: ${contextName}`);
  }

  const cfg: ClientConfig = { server: '', namespace: 'default', contextName: context ? contextName : '' };
  cfg.server = overrides.server || cluster?.server || 'http://localhost:8080';
  if (!/^[a-z]+:\/\//i.test(cfg.server)) cfg.server = `https://${cfg.server}`;
  cfg.server = cfg.server.replace(/\/+$/, '');

  if (overrides.insecureSkipTlsVerify !== undefined)
    cfg.insecureSkipTLSVerify = overrides.insecureSkipTlsVerify;
  else if (cluster?.['insecure-skip-tls-verify']) cfg.insecureSkipTLSVerify = true;
  if (overrides.certificateAuthority)
    cfg.ca = readPem(overrides.certificateAuthority, 'certificate-authority');
  else if (cluster?.['certificate-authority-data'])
    cfg.ca = fromData(cluster['certificate-authority-data'], 'certificate-authority-data');
  else if (cluster?.['certificate-authority'])
    cfg.ca = readPem(cluster['certificate-authority'], 'certificate-authority');
  if (cluster?.['tls-server-name']) cfg.tlsServerName = cluster['tls-server-name'];
  if (cfg.insecureSkipTLSVerify && cfg.ca && overrides.insecureSkipTlsVerify) {
    // kubectl refuses both at once; a CA from the file is dropped when the flag asks for insecure.
    cfg.ca = undefined;
  }

  // Credentials from flags replace the user's entirely, as kubectl's overrides do.
  const flagCreds = overrides.token || overrides.clientCertificate || overrides.clientKey;
  if (overrides.token) cfg.token = overrides.token;
  if (overrides.clientCertificate) cfg.cert = readPem(overrides.clientCertificate, 'client-certificate');
  if (overrides.clientKey) cfg.key = readPem(overrides.clientKey, 'client-key');
  if (!flagCreds) {
    if (user['client-certificate-data'])
      cfg.cert = fromData(user['client-certificate-data'], 'client-certificate-data');
    else if (user['client-certificate']) cfg.cert = readPem(user['client-certificate'], 'client-certificate');
    if (user['client-key-data']) cfg.key = fromData(user['client-key-data'], 'client-key-data');
    else if (user['client-key']) cfg.key = readPem(user['client-key'], 'client-key');
    if (user.token) cfg.token = user.token;
    else if (user.tokenFile) cfg.tokenFile = user.tokenFile;
  }
  if ((cfg.cert && !cfg.key) || (!cfg.cert && cfg.key)) {
    throw new KubeConfigError('client-cert-data and client-key-data must be specified together');
  }
  cfg.namespace = overrides.namespace || context?.namespace || 'default';
  return cfg;
}

/** kubeconfig loading in one call: files + context + overrides → ClientConfig. */
export function loadClientConfig(
  overrides: KubeConfigOverrides = {},
  env: NodeJS.ProcessEnv = process.env,
): ClientConfig {
  return resolveClientConfig(loadKubeConfig(overrides.kubeconfig, env).config, overrides);
}

/**
 * Edits one kubeconfig file in place, keeping fields Kubit does not model
 * (exec plugins, extensions). The file is created when absent.
 */
export function updateKubeConfigFile(file: string, edit: (raw: Record<string, unknown>) => void): void {
  let raw: Record<string, unknown> = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [],
    contexts: [],
    users: [],
    'current-context': '',
    preferences: {},
  };
  if (existsSync(file)) {
    const text = readFileSync(file, 'utf8');
    const doc = text.trim() ? yaml.load(text) : {};
    if (isRecord(doc)) raw = doc;
  }
  edit(raw);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, yaml.dump(raw, { lineWidth: -1 }), { mode: 0o600 });
}

/** A client-certificate kubeconfig: one cluster, user and context, files named by path. */
export interface CertKubeconfigInput {
  server: string;
  caFile: string;
  certFile: string;
  keyFile: string;
  user: string;
  /** The context's namespace; none (so "default") when absent. */
  namespace?: string;
}

/**
 * The YAML of a kubeconfig for a client certificate, as kubectl and Kubit read
 * it: cluster and context "kubit", the user named as given. Written with
 * js-yaml, so paths and names are quoted wherever YAML needs it.
 */
export function certKubeconfigYaml(k: CertKubeconfigInput): string {
  const config: KubeConfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'kubit', cluster: { server: k.server, 'certificate-authority': k.caFile } }],
    users: [{ name: k.user, user: { 'client-certificate': k.certFile, 'client-key': k.keyFile } }],
    contexts: [
      {
        name: 'kubit',
        context: { cluster: 'kubit', user: k.user, ...(k.namespace ? { namespace: k.namespace } : {}) },
      },
    ],
    'current-context': 'kubit',
  };
  return yaml.dump(config, { lineWidth: -1 });
}
