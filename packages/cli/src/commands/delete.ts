// kubit delete: by name, -f, -l or --all; waits until the objects are gone
// unless --wait=false.

import { isNotFound, StatusError } from '@kubit/api';
import type { APIResourceInfo, KubeObject } from '@kubit/client';
import { sleep } from '@kubit/client';
import { CliError, formatError } from '../errors.js';
import { type Factory, parseDurationMs } from '../factory.js';
import { typeName } from '../printers/output.js';
import { dryRunMode, dryRunSuffix } from './dry-run.js';
import { getIfExists, listObjects } from './fetch.js';
import { resolveTargets } from './targets.js';

interface DeleteOptions {
  filename?: string[];
  recursive?: boolean;
  selector?: string;
  all?: boolean;
  allNamespaces?: boolean;
  gracePeriod?: number;
  force?: boolean;
  now?: boolean;
  wait?: boolean;
  timeout?: string;
  ignoreNotFound?: boolean;
  output?: string;
  dryRun?: string;
}

interface Doomed {
  r: APIResourceInfo;
  namespace: string | undefined;
  name: string;
  uid?: string;
}

export async function del(f: Factory, args: string[], o: DeleteOptions): Promise<void> {
  if (o.output && o.output !== 'name')
    throw new CliError(`unexpected -o output mode: ${o.output}. We only support '-o name'`);
  const mode = dryRunMode(o.dryRun);
  let grace: number | undefined =
    o.gracePeriod !== undefined && o.gracePeriod >= 0 ? o.gracePeriod : undefined;
  if (o.now) grace = 1;
  if (o.force) {
    if (grace === undefined) grace = 0;
    f.io.err.write(
      'Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.\n',
    );
  }
  const client = await f.client();
  const targets = await resolveTargets(f, args, o);
  const doomed: Doomed[] = [];
  for (const t of targets) {
    if (t.names.length > 0) {
      if (o.all || o.selector)
        throw new CliError('name cannot be provided when a selector or --all is specified');
      for (const n of t.names) doomed.push({ r: t.r, namespace: t.namespace, name: n });
      continue;
    }
    if (!o.selector && !o.all) throw new CliError('resource(s) were provided, but no name was specified');
    const list = await listObjects(client, t.r, t.namespace, { labelSelector: o.selector });
    for (const obj of list.items)
      doomed.push({ r: t.r, namespace: obj.metadata?.namespace, name: obj.metadata?.name ?? '' });
  }
  if (doomed.length === 0 && (o.selector || o.all)) {
    const t = targets[0];
    f.io.err.write(
      t?.namespace && t.r.namespaced
        ? `No resources found in ${t.namespace} namespace.\n`
        : 'No resources found\n',
    );
    return;
  }
  let failed = false;
  const deleted: Doomed[] = [];
  for (const d of doomed) {
    try {
      // A client dry run still reads the object, so a missing one is reported as it would be.
      const res =
        mode === 'client'
          ? await client.get<KubeObject>(d.r, d.name, { namespace: d.namespace })
          : await client.delete<KubeObject>(d.r, d.name, {
              namespace: d.namespace,
              gracePeriodSeconds: grace,
              dryRun: mode === 'server',
            });
      d.uid = (res as KubeObject).metadata?.uid ?? (res as { details?: { uid?: string } }).details?.uid;
      if (mode === 'none') deleted.push(d);
      const verb = o.force ? 'force deleted' : 'deleted';
      if (o.output === 'name') f.io.out.write(`${typeName(d.r)}/${d.name}\n`);
      else f.io.out.write(`${typeName(d.r)} "${d.name}" ${verb}${dryRunSuffix(mode)}\n`);
    } catch (e) {
      if (isNotFound(e) && o.ignoreNotFound) continue;
      if (e instanceof StatusError) {
        f.io.err.write(`${formatError(e)}\n`);
        failed = true;
        continue;
      }
      throw e;
    }
  }
  if (o.wait !== false && deleted.length > 0) {
    const timeoutMs = parseDurationMs(o.timeout ?? '0s') || 7 * 24 * 3_600_000;
    const deadline = Date.now() + timeoutMs;
    for (const d of deleted) {
      for (;;) {
        const cur = await getIfExists(client, d.r, d.namespace, d.name);
        // Gone, or replaced by a new object of the same name.
        if (!cur || (d.uid && cur.metadata?.uid !== d.uid)) break;
        if (Date.now() >= deadline) {
          throw new CliError(
            `timed out waiting for the condition on ${d.r.group ? `${d.r.resource}.${d.r.group}` : d.r.resource}/${d.name}`,
          );
        }
        try {
          await sleep(200, f.io.signal);
        } catch {
          return;
        }
      }
    }
  }
  if (failed) throw new CliError('', 1);
}
