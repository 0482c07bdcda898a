// API discovery: which resources the server serves (/api, /apis and each
// group version), and resolving what a user typed ("po", "Pods", "deploy",
// "deployments.apps") to one of them, as kubectl's RESTMapper does.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { KubeClient } from './client.js';
import type { ResourceRef } from './resources.js';

export interface APIResourceInfo extends ResourceRef {
  kind: string;
  singularName: string;
  shortNames: string[];
  verbs: string[];
  categories: string[];
  /** Subresources are listed as "pods/status"; kept out of name resolution. */
  subresource: boolean;
  /** The group's preferred version. */
  preferred: boolean;
}

interface RawAPIResource {
  name: string;
  singularName?: string;
  namespaced?: boolean;
  kind: string;
  verbs?: string[];
  shortNames?: string[];
  categories?: string[];
}

interface RawGroupList {
  groups?: {
    name: string;
    versions: { groupVersion: string; version: string }[];
    preferredVersion?: { version: string };
  }[];
}

/** Reads the server's API discovery documents. */
export async function discoverResources(client: KubeClient): Promise<APIResourceInfo[]> {
  const versions: { group: string; version: string; preferred: boolean }[] = [];
  const core = await client.request<{ versions?: string[] }>({ method: 'GET', path: '/api' });
  for (const v of core.versions ?? ['v1'])
    versions.push({ group: '', version: v, preferred: v === (core.versions ?? ['v1'])[0] });
  let groups: RawGroupList = {};
  try {
    groups = await client.request<RawGroupList>({ method: 'GET', path: '/apis' });
  } catch {
    groups = {};
  }
  for (const g of groups.groups ?? []) {
    const preferred = g.preferredVersion?.version ?? g.versions[0]?.version;
    for (const v of g.versions)
      versions.push({ group: g.name, version: v.version, preferred: v.version === preferred });
  }
  const lists = await Promise.all(
    versions.map(async (gv) => {
      const path = gv.group ? `/apis/${gv.group}/${gv.version}` : `/api/${gv.version}`;
      try {
        const list = await client.request<{ resources?: RawAPIResource[] }>({ method: 'GET', path });
        return (list.resources ?? []).map(
          (r): APIResourceInfo => ({
            group: gv.group,
            version: gv.version,
            resource: r.name,
            kind: r.kind,
            namespaced: r.namespaced ?? false,
            singularName: r.singularName || r.kind.toLowerCase(),
            shortNames: r.shortNames ?? [],
            verbs: r.verbs ?? [],
            categories: r.categories ?? [],
            subresource: r.name.includes('/'),
            preferred: gv.preferred,
          }),
        );
      } catch {
        return [];
      }
    }),
  );
  return lists.flat();
}

/** Discovery results cached in a file for `ttlMs` (kubectl keeps its cache for hours). */
export async function cachedDiscovery(
  client: KubeClient,
  cacheFile: string | undefined,
  ttlMs = 10 * 60_000,
  refresh = false,
): Promise<APIResourceInfo[]> {
  if (cacheFile && !refresh && existsSync(cacheFile)) {
    try {
      const cached = JSON.parse(readFileSync(cacheFile, 'utf8')) as {
        at: number;
        resources: APIResourceInfo[];
      };
      if (Date.now() - cached.at < ttlMs && Array.isArray(cached.resources)) return cached.resources;
    } catch {
      // a broken cache is refreshed below
    }
  }
  const resources = await discoverResources(client);
  if (cacheFile) {
    try {
      mkdirSync(dirname(cacheFile), { recursive: true });
      writeFileSync(cacheFile, JSON.stringify({ at: Date.now(), resources }));
    } catch {
      // caching is an optimisation only
    }
  }
  return resources;
}

/**
 * Finds the resource a user means: plural, singular, short name or kind in any
 * case, optionally qualified by group ("deployments.apps") or version and group
 * ("deployments.v1.apps"). Prefers the group's preferred version, then the core group.
 */
export function resolveResource(all: readonly APIResourceInfo[], typed: string): APIResourceInfo | undefined {
  const lower = typed.toLowerCase();
  const candidates: { name: string; group?: string; version?: string }[] = [{ name: lower }];
  const dot = lower.indexOf('.');
  if (dot > 0) {
    const name = lower.slice(0, dot);
    const rest = lower.slice(dot + 1);
    candidates.push({ name, group: rest });
    const dot2 = rest.indexOf('.');
    if (dot2 > 0) candidates.push({ name, version: rest.slice(0, dot2), group: rest.slice(dot2 + 1) });
  }
  const top = all.filter((r) => !r.subresource);
  for (const c of candidates) {
    const matches = top.filter(
      (r) =>
        (c.group === undefined || r.group === c.group) &&
        (c.version === undefined || r.version === c.version) &&
        (r.resource === c.name ||
          r.singularName === c.name ||
          r.kind.toLowerCase() === c.name ||
          r.shortNames.includes(c.name)),
    );
    if (matches.length === 0) continue;
    matches.sort((a, b) => rank(a) - rank(b));
    return matches[0];
  }
  return undefined;
}

function rank(r: APIResourceInfo): number {
  // Core group first (kubectl prefers it for ambiguous names such as "events"), then preferred versions.
  return (r.group === '' ? 0 : 2) + (r.preferred ? 0 : 1);
}
