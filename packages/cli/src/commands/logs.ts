// kubit logs: a container's log through the apiserver's pods/log subresource.

import type { KubeClient, KubeObject } from '@kubit/client';
import { resourcePath, resources } from '@kubit/client';
import { CliError } from '../errors.js';
import { type Factory, parseDurationMs } from '../factory.js';

interface LogsOptions {
  container?: string;
  follow?: boolean;
  tail?: number;
  previous?: boolean;
  timestamps?: boolean;
  since?: string;
  sinceTime?: string;
  allContainers?: boolean;
  prefix?: boolean;
}

interface PodShape extends KubeObject {
  spec?: { containers?: { name: string }[]; initContainers?: { name: string }[] };
}

async function streamLog(
  f: Factory,
  client: KubeClient,
  namespace: string,
  pod: string,
  container: string,
  o: LogsOptions,
): Promise<void> {
  const query: Record<string, string | number | undefined> = {
    container,
    follow: o.follow ? 'true' : undefined,
    previous: o.previous ? 'true' : undefined,
    timestamps: o.timestamps ? 'true' : undefined,
    tailLines: o.tail !== undefined && o.tail >= 0 ? o.tail : undefined,
    sinceSeconds: o.since ? Math.max(1, Math.ceil(parseDurationMs(o.since) / 1000)) : undefined,
    sinceTime: o.sinceTime,
  };
  const path = resourcePath(resources.pods, { namespace, name: pod, subresource: 'log' });
  const prefix = o.prefix ? `[pod/${pod}/${container}] ` : '';
  const res = await client.stream(path, query, f.io.signal);
  let pending = '';
  try {
    for await (const chunk of res.stream) {
      const text = chunk.toString();
      if (!prefix) {
        f.io.out.write(text);
        continue;
      }
      const lines = (pending + text).split('\n');
      pending = lines.pop() ?? '';
      for (const l of lines) f.io.out.write(`${prefix}${l}\n`);
    }
  } catch (e) {
    if (!f.io.signal?.aborted) throw e;
  }
  if (pending) f.io.out.write(`${prefix}${pending}\n`);
}

export async function logs(f: Factory, args: string[], o: LogsOptions): Promise<void> {
  let [target, positionalContainer] = args;
  if (target.includes('/')) {
    const [type, name] = target.split('/', 2);
    const r = await f.resolve(type);
    if (r.kind !== 'Pod')
      throw new CliError(`cannot get the logs from ${r.kind.toLowerCase()}: only pods are supported`);
    target = name;
  }
  if (o.container && positionalContainer)
    throw new CliError('only one of -c or an inline [CONTAINER] arg is allowed');
  const client = await f.client();
  const namespace = await f.namespace();
  const pod = await client.get<PodShape>(resources.pods, target, { namespace });
  const containers = (pod.spec?.containers ?? []).map((c) => c.name);
  const inits = (pod.spec?.initContainers ?? []).map((c) => c.name);
  if (o.allContainers) {
    for (const c of [...inits, ...containers]) await streamLog(f, client, namespace, target, c, o);
    return;
  }
  let container = o.container ?? positionalContainer;
  if (!container) {
    const annotated = pod.metadata?.annotations?.['kubectl.kubernetes.io/default-container'];
    container = annotated && containers.includes(annotated) ? annotated : containers[0];
    if (!container) throw new CliError(`pod ${target} has no containers`);
    if (containers.length > 1 && !annotated) {
      f.io.err.write(
        `Defaulted container "${container}" out of: ${[...containers, ...inits.map((i) => `${i} (init)`)].join(', ')}\n`,
      );
    }
  } else if (![...containers, ...inits].includes(container)) {
    throw new CliError(`container ${container} is not valid for pod ${target}`);
  }
  await streamLog(f, client, namespace, target, container, o);
}
