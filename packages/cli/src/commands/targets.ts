// Turning "TYPE NAME...", "TYPE1,TYPE2", "TYPE/NAME ..." or -f files into the
// objects a verb acts on.

import type { APIResourceInfo } from '@kubit/client';
import { CliError } from '../errors.js';
import type { Factory } from '../factory.js';
import { readManifests } from '../manifests.js';

export interface Target {
  r: APIResourceInfo;
  /** Names; empty means every object matching the selectors. */
  names: string[];
  /** undefined: across all namespaces (or cluster-scoped). */
  namespace: string | undefined;
}

export interface TargetOptions {
  allNamespaces?: boolean;
  filename?: string[];
  recursive?: boolean;
}

export async function resolveTargets(
  f: Factory,
  args: readonly string[],
  o: TargetOptions,
): Promise<Target[]> {
  const defaultNs = await f.namespace();
  const nsFor = (r: APIResourceInfo) => (!r.namespaced || o.allNamespaces ? undefined : defaultNs);
  if (o.filename && o.filename.length > 0) {
    if (args.length > 0)
      throw new CliError('when paths are given with -f, no resource type or name may be given as arguments');
    const manifests = await readManifests(o.filename, o.recursive ?? false, () => f.io.readStdin());
    const out: Target[] = [];
    for (const m of manifests) {
      const r = await f.resolveKind(m.object.apiVersion, m.object.kind);
      const name = String(m.object.metadata?.name ?? '');
      const ns = r.namespaced ? String(m.object.metadata?.namespace ?? defaultNs) : undefined;
      out.push({ r, names: [name], namespace: ns });
    }
    return out;
  }
  if (args.length === 0) {
    throw new CliError(
      'You must specify the type of resource to get. Use "kubit api-resources" for a complete list of supported resources.',
    );
  }
  if (args.some((a) => a.includes('/'))) {
    const out: Target[] = [];
    for (const a of args) {
      const slash = a.indexOf('/');
      if (slash <= 0 || slash === a.length - 1) {
        throw new CliError(
          `there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'kubit get resource/<resource_name>' instead of 'kubit get resource resource/<resource_name>'`,
        );
      }
      const r = await f.resolve(a.slice(0, slash));
      const name = a.slice(slash + 1);
      const last = out[out.length - 1];
      if (last && last.r === r) last.names.push(name);
      else out.push({ r, names: [name], namespace: nsFor(r) });
    }
    return out;
  }
  const [types, ...names] = args;
  const out: Target[] = [];
  for (const t of types.split(',').filter(Boolean)) {
    const category = await categoryMembers(f, t);
    if (category.length > 0 && names.length === 0) {
      for (const r of category) out.push({ r, names: [], namespace: nsFor(r) });
      continue;
    }
    const r = await f.resolve(t);
    out.push({ r, names: [...names], namespace: nsFor(r) });
  }
  return out;
}

/** Resources in a category such as "all", unless a resource has that name itself. */
async function categoryMembers(f: Factory, typed: string): Promise<APIResourceInfo[]> {
  const all = await f.resources();
  const lower = typed.toLowerCase();
  if (all.some((r) => r.resource === lower || r.singularName === lower || r.shortNames.includes(lower)))
    return [];
  return all.filter((r) => r.preferred && !r.subresource && r.categories.includes(lower));
}
