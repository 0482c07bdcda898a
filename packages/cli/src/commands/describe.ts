// kubit describe: one section per object, with its Events.

import { isNotFound, StatusError } from '@kubit/api';
import type { APIResourceInfo, KubeClient, KubeObject, Lease } from '@kubit/client';
import { resources } from '@kubit/client';
import { eventsFor, writeEvents } from '../describe/events.js';
import { describeGeneric } from '../describe/generic.js';
import { describeNode, type NodeLease, type NodeShape } from '../describe/node.js';
import { describePod, type PodShape } from '../describe/pod.js';
import { DescribeWriter } from '../describe/writer.js';
import { CliError, formatError } from '../errors.js';
import type { Factory } from '../factory.js';
import { getObject, listObjects } from './fetch.js';
import { resolveTargets } from './targets.js';

interface DescribeOptions {
  selector?: string;
  allNamespaces?: boolean;
  showEvents?: boolean;
  filename?: string[];
  recursive?: boolean;
}

async function podsOnNode(client: KubeClient, node: string): Promise<PodShape[]> {
  try {
    return (await client.listAll<PodShape>(resources.pods, { fieldSelector: `spec.nodeName=${node}` })).items;
  } catch {
    // A server without that field selector: filter here.
    return (await client.listAll<PodShape>(resources.pods)).items.filter((p) => p.spec?.nodeName === node);
  }
}

export async function renderDescription(
  client: KubeClient,
  r: APIResourceInfo,
  obj: KubeObject,
  showEvents: boolean,
): Promise<string> {
  const w = new DescribeWriter();
  if (r.group === '' && r.kind === 'Pod') describePod(w, obj as PodShape);
  else if (r.group === '' && r.kind === 'Node') {
    const name = obj.metadata?.name ?? '';
    let lease: NodeLease;
    try {
      lease = { lease: await client.get<Lease>(resources.leases, name, { namespace: 'kube-node-lease' }) };
    } catch (e) {
      lease = { error: e instanceof Error ? e.message : String(e) };
    }
    describeNode(w, obj as NodeShape, await podsOnNode(client, name), lease);
  } else if (r.group === '' && r.kind === 'Namespace') {
    // kubectl's namespace layout: no events (and no quota sections: Kubit serves no quotas).
    const meta = obj.metadata ?? {};
    w.kv(0, 'Name', meta.name);
    w.map(0, 'Labels', meta.labels);
    w.map(0, 'Annotations', meta.annotations, ': ');
    w.kv(0, 'Status', (obj as { status?: { phase?: string } }).status?.phase ?? '');
    return w.toString();
  } else describeGeneric(w, obj as KubeObject & Record<string, unknown>);
  if (showEvents && r.kind !== 'Event') {
    let events: Awaited<ReturnType<typeof eventsFor>> = [];
    try {
      events = await eventsFor(client, obj);
    } catch {
      events = [];
    }
    writeEvents(w, events);
  }
  return w.toString();
}

export async function describe(f: Factory, args: string[], o: DescribeOptions): Promise<void> {
  const client = await f.client();
  const targets = await resolveTargets(f, args, o);
  const out: string[] = [];
  let failed = false;
  for (const t of targets) {
    let objs: KubeObject[] = [];
    if (t.names.length === 0) {
      objs = (await listObjects(client, t.r, t.namespace, { labelSelector: o.selector })).items;
      if (objs.length === 0 && targets.length === 1) {
        f.io.err.write(
          t.namespace && t.r.namespaced
            ? `No resources found in ${t.namespace} namespace.\n`
            : 'No resources found\n',
        );
      }
    } else {
      for (const name of t.names) {
        try {
          objs.push(await getObject(client, t.r, t.namespace, name));
        } catch (e) {
          if (!(e instanceof StatusError)) throw e;
          // describe TYPE PREFIX matches names by prefix when there is no exact match.
          if (isNotFound(e) && args.length > 1 && !args[0].includes('/')) {
            const matches = (await listObjects(client, t.r, t.namespace, {})).items.filter((x) =>
              x.metadata?.name?.startsWith(name),
            );
            if (matches.length > 0) {
              objs.push(...matches);
              continue;
            }
          }
          f.io.err.write(`${formatError(e)}\n`);
          failed = true;
        }
      }
    }
    for (const obj of objs) out.push(await renderDescription(client, t.r, obj, o.showEvents !== false));
  }
  f.io.out.write(out.join('\n\n'));
  if (failed) throw new CliError('', 1);
}
