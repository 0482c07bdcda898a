// What every verb needs from the global flags: the client configuration, a
// client, the namespace, and resource types resolved through (cached) discovery.

import { join } from 'node:path';
import type { APIResourceInfo, ClientConfig, KubeClient, KubeConfigOverrides } from '@kubit/client';
import { CliError } from './errors.js';
import type { IO } from './io.js';
import { suggestions } from './suggest.js';

/** The global flags: kubectl's kubeconfig overrides (the client's one type) and --request-timeout. */
export interface GlobalOptions extends KubeConfigOverrides {
  requestTimeout?: string;
}

type ClientModule = typeof import('@kubit/client');

export class Factory {
  private mod: ClientModule | undefined;
  private cfg: ClientConfig | undefined;
  private kube: KubeClient | undefined;
  private discovered: APIResourceInfo[] | undefined;
  private fresh = false;

  constructor(
    readonly opts: GlobalOptions,
    readonly io: IO,
  ) {}

  /** @kubit/client, loaded on first use so verbs that do not talk to a server start fast. */
  async lib(): Promise<ClientModule> {
    this.mod ??= await import('@kubit/client');
    return this.mod;
  }

  async clientConfig(): Promise<ClientConfig> {
    if (!this.cfg) {
      const lib = await this.lib();
      // The overrides are the global flags themselves: loadClientConfig reads only its own fields.
      this.cfg = lib.loadClientConfig(this.opts, this.io.env);
    }
    return this.cfg;
  }

  async client(): Promise<KubeClient> {
    if (!this.kube) {
      const lib = await this.lib();
      const timeoutMs = this.opts.requestTimeout ? parseDurationMs(this.opts.requestTimeout) : 30_000;
      // The CLI fails fast on a dead server (one quick retry), as kubectl does.
      this.kube = new lib.KubeClient(await this.clientConfig(), {
        timeoutMs: timeoutMs || 30_000,
        retry: { maxRetries: 1, baseDelayMs: 100, maxDelayMs: 1000 },
        userAgent: `kubit/0.1.0 (${process.platform}/${process.arch})`,
      });
    }
    return this.kube;
  }

  async namespace(): Promise<string> {
    return (await this.clientConfig()).namespace;
  }

  close(): void {
    this.kube?.close();
  }

  private cacheFile(server: string): string {
    const home = this.io.env.HOME ?? '/tmp';
    const host = server.replace(/^https?:\/\//, '').replace(/[^A-Za-z0-9.-]/g, '_');
    return join(home, '.kube', 'cache', 'kubit', host, 'discovery.json');
  }

  /** Every resource the server serves (cached on disk for ten minutes). */
  async resources(refresh = false): Promise<APIResourceInfo[]> {
    if (this.discovered && !refresh) return this.discovered;
    const lib = await this.lib();
    const client = await this.client();
    this.discovered = await lib.cachedDiscovery(
      client,
      this.cacheFile(client.config.server),
      10 * 60_000,
      refresh,
    );
    if (refresh) this.fresh = true;
    return this.discovered;
  }

  /** The resource a user typed ("po", "Pods", "deployment.apps"), or an error with suggestions. */
  async resolve(typed: string): Promise<APIResourceInfo> {
    const lib = await this.lib();
    let found = lib.resolveResource(await this.resources(), typed);
    if (!found && !this.fresh) found = lib.resolveResource(await this.resources(true), typed);
    if (found) return found;
    const names = (this.discovered ?? [])
      .filter((r) => !r.subresource)
      .flatMap((r) => [r.resource, r.singularName, ...r.shortNames]);
    const close = suggestions(typed, names, 1);
    let msg = `error: the server doesn't have a resource type "${typed}"`;
    if (close.length > 0) msg += `\n\nDid you mean this?\n\t${close.join('\n\t')}`;
    throw new CliError(msg);
  }

  /** The resource for an object's apiVersion and kind (from a manifest). */
  async resolveKind(apiVersion: string, kind: string): Promise<APIResourceInfo> {
    const lib = await this.lib();
    const { group, version } = lib.parseApiVersion(apiVersion);
    const match = (all: APIResourceInfo[]) =>
      all.find((r) => !r.subresource && r.group === group && r.version === version && r.kind === kind);
    let found = match(await this.resources());
    if (!found && !this.fresh) found = match(await this.resources(true));
    if (!found) {
      throw new CliError(
        `error: resource mapping not found for name: "" namespace: "" from "": no matches for kind "${kind}" in version "${apiVersion}"\nensure CRDs are installed first`,
      );
    }
    return found;
  }
}

/** "30s", "5m", "1h", "250ms", or bare seconds → ms (0 for "0"). */
export function parseDurationMs(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) {
    // Go-style compound durations such as 1m30s.
    const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
    if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text.trim())
      throw new CliError(`invalid duration "${text}"`);
    return parts.reduce((sum, p) => sum + toMs(Number(p[1]), p[2]), 0);
  }
  return toMs(Number(m[1]), m[2] ?? 's');
}

function toMs(n: number, unit: string): number {
  switch (unit) {
    case 'ms':
      return n;
    case 'm':
      return n * 60_000;
    case 'h':
      return n * 3_600_000;
    default:
      return n * 1000;
  }
}
