// kubit config view|current-context|use-context|get-contexts|set-context.
// Edits go to the file that defines the entry (KUBECONFIG may list several).

import type { KubeConfig, LoadedKubeConfig } from '@kubit/client';
import { CliError } from '../errors.js';
import type { Factory } from '../factory.js';
import { alignColumns } from '../printers/tabwriter.js';
import { toYaml } from '../printers/yaml.js';

type Opts = Record<string, unknown>;

async function load(f: Factory): Promise<LoadedKubeConfig> {
  const lib = await f.lib();
  return lib.loadKubeConfig(f.opts.kubeconfig, f.io.env);
}

function redact(cfg: KubeConfig): KubeConfig {
  const copy = structuredClone(cfg);
  for (const c of copy.clusters)
    if (c.cluster['certificate-authority-data']) c.cluster['certificate-authority-data'] = 'DATA+OMITTED';
  for (const u of copy.users) {
    if (u.user['client-certificate-data']) u.user['client-certificate-data'] = 'DATA+OMITTED';
    if (u.user['client-key-data']) u.user['client-key-data'] = 'DATA+OMITTED';
    if (u.user.token) u.user.token = 'REDACTED';
  }
  return copy;
}

function currentName(f: Factory, loaded: LoadedKubeConfig): string {
  return f.opts.context || loaded.config['current-context'] || '';
}

export async function config(f: Factory, sub: string, args: string[], o: Opts): Promise<void> {
  const lib = await f.lib();
  const loaded = await load(f);
  const cfg = loaded.config;
  switch (sub) {
    case 'view': {
      let view = o.raw ? cfg : redact(cfg);
      if (o.minify) {
        const name = currentName(f, loaded);
        const ctx = view.contexts.find((c) => c.name === name);
        if (!ctx)
          throw new CliError(
            name ? `cannot locate context ${name}` : 'current-context must exist in order to minify',
          );
        view = {
          ...view,
          'current-context': name,
          contexts: [ctx],
          clusters: view.clusters.filter((c) => c.name === ctx.context.cluster),
          users: view.users.filter((u) => u.name === ctx.context.user),
        };
      }
      const doc = {
        apiVersion: 'v1',
        clusters: view.clusters,
        contexts: view.contexts,
        'current-context': view['current-context'] ?? '',
        kind: 'Config',
        preferences: view.preferences ?? {},
        users: view.users,
      };
      f.io.out.write(o.output === 'json' ? `${JSON.stringify(doc, null, 4)}\n` : toYaml(doc));
      return;
    }
    case 'current-context': {
      const name = cfg['current-context'];
      if (!name) throw new CliError('current-context is not set');
      f.io.out.write(`${name}\n`);
      return;
    }
    case 'use-context': {
      const name = args[0];
      if (!cfg.contexts.some((c) => c.name === name))
        throw new CliError(`no context exists with the name: "${name}"`);
      const file = loaded.origin.currentContext ?? loaded.primaryFile;
      lib.updateKubeConfigFile(file, (raw) => {
        raw['current-context'] = name;
      });
      f.io.out.write(`Switched to context "${name}".\n`);
      return;
    }
    case 'get-contexts': {
      const current = cfg['current-context'] ?? '';
      let contexts = cfg.contexts;
      if (args[0]) {
        contexts = contexts.filter((c) => c.name === args[0]);
        if (contexts.length === 0) throw new CliError(`context ${args[0]} not found`);
      }
      if (o.output === 'name') {
        for (const c of contexts) f.io.out.write(`${c.name}\n`);
        return;
      }
      const rows: string[][] =
        o.headers === false ? [] : [['CURRENT', 'NAME', 'CLUSTER', 'AUTHINFO', 'NAMESPACE']];
      for (const c of contexts)
        rows.push([
          c.name === current ? '*' : '',
          c.name,
          c.context.cluster,
          c.context.user,
          c.context.namespace ?? '',
        ]);
      f.io.out.write(alignColumns(rows));
      return;
    }
    case 'set-context': {
      const name = o.current ? cfg['current-context'] : args[0];
      if (o.current && args[0]) throw new CliError('you cannot specify a name and --current');
      if (!name)
        throw new CliError(
          o.current ? 'no current context is set' : 'you must specify a non-empty context name or --current',
        );
      const exists = loaded.origin.contexts.get(name);
      const file = exists ?? loaded.primaryFile;
      lib.updateKubeConfigFile(file, (raw) => {
        const contexts = Array.isArray(raw.contexts)
          ? (raw.contexts as { name: string; context?: Record<string, unknown> }[])
          : [];
        raw.contexts = contexts;
        let entry = contexts.find((c) => c.name === name);
        if (!entry) {
          entry = { name, context: {} };
          contexts.push(entry);
        }
        entry.context ??= {};
        // --namespace/--cluster/--user are also global flags; whichever parser took them, they mean the context's.
        const namespace = o.namespace ?? f.opts.namespace;
        const cluster = o.cluster ?? f.opts.cluster;
        const user = o.user ?? f.opts.user;
        if (typeof namespace === 'string') entry.context.namespace = namespace;
        if (typeof cluster === 'string') entry.context.cluster = cluster;
        if (typeof user === 'string') entry.context.user = user;
      });
      f.io.out.write(`Context "${name}" ${exists ? 'modified' : 'created'}.\n`);
      return;
    }
    default:
      throw new CliError(`unknown config command ${sub}`);
  }
}
