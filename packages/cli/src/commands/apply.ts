// kubit apply -f / kubit create -f: create what is absent; for apply, patch what
// exists with the three-way strategic merge patch, and report
// created/configured/unchanged per object.

import { isNotFound, StatusError } from '@kubit/api';
import type { APIResourceInfo, KubeObject } from '@kubit/client';
import { applyPatch, withLastApplied } from '../apply/threeway.js';
import { addSourceToError, CliError, formatError, PerTargetErrors } from '../errors.js';
import { type Factory, parseDurationMs } from '../factory.js';
import { type Manifest, readManifests } from '../manifests.js';
import { objectName, parseOutput, printObjects } from '../printers/output.js';
import { dryRunMode, dryRunSuffix } from './dry-run.js';
import { withKind } from './fetch.js';

/**
 * As kubectl: a strategic merge patch for Kubernetes' own kinds, a JSON merge patch for a custom
 * resource, which has no patch-merge keys (the server refuses strategic merge there with 415). A
 * CustomResourceDefinition's group has a dot and is not one of Kubernetes' reserved *.k8s.io ones.
 */
export function applyPatchType(r: Pick<APIResourceInfo, 'group'>): 'strategic' | 'merge' {
  const g = r.group ?? '';
  return g === '' || !g.includes('.') || g.endsWith('.k8s.io') ? 'strategic' : 'merge';
}

interface ApplyOptions {
  filename?: string[];
  recursive?: boolean;
  output?: string;
  dryRun?: string;
  wait?: boolean;
  timeout?: string;
  fieldManager?: string;
}

interface Prepared {
  m: Manifest;
  r: APIResourceInfo;
  namespace: string | undefined;
  name: string;
}

async function prepare(f: Factory, manifests: Manifest[]): Promise<Prepared[]> {
  const ns = await f.namespace();
  const out: Prepared[] = [];
  for (const m of manifests) {
    const r = await f.resolveKind(m.object.apiVersion, m.object.kind);
    const meta = (m.object.metadata ?? {}) as { name?: string; namespace?: string; generateName?: string };
    const namespace = r.namespaced ? meta.namespace || ns : undefined;
    if (r.namespaced && f.opts.namespace && meta.namespace && meta.namespace !== f.opts.namespace) {
      throw new CliError(
        `the namespace from the provided object "${meta.namespace}" does not match the namespace "${f.opts.namespace}". You must pass '--namespace=${meta.namespace}' to perform this operation.`,
      );
    }
    out.push({ m, r, namespace, name: meta.name ?? '' });
  }
  return out;
}

export async function apply(f: Factory, o: ApplyOptions): Promise<void> {
  const mode = dryRunMode(o.dryRun);
  const format = o.output ? parseOutput(o.output) : undefined;
  const manifests = await readManifests(o.filename ?? [], o.recursive ?? false, () => f.io.readStdin());
  const client = await f.client();
  const items = await prepare(f, manifests);
  const errors = new PerTargetErrors(f.io.err);
  const printed: { r: APIResourceInfo; obj: KubeObject }[] = [];
  const applied: Prepared[] = [];
  await errors.each(items, async (it) => {
    if (!it.name)
      throw new CliError(
        `error when retrieving current configuration of:\nResource: "${it.r.resource}", GroupVersionKind: "${it.r.kind}"\nName: "", Namespace: "${it.namespace ?? ''}"\nfrom server for: "${it.m.source}": resource name may not be empty`,
      );
    let live: KubeObject | undefined;
    try {
      live = await client.get<KubeObject>(it.r, it.name, { namespace: it.namespace });
    } catch (e) {
      if (!isNotFound(e)) throw addSourceToError('retrieving current configuration of', it.m.source, e);
    }
    let result: KubeObject;
    let verb: string;
    if (!live) {
      const body = withLastApplied(it.m.object) as KubeObject;
      result =
        mode === 'client'
          ? body
          : await client
              .create<KubeObject>(it.r, body, {
                namespace: it.namespace,
                dryRun: mode === 'server',
                fieldManager: o.fieldManager,
              })
              .catch((e) => {
                throw addSourceToError('creating', it.m.source, e);
              });
      verb = 'created';
    } else {
      const patch = applyPatch(it.m.object, live as Record<string, unknown>);
      if (Object.keys(patch).length === 0) {
        result = live;
        verb = 'unchanged';
      } else {
        result =
          mode === 'client'
            ? live
            : await client
                .patch<KubeObject>(it.r, it.name, patch, {
                  type: applyPatchType(it.r),
                  namespace: it.namespace,
                  dryRun: mode === 'server',
                  fieldManager: o.fieldManager,
                })
                .catch((e) => {
                  throw addSourceToError('patching', it.m.source, e);
                });
        verb = 'configured';
      }
    }
    result = withKind(it.r, result);
    applied.push(it);
    if (format) printed.push({ r: it.r, obj: result });
    else f.io.out.write(`${objectName(it.r, result)} ${verb}${dryRunSuffix(mode)}\n`);
  });
  if (format) f.io.out.write(printObjects(format, printed, printed.length === 1));
  if (o.wait && mode === 'none' && applied.length > 0) {
    const { waitForAll } = await import('./wait.js');
    await waitForAll(
      f,
      applied.map((a) => ({ r: a.r, namespace: a.namespace, name: a.name })),
      parseDurationMs(o.timeout ?? '60s'),
    );
  }
  errors.finish();
}

interface CreateOptions {
  filename?: string[];
  recursive?: boolean;
  output?: string;
  dryRun?: string;
}

export async function create(f: Factory, args: string[], o: CreateOptions): Promise<void> {
  const mode = dryRunMode(o.dryRun);
  const format = o.output ? parseOutput(o.output) : undefined;
  let manifests: Manifest[];
  if (args.length > 0) {
    const [what, name, ...rest] = args;
    if (!['namespace', 'ns'].includes(what) || !name || rest.length > 0) {
      throw new CliError(
        `unknown or incomplete "create" form: ${args.join(' ')} (use -f FILE or "create namespace NAME")`,
      );
    }
    manifests = [{ source: '', object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } }];
  } else {
    manifests = await readManifests(o.filename ?? [], o.recursive ?? false, () => f.io.readStdin());
  }
  const client = await f.client();
  const items = await prepare(f, manifests);
  let failed = false;
  const printed: { r: APIResourceInfo; obj: KubeObject }[] = [];
  for (const it of items) {
    try {
      const body = it.m.object as KubeObject;
      const result = withKind(
        it.r,
        mode === 'client'
          ? body
          : await client.create<KubeObject>(it.r, body, {
              namespace: it.namespace,
              dryRun: mode === 'server',
            }),
      );
      if (format) printed.push({ r: it.r, obj: result });
      else f.io.out.write(`${objectName(it.r, result)} created${dryRunSuffix(mode)}\n`);
    } catch (e) {
      if (e instanceof StatusError) {
        f.io.err.write(`${formatError(addSourceToError('creating', it.m.source, e))}\n`);
        failed = true;
        continue;
      }
      throw e;
    }
  }
  if (format) f.io.out.write(printObjects(format, printed, printed.length === 1));
  if (failed) throw new CliError('', 1);
}
