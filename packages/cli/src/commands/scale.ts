// kubit scale: sets spec.replicas through the scale subresource, optionally
// only if the current count is what the user expects (--current-replicas).

import type { APIResourceInfo, KubeClient, KubeObject } from '@kubit/client';
import { CliError, PerTargetErrors } from '../errors.js';
import type { Factory } from '../factory.js';
import { objectName } from '../printers/output.js';
import { listObjects } from './fetch.js';
import { resolveTargets } from './targets.js';

interface ScaleOptions {
  replicas?: number;
  currentReplicas?: number;
  resourceVersion?: string;
  selector?: string;
  all?: boolean;
  filename?: string[];
  recursive?: boolean;
}

/** autoscaling/v1 Scale, as the subresource serves it. */
interface Scale extends KubeObject {
  spec?: { replicas?: number };
  status?: { replicas?: number; selector?: string };
}

function hasScale(all: readonly APIResourceInfo[], r: APIResourceInfo): boolean {
  return all.some(
    (x) =>
      x.subresource && x.group === r.group && x.version === r.version && x.resource === `${r.resource}/scale`,
  );
}

/** Writes the new count; with a precondition, the write is guarded by the Scale's resourceVersion. */
async function scaleOne(
  client: KubeClient,
  r: APIResourceInfo,
  namespace: string | undefined,
  name: string,
  o: ScaleOptions & { replicas: number },
): Promise<void> {
  const guarded = o.currentReplicas !== undefined && o.currentReplicas >= 0;
  if (!guarded && !o.resourceVersion) {
    // No precondition: a merge patch cannot lose a race, so there is nothing to read first.
    await client.patch(r, name, { spec: { replicas: o.replicas } }, { namespace, subresource: 'scale' });
    return;
  }
  const scale = await client.get<Scale>(r, name, { namespace, subresource: 'scale' });
  const current = scale.spec?.replicas ?? 0;
  if (guarded && current !== o.currentReplicas) {
    throw new CliError(`Expected replicas to be ${o.currentReplicas}, was ${current}`);
  }
  if (o.resourceVersion && scale.metadata?.resourceVersion !== o.resourceVersion) {
    throw new CliError(
      `Expected resource version to be ${o.resourceVersion}, was ${scale.metadata?.resourceVersion ?? ''}`,
    );
  }
  await client.update<Scale>(
    r,
    { ...scale, spec: { ...scale.spec, replicas: o.replicas } },
    {
      namespace,
      subresource: 'scale',
    },
  );
}

export async function scale(f: Factory, args: string[], o: ScaleOptions): Promise<void> {
  if (o.replicas === undefined) throw new CliError('required flag(s) "replicas" not set');
  if (o.replicas < 0)
    throw new CliError('The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0');
  const replicas = o.replicas;
  const client = await f.client();
  const targets = await resolveTargets(f, args, o);
  const all = await f.resources();
  const errors = new PerTargetErrors(f.io.err);
  for (const t of targets) {
    if (!hasScale(all, t.r)) {
      throw new CliError(`cannot scale ${t.r.resource}: the server serves no scale subresource for it`);
    }
    let names = t.names;
    if (names.length === 0) {
      if (!o.all && !o.selector) throw new CliError('resource(s) were provided, but no name was specified');
      names = (await listObjects(client, t.r, t.namespace, { labelSelector: o.selector })).items.map(
        (i) => i.metadata?.name ?? '',
      );
    }
    await errors.each(names, async (name) => {
      await scaleOne(client, t.r, t.namespace, name, { ...o, replicas });
      f.io.out.write(`${objectName(t.r, { metadata: { name } })} scaled\n`);
    });
  }
  errors.finish();
}
