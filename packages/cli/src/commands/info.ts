// cluster-info, version and api-resources.

import { CliError } from '../errors.js';
import type { Factory } from '../factory.js';
import { colour } from '../io.js';
import { alignColumns } from '../printers/tabwriter.js';
import { toYaml } from '../printers/yaml.js';

export const CLIENT_VERSION = {
  major: '0',
  minor: '1',
  gitVersion: 'v0.1.0',
  gitCommit: '',
  gitTreeState: '',
  buildDate: '',
  goVersion: '',
  compiler: 'tsc',
  platform: `${process.platform}/${process.arch}`,
};

export async function clusterInfo(f: Factory): Promise<void> {
  const client = await f.client();
  await client.request({ method: 'GET', path: '/version' });
  f.io.out.write(
    `${colour(f.io, 32, 'Kubernetes control plane')} is running at ${colour(f.io, 33, client.config.server)}\n`,
  );
  f.io.out.write(
    "\nTo further debug and diagnose cluster problems, use 'kubit get --raw' style requests or the component logs.\n",
  );
}

export async function version(f: Factory, o: { client?: boolean; output?: string }): Promise<void> {
  if (o.output && o.output !== 'json' && o.output !== 'yaml')
    throw new CliError(`--output must be 'yaml' or 'json'`);
  let server: Record<string, unknown> | undefined;
  let serverError: unknown;
  if (!o.client) {
    try {
      server = await (await f.client()).request<Record<string, unknown>>({ method: 'GET', path: '/version' });
    } catch (e) {
      serverError = e;
    }
  }
  if (o.output) {
    const doc = { clientVersion: CLIENT_VERSION, ...(server ? { serverVersion: server } : {}) };
    f.io.out.write(o.output === 'json' ? `${JSON.stringify(doc, null, 2)}\n` : toYaml(doc));
  } else {
    f.io.out.write(`Client Version: ${CLIENT_VERSION.gitVersion}\n`);
    if (server) f.io.out.write(`Server Version: ${String(server.gitVersion ?? '')}\n`);
  }
  if (serverError) throw serverError;
}

export async function apiResources(
  f: Factory,
  o: { namespaced?: boolean; apiGroup?: string; output?: string; headers?: boolean; sortBy?: string },
): Promise<void> {
  if (o.output && o.output !== 'wide' && o.output !== 'name')
    throw new CliError(`--output ${o.output} is not available`);
  const all = (await f.resources(true)).filter((r) => !r.subresource && r.preferred);
  let list = all.filter(
    (r) =>
      (o.namespaced === undefined || r.namespaced === o.namespaced) &&
      (o.apiGroup === undefined || r.group === o.apiGroup),
  );
  list = [...list].sort((a, b) =>
    o.sortBy === 'kind'
      ? a.kind.localeCompare(b.kind)
      : o.sortBy === 'name'
        ? a.resource.localeCompare(b.resource)
        : a.group.localeCompare(b.group) || a.resource.localeCompare(b.resource),
  );
  if (o.output === 'name') {
    for (const r of list) f.io.out.write(`${r.group ? `${r.resource}.${r.group}` : r.resource}\n`);
    return;
  }
  const wide = o.output === 'wide';
  const rows: string[][] = [];
  if (o.headers !== false)
    rows.push([
      'NAME',
      'SHORTNAMES',
      'APIVERSION',
      'NAMESPACED',
      'KIND',
      ...(wide ? ['VERBS', 'CATEGORIES'] : []),
    ]);
  for (const r of list) {
    rows.push([
      r.resource,
      r.shortNames.join(','),
      r.group ? `${r.group}/${r.version}` : r.version,
      String(r.namespaced),
      r.kind,
      ...(wide ? [r.verbs.join(','), r.categories.join(',')] : []),
    ]);
  }
  f.io.out.write(alignColumns(rows));
}
