// kubit image load IMAGE|ARCHIVE... and kubit image ls: images into and out of
// the cluster's registry, which every node's containerd lists first for
// docker.io, so a loaded `my/app:1` runs with imagePullPolicy IfNotPresent (or
// Always) without any registry on the internet — kind's `kind load`.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CliError } from '../errors.js';
import type { Factory } from '../factory.js';
import { checkRegistryUp, clusterRegistry, listRegistry } from '../image/cluster-registry.js';
import { DOCKER_HUB, formatReference, type ImageReference, parseReference } from '../image/reference.js';
import { archiveImages, localImage, type SourceImage } from '../image/sources.js';
import { alignColumns } from '../printers/tabwriter.js';

const run = promisify(execFile);

export interface LoadOptions {
  registry?: string;
  /** Import into these nodes' containerd instead of pushing to the registry (kind's --nodes). */
  nodes?: string;
  /** The name to give the image (an archive's own names otherwise). */
  name?: string;
  containerdAddress?: string;
}

/** Where an image named `ref` goes in the registry so that nodes pulling `ref` find it. */
function registryPath(ref: ImageReference, registry: string): string {
  if (ref.domain !== DOCKER_HUB && ref.domain !== registry) {
    throw new CliError(
      `${formatReference(ref)}: the nodes pull only docker.io names (and ${registry}'s own) from the cluster's registry; ` +
        `load it under a docker.io name with --name (for example --name ${ref.path.split('/').pop()}:${ref.tag ?? 'latest'})`,
    );
  }
  if (!ref.tag)
    throw new CliError(`${formatReference(ref)}: give the image a tag to load it under (NAME:TAG)`);
  return `${ref.path}:${ref.tag}`;
}

interface Copy {
  image: SourceImage;
  target: ImageReference;
  dest: string;
}

async function planSources(args: string[], o: LoadOptions, scratch: string): Promise<SourceImage[]> {
  const images: SourceImage[] = [];
  for (const arg of args) {
    if (existsSync(arg)) {
      images.push(...(await archiveImages(arg, scratch)));
      continue;
    }
    let ref: ImageReference;
    try {
      ref = parseReference(arg);
    } catch (e) {
      throw new CliError(`${(e as Error).message}, and there is no file ${arg}`);
    }
    images.push(
      await localImage(ref, {
        containerdAddress: o.containerdAddress ?? '/run/containerd/containerd.sock',
        scratch,
      }),
    );
  }
  return images;
}

/**
 * The node's containerd socket, from the annotation kubeadm writes for the same
 * purpose; it must be on this machine, as `kind load` reaches its nodes' runtimes.
 */
export const CRI_SOCKET_ANNOTATION = 'kubeadm.alpha.kubernetes.io/cri-socket';

async function nodeSockets(f: Factory, names: string[]): Promise<Map<string, string>> {
  const client = await f.client();
  const out = new Map<string, string>();
  for (const name of names) {
    let node: { metadata?: { annotations?: Record<string, string> } };
    try {
      node = await client.request({ method: 'GET', path: `/api/v1/nodes/${encodeURIComponent(name)}` });
    } catch (e) {
      if ((e as { code?: number }).code === 404) throw new CliError(`node "${name}" not found`);
      throw e;
    }
    const endpoint = node.metadata?.annotations?.[CRI_SOCKET_ANNOTATION];
    if (!endpoint)
      throw new CliError(
        `node "${name}" does not name its container runtime (annotation ${CRI_SOCKET_ANNOTATION}): ` +
          "load into the cluster's registry instead (without --nodes)",
      );
    const socket = endpoint.replace(/^unix:\/\//, '');
    if (!existsSync(socket))
      throw new CliError(
        `node "${name}"'s containerd socket ${socket} is not on this machine: ` +
          "load into the cluster's registry instead (without --nodes)",
      );
    out.set(name, socket);
  }
  return out;
}

async function importIntoNodes(f: Factory, copies: Copy[], sockets: Map<string, string>, scratch: string) {
  for (const [i, c] of copies.entries()) {
    const name = formatReference(c.target);
    // A docker archive carries the full name in RepoTags, which ctr imports as is
    // (an OCI archive's ref.name would give CRI a second, odd name).
    const archive = join(scratch, `import-${i}.tar`);
    await skopeo(c.image.source, `docker-archive:${archive}:${name}`, `${c.image.label} → ${archive}`);
    for (const [node, socket] of sockets) {
      try {
        await run('ctr', ['--address', socket, '-n', 'k8s.io', 'images', 'import', archive], {
          maxBuffer: 16 << 20,
        });
      } catch (e) {
        const err = e as { code?: string; stderr?: string; message: string };
        if (err.code === 'ENOENT') throw new CliError('ctr is not installed (it comes with containerd)');
        throw new CliError(
          `importing ${name} into node "${node}" failed: ${(err.stderr ?? '').trim() || err.message}`,
        );
      }
      f.io.out.write(`Image: "${name}" loaded into node "${node}"\n`);
    }
  }
}

async function skopeo(source: string, dest: string, what: string): Promise<void> {
  try {
    await run('skopeo', ['--insecure-policy', 'copy', '--quiet', '--dest-tls-verify=false', source, dest], {
      maxBuffer: 16 << 20,
    });
  } catch (e) {
    const err = e as { code?: string; stderr?: string; message: string };
    if (err.code === 'ENOENT') throw new CliError('skopeo is not installed (apt-get install skopeo)');
    throw new CliError(`copying ${what} failed: ${(err.stderr ?? '').trim() || err.message}`);
  }
}

export async function imageLoad(f: Factory, args: string[], o: LoadOptions): Promise<void> {
  if (args.length === 0) throw new CliError('kubit image load needs an IMAGE or ARCHIVE');
  const rename = o.name !== undefined ? parseReference(o.name) : undefined;
  const nodes = o.nodes
    ?.split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  if (o.nodes !== undefined && !nodes?.length) throw new CliError('--nodes needs at least one node name');
  const sockets = nodes ? await nodeSockets(f, nodes) : undefined;
  const registry = sockets ? '' : await clusterRegistry(f, o.registry);
  const scratch = await mkdtemp(join(tmpdir(), 'kubit-image-'));
  try {
    // Everything is looked at (sources, names, the registry) before the first copy.
    const sources = await planSources(args, o, scratch);
    if (rename && sources.length !== 1)
      throw new CliError(`--name names one image, but ${args.join(' ')} holds ${sources.length}`);
    const copies: Copy[] = sources.map((image) => {
      const target = rename ?? image.name;
      if (!target)
        throw new CliError(`${image.label} carries no image name: give it one with --name NAME:TAG`);
      if (!target.tag)
        throw new CliError(`${formatReference(target)}: give the image a tag to load it under (NAME:TAG)`);
      return { image, target, dest: sockets ? '' : `${registry}/${registryPath(target, registry)}` };
    });
    if (sockets) return await importIntoNodes(f, copies, sockets, scratch);
    await checkRegistryUp(registry);
    for (const c of copies) {
      await skopeo(c.image.source, `docker://${c.dest}`, `${c.image.label} to ${c.dest}`);
      f.io.out.write(
        `Image: "${formatReference(c.target)}" loaded into the cluster's registry ${registry}\n`,
      );
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

export async function imageList(
  f: Factory,
  o: { registry?: string; headers?: boolean; nodes?: string },
): Promise<void> {
  if (o.nodes !== undefined) return listNodes(f, o.nodes, o.headers !== false);
  const registry = await clusterRegistry(f, o.registry);
  await checkRegistryUp(registry);
  const images = await listRegistry(registry);
  const rows: string[][] = o.headers === false ? [] : [['IMAGE', 'TAG', 'DIGEST', 'SIZE']];
  for (const i of images.sort((a, b) => (a.repository + a.tag).localeCompare(b.repository + b.tag))) {
    rows.push([`${DOCKER_HUB}/${i.repository}`, i.tag, i.digest.slice(0, 19), humanSize(i.size)]);
  }
  f.io.out.write(alignColumns(rows));
}

/** What each node's containerd holds for Kubernetes (namespace k8s.io), named images only. */
async function listNodes(f: Factory, list: string, headers: boolean): Promise<void> {
  const names = list
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  if (names.length === 0) throw new CliError('--nodes needs at least one node name');
  const sockets = await nodeSockets(f, names);
  const rows: string[][] = headers ? [['NODE', 'IMAGE', 'TAG', 'DIGEST', 'SIZE']] : [];
  for (const [node, socket] of sockets) {
    let stdout: string;
    try {
      ({ stdout } = await run('ctr', ['--address', socket, '-n', 'k8s.io', 'images', 'ls'], {
        maxBuffer: 16 << 20,
      }));
    } catch (e) {
      const err = e as { stderr?: string; message: string };
      throw new CliError(
        `listing node "${node}"'s images failed: ${(err.stderr ?? '').trim() || err.message}`,
      );
    }
    // REF TYPE DIGEST SIZE(two words) PLATFORMS LABELS; digest-only refs are the same images again.
    for (const line of stdout.split('\n').slice(1)) {
      const [ref, , digest, size, unit] = line.trim().split(/\s+/);
      if (!ref || ref.startsWith('sha256:')) continue;
      const at = ref.lastIndexOf(':');
      rows.push([
        node,
        ref.slice(0, at),
        ref.slice(at + 1),
        (digest ?? '').slice(0, 19),
        `${size ?? ''}${unit ?? ''}`,
      ]);
    }
  }
  f.io.out.write(alignColumns(rows));
}

function humanSize(n: number): string {
  if (n < 1000) return `${n}B`;
  if (n < 1000 ** 2) return `${(n / 1000).toFixed(1)}kB`;
  if (n < 1000 ** 3) return `${(n / 1000 ** 2).toFixed(1)}MB`;
  return `${(n / 1000 ** 3).toFixed(2)}GB`;
}
