// Where `kubit image load` takes an image from: an OCI archive or layout
// directory, a docker-archive (`docker save`), or an image a local Docker or
// containerd holds. Each becomes a skopeo source (transport:path[:ref]) and the
// names its images carry. Everything is looked at before anything is pushed.

import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { CliError } from '../errors.js';
import { formatReference, type ImageReference, parseReference } from './reference.js';

const run = promisify(execFile);

/** One image to copy: a skopeo source and the name it has (undefined: none, --name must give one). */
export interface SourceImage {
  source: string;
  name?: ImageReference;
  /** What to call it in messages. */
  label: string;
}

/** A name that came with an image; names that are not references (a bare tag) count as none. */
function nameOf(s: string | undefined): ImageReference | undefined {
  if (!s) return undefined;
  try {
    return s.includes('/') || s.includes(':') ? parseReference(s) : undefined;
  } catch {
    return undefined;
  }
}

async function tarEntries(path: string): Promise<string[]> {
  try {
    const { stdout } = await run('tar', ['-tf', path], { maxBuffer: 64 << 20 });
    return stdout.split('\n').filter((l) => l !== '');
  } catch (e) {
    const why = ((e as { stderr?: string }).stderr ?? '').trim().split('\n')[0] || (e as Error).message;
    throw new CliError(`${path} is not an image tarball: tar cannot read it (${why})`);
  }
}

async function tarFile(path: string, entry: string): Promise<string> {
  const { stdout } = await run('tar', ['-xOf', path, entry], { maxBuffer: 64 << 20 });
  return stdout;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CliError(`${what} is not valid JSON (${(e as Error).message})`);
  }
}

interface OciIndex {
  manifests?: { annotations?: Record<string, string> }[];
}

function ociImages(index: unknown, transport: string, path: string): SourceImage[] {
  const manifests = (index as OciIndex).manifests;
  if (!Array.isArray(manifests) || manifests.length === 0)
    throw new CliError(`${path} is not an image tarball: its index.json lists no images`);
  return manifests.map((m, i) => {
    const refName = m.annotations?.['org.opencontainers.image.ref.name'];
    const name = nameOf(m.annotations?.['io.containerd.image.name']) ?? nameOf(refName);
    // skopeo picks an image of a layout by its ref.name, or takes the only one.
    if (manifests.length > 1 && !refName)
      throw new CliError(
        `${path} holds ${manifests.length} images and image ${i + 1} has no org.opencontainers.image.ref.name to pick it by: ` +
          'save one image per archive',
      );
    const source = manifests.length > 1 ? `${transport}:${path}:${refName}` : `${transport}:${path}`;
    return { source, ...(name ? { name } : {}), label: `${path} (image ${i + 1})` };
  });
}

interface DockerManifestEntry {
  RepoTags?: string[] | null;
}

function dockerArchiveImages(manifest: unknown, path: string): SourceImage[] {
  if (!Array.isArray(manifest) || manifest.length === 0)
    throw new CliError(`${path} is not an image tarball: its manifest.json lists no images`);
  return (manifest as DockerManifestEntry[]).flatMap((m, i) => {
    const tags = (m.RepoTags ?? []).filter((t) => nameOf(t));
    if (tags.length === 0)
      return [{ source: `docker-archive:${path}:@${i}`, label: `${path} (image ${i + 1})` }];
    return tags.map((t) => {
      const name = nameOf(t);
      return { source: `docker-archive:${path}:${t}`, ...(name ? { name } : {}), label: `${path} (${t})` };
    });
  });
}

/** A gzip'd tarball (`docker save | gzip`), which skopeo's archive transports cannot read. */
async function isGzip(path: string): Promise<boolean> {
  const fh = await open(path, 'r');
  try {
    const head = Buffer.alloc(2);
    const { bytesRead } = await fh.read(head, 0, 2, 0);
    return bytesRead === 2 && head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    await fh.close();
  }
}

/**
 * The images of an archive file or OCI layout directory; a gzip'd archive is
 * first decompressed into `scratch` (skopeo reads only plain tarballs).
 */
export async function archiveImages(given: string, scratch?: string): Promise<SourceImage[]> {
  let path = given;
  if (!statSync(path).isDirectory() && (await isGzip(path))) {
    if (!scratch) throw new CliError(`${given} is compressed: decompress it first (gzip -d)`);
    path = join(scratch, `${basename(given).replace(/\.(tgz|gz)$/, '')}.${Date.now()}.tar`);
    try {
      await run('sh', ['-c', 'gzip -dc "$1" > "$2"', 'sh', given, path]);
    } catch (e) {
      const why = ((e as { stderr?: string }).stderr ?? '').trim() || (e as Error).message;
      throw new CliError(`${given} is not an image tarball: gzip cannot decompress it (${why})`);
    }
  }
  const images = await layoutOrArchiveImages(path);
  // Messages name the file the user gave, not the decompressed copy.
  return path === given ? images : images.map((i) => ({ ...i, label: i.label.replace(path, given) }));
}

async function layoutOrArchiveImages(path: string): Promise<SourceImage[]> {
  if (statSync(path).isDirectory()) {
    if (!existsSync(join(path, 'oci-layout')) || !existsSync(join(path, 'index.json')))
      throw new CliError(`${path} is a directory but not an OCI image layout (no oci-layout and index.json)`);
    const index = parseJson(await readFile(join(path, 'index.json'), 'utf8'), `${path}/index.json`);
    return ociImages(index, 'oci', path);
  }
  const entries = await tarEntries(path);
  const find = (name: string) => entries.find((e) => e === name || e === `./${name}`);
  const layout = find('oci-layout');
  const index = find('index.json');
  const manifest = find('manifest.json');
  // docker save since Docker 25 writes both; its manifest.json keeps the tags.
  if (manifest) {
    return dockerArchiveImages(parseJson(await tarFile(path, manifest), `${path}: manifest.json`), path);
  }
  if (layout && index) {
    return ociImages(parseJson(await tarFile(path, index), `${path}: index.json`), 'oci-archive', path);
  }
  throw new CliError(
    `${path} is not an image tarball: it holds neither oci-layout and index.json (an OCI archive) nor manifest.json (docker save)`,
  );
}

export interface LocalRuntimes {
  /** containerd's socket, for images `ctr` can export. */
  containerdAddress: string;
  /** A scratch directory for a containerd export. */
  scratch: string;
}

async function tryRun(cmd: string, args: string[]): Promise<string | undefined> {
  try {
    await run(cmd, args, { maxBuffer: 16 << 20 });
    return undefined;
  } catch (e) {
    const err = e as { code?: string; stderr?: string; message: string };
    if (err.code === 'ENOENT') return `${cmd} is not installed`;
    return (err.stderr ?? '').trim().split('\n').pop() || err.message;
  }
}

/**
 * An image the machine's Docker or containerd holds, as a skopeo source: Docker
 * first (as kind loads docker images), then containerd's k8s.io and default
 * namespaces, exported to a scratch OCI archive.
 */
export async function localImage(ref: ImageReference, rt: LocalRuntimes): Promise<SourceImage> {
  const name = formatReference(ref);
  const tried: string[] = [];
  const dockerWhy = await tryRun('skopeo', ['inspect', '--raw', `docker-daemon:${name}`]);
  if (!dockerWhy) return { source: `docker-daemon:${name}`, name: ref, label: `${name} (Docker)` };
  tried.push(`the local Docker: ${dockerWhy}`);
  if (existsSync(rt.containerdAddress)) {
    for (const ns of ['k8s.io', 'default']) {
      const out = join(rt.scratch, `export-${ns}.tar`);
      const why = await tryRun('ctr', [
        '--address',
        rt.containerdAddress,
        '-n',
        ns,
        'images',
        'export',
        out,
        name,
      ]);
      if (!why) return { source: `oci-archive:${out}`, name: ref, label: `${name} (containerd, ${ns})` };
      tried.push(`containerd ${rt.containerdAddress} namespace ${ns}: ${why}`);
    }
  } else tried.push(`containerd: no socket at ${rt.containerdAddress}`);
  throw new CliError(
    `image "${name}" was found neither in the local Docker nor in containerd:\n  ${tried.join('\n  ')}\n` +
      'Load an archive instead (docker save -o app.tar IMAGE, or ctr images export app.tar IMAGE).',
  );
}
