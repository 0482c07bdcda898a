// kubit label / kubit annotate: KEY=VALUE to set, KEY- to remove, with
// --overwrite required to change an existing value.

import type { KubeObject } from '@kubit/client';
import { CliError, PerTargetErrors } from '../errors.js';
import type { Factory } from '../factory.js';
import { objectName, parseOutput, printObjects } from '../printers/output.js';
import { listObjects, withKind } from './fetch.js';
import { resolveTargets } from './targets.js';

interface LabelOptions {
  overwrite?: boolean;
  all?: boolean;
  selector?: string;
  list?: boolean;
  resourceVersion?: string;
  output?: string;
}

export interface LabelChanges {
  set: Record<string, string>;
  remove: string[];
}

const KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Splits arguments into resources and KEY=VALUE / KEY- changes. */
export function parseChanges(
  args: readonly string[],
  what: 'label' | 'annotate',
): { resources: string[]; changes: LabelChanges } {
  const resources: string[] = [];
  const changes: LabelChanges = { set: {}, remove: [] };
  for (const a of args) {
    const eq = a.indexOf('=');
    if (eq > 0) {
      const k = a.slice(0, eq);
      const v = a.slice(eq + 1);
      if (!KEY.test(k)) throw new CliError(`invalid ${what === 'label' ? 'label' : 'annotation'} spec: ${a}`);
      if (what === 'label' && v !== '' && !/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(v)) {
        throw new CliError(
          `invalid label value: "${a}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
        );
      }
      changes.set[k] = v;
    } else if (a.endsWith('-') && KEY.test(a.slice(0, -1))) {
      changes.remove.push(a.slice(0, -1));
    } else {
      resources.push(a);
    }
  }
  return { resources, changes };
}

export async function label(
  f: Factory,
  verb: 'label' | 'annotate',
  args: string[],
  o: LabelOptions,
): Promise<void> {
  const { resources, changes } = parseChanges(args, verb);
  const field = verb === 'label' ? 'labels' : 'annotations';
  if (!o.list && Object.keys(changes.set).length === 0 && changes.remove.length === 0) {
    throw new CliError(`at least one ${verb === 'label' ? 'label' : 'annotation'} update is required`);
  }
  const client = await f.client();
  const targets = await resolveTargets(f, resources, {});
  const format = o.output ? parseOutput(o.output) : undefined;
  const errors = new PerTargetErrors(f.io.err);
  for (const t of targets) {
    let objs: KubeObject[];
    if (t.names.length > 0) objs = t.names.map((name) => ({ metadata: { name, namespace: t.namespace } }));
    else if (o.all || o.selector)
      objs = (await listObjects(client, t.r, t.namespace, { labelSelector: o.selector })).items;
    else throw new CliError('resource(s) were provided, but no name was specified');
    await errors.each(objs, async (ref) => {
      const name = ref.metadata?.name ?? '';
      const cur = withKind(t.r, await client.get<KubeObject>(t.r, name, { namespace: t.namespace }));
      const existing = (cur.metadata?.[field] ?? {}) as Record<string, string>;
      if (o.list) {
        for (const [k, v] of Object.entries(existing)) f.io.out.write(`${k}=${v}\n`);
        return;
      }
      if (!o.overwrite) {
        for (const [k, v] of Object.entries(changes.set)) {
          if (k in existing && existing[k] !== v) {
            throw new CliError(`'${k}' already has a value (${existing[k]}), and --overwrite is false`);
          }
        }
      }
      const patchField: Record<string, string | null> = { ...changes.set };
      for (const k of changes.remove) patchField[k] = null;
      const unchanged =
        Object.entries(changes.set).every(([k, v]) => existing[k] === v) &&
        changes.remove.every((k) => !(k in existing));
      const patch: Record<string, unknown> = { metadata: { [field]: patchField } };
      if (o.resourceVersion) (patch.metadata as Record<string, unknown>).resourceVersion = o.resourceVersion;
      const updated = unchanged
        ? cur
        : withKind(
            t.r,
            await client.patch<KubeObject>(t.r, name, patch, { type: 'merge', namespace: t.namespace }),
          );
      if (format) f.io.out.write(printObjects(format, [{ r: t.r, obj: updated }], true));
      else {
        const done = verb === 'label' ? 'labeled' : 'annotated';
        f.io.out.write(`${objectName(t.r, updated)} ${unchanged ? `not ${done}` : done}\n`);
      }
    });
  }
  errors.finish();
}
