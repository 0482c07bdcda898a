import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { chmod, copyFile, mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The test images, built offline from the host's Debian packages (no registry
 * on the internet is reachable). Each is written as an OCI image layout with
 * one uncompressed layer and pushed to a local registry with skopeo.
 *
 * `repository` is the path in the registry; containerd sees them through a
 * docker.io mirror as docker.io/<repository>:<tag>.
 */
export interface TestImage {
  repository: string;
  tag: string;
  /** The fully normalized name CRI reports, e.g. docker.io/library/nginx:latest. */
  name: string;
  /** The OCI layout directory. */
  layout: string;
}

/** The sandbox ("pause") image containerd is configured with; see deploy/containerd/config.toml. */
export const PAUSE_IMAGE = 'docker.io/local/pause:1';
export const BUSYBOX_IMAGE = 'docker.io/library/busybox:latest';
export const NGINX_IMAGE = 'docker.io/library/nginx:latest';

// Bump when the way images are built changes, so cached builds are not reused.
const BUILDER_VERSION = '6';
const BUSYBOX_BIN = '/usr/bin/busybox';
const NGINX_BIN = '/usr/sbin/nginx';
/** Debian's wget, in the busybox image: busybox-static's own wget crashes here on names and timeouts. */
const WGET_BIN = '/usr/bin/wget';
const DASH_BIN = '/bin/dash';
const PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const NGINX_CONF = `# Kubit's test nginx: one worker, port 80, access log to stdout.
user nobody nogroup;
worker_processes 1;
daemon off;
error_log stderr notice;
pid /run/nginx.pid;
events { worker_connections 128; }
http {
  types { text/html html; text/plain txt; }
  default_type application/octet-stream;
  access_log /dev/stdout;
  server {
    listen 80;
    root /usr/share/nginx/html;
    location / { index index.html; }
  }
}
`;

const NGINX_INDEX =
  '<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head><body><h1>Welcome to nginx!</h1></body></html>\n';

const PASSWD = 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n';
const GROUP = 'root:x:0:\nnogroup:x:65534:\n';

function goArch(): string {
  const map: Record<string, string> = {
    x64: 'amd64',
    arm64: 'arm64',
    arm: 'arm',
    ppc64: 'ppc64le',
    s390x: 's390x',
  };
  return map[process.arch] ?? process.arch;
}

function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

async function writeBlob(layout: string, data: Buffer | string): Promise<{ digest: string; size: number }> {
  const hex = sha256(data);
  await mkdir(join(layout, 'blobs', 'sha256'), { recursive: true });
  await writeFile(join(layout, 'blobs', 'sha256', hex), data);
  return { digest: `sha256:${hex}`, size: Buffer.byteLength(data) };
}

async function baseRootfs(root: string): Promise<void> {
  for (const d of ['bin', 'etc', 'proc', 'sys', 'dev', 'root', 'run', 'var', 'usr/bin', 'usr/sbin']) {
    await mkdir(join(root, d), { recursive: true });
  }
  await mkdir(join(root, 'tmp'), { recursive: true });
  await chmod(join(root, 'tmp'), 0o1777);
  await writeFile(join(root, 'etc', 'passwd'), PASSWD);
  await writeFile(join(root, 'etc', 'group'), GROUP);
  await writeFile(join(root, 'etc', 'hosts'), '127.0.0.1 localhost\n');
}

/** busybox as /bin/busybox plus one symlink per applet (sh, sleep, httpd, cat, ...). */
async function busyboxRootfs(root: string): Promise<void> {
  await baseRootfs(root);
  await copyFile(BUSYBOX_BIN, join(root, 'bin', 'busybox'));
  await chmod(join(root, 'bin', 'busybox'), 0o755);
  const { stdout } = await run(BUSYBOX_BIN, ['--list']);
  for (const applet of stdout.split('\n').map((s) => s.trim())) {
    if (!applet || applet === 'busybox' || applet.includes('/')) continue;
    await symlink('busybox', join(root, 'bin', applet));
  }
}

/** Copies a dynamic binary to the same path under `root`, with the shared libraries ldd names. */
async function copyWithLibraries(root: string, bin: string): Promise<void> {
  await mkdir(join(root, dirname(bin)), { recursive: true });
  await copyFile(bin, join(root, bin));
  await chmod(join(root, bin), 0o755);
  const { stdout } = await run('ldd', [bin]);
  for (const line of stdout.split('\n')) {
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (!m) continue;
    const lib = m[1];
    await mkdir(join(root, dirname(lib)), { recursive: true });
    await copyFile(lib, join(root, lib)); // follows symlinks: the real library under the name the loader asks for
    await chmod(join(root, lib), 0o755);
  }
}

/**
 * busybox, and Debian's wget as /usr/bin/wget (ahead of busybox's applet on PATH),
 * so `wget -qO- http://web` resolves through the pod's resolv.conf as the
 * Kubernetes documentation's busybox does. /bin/sh is Debian's dash: busybox's own
 * shell runs its wget applet whatever PATH says.
 */
async function busyboxWithWgetRootfs(root: string): Promise<void> {
  await busyboxRootfs(root);
  await copyWithLibraries(root, WGET_BIN);
  await copyWithLibraries(root, DASH_BIN);
  await rm(join(root, 'bin', 'sh'), { force: true });
  await symlink('dash', join(root, 'bin', 'sh'));
  await writeFile(join(root, 'etc', 'nsswitch.conf'), 'hosts: files dns\n');
}

/**
 * The nginx binary, the shared libraries ldd names, a config and an index page,
 * on the busybox image's tools (sh, cat, tar, ls, env, Debian's wget): as in
 * the real nginx image, `kubectl exec … -- cat`, `kubectl cp` (tar) and a
 * debugging shell work in it.
 */
async function nginxRootfs(root: string): Promise<void> {
  await busyboxWithWgetRootfs(root);
  await copyWithLibraries(root, NGINX_BIN);
  for (const d of ['etc/nginx', 'var/lib/nginx', 'var/log/nginx', 'usr/share/nginx/html']) {
    await mkdir(join(root, d), { recursive: true });
  }
  await writeFile(join(root, 'etc', 'nginx', 'nginx.conf'), NGINX_CONF);
  await writeFile(join(root, 'usr', 'share', 'nginx', 'html', 'index.html'), NGINX_INDEX);
}

interface ImageConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  WorkingDir?: string;
  ExposedPorts?: Record<string, Record<string, never>>;
}

async function writeLayout(layout: string, rootfs: string, config: ImageConfig, tag: string): Promise<void> {
  const layerTar = join(dirname(layout), `${tag}-layer.tar`);
  // Deterministic tar: sorted names, root ownership, fixed mtimes.
  await run('tar', [
    '--sort=name',
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '--mtime=@0',
    '-C',
    rootfs,
    '-cf',
    layerTar,
    '.',
  ]);
  const layerData = await readFile(layerTar);
  await rm(layerTar);
  const layer = await writeBlob(layout, layerData);
  const imageConfig = {
    architecture: goArch(),
    os: 'linux',
    created: '1970-01-01T00:00:00Z',
    config: { Env: [PATH_ENV], WorkingDir: '/', ...config },
    rootfs: { type: 'layers', diff_ids: [layer.digest] },
    history: [{ created: '1970-01-01T00:00:00Z', created_by: 'kubit testkit images.ts' }],
  };
  const cfg = await writeBlob(layout, JSON.stringify(imageConfig));
  const manifest = {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...cfg },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
  };
  const man = await writeBlob(layout, JSON.stringify(manifest));
  await writeFile(
    join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          ...man,
          annotations: { 'org.opencontainers.image.ref.name': tag },
        },
      ],
    }),
  );
  await writeFile(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
}

/** A key that changes when the inputs (host binaries, this builder) change. */
function cacheKey(): string {
  const parts = [BUILDER_VERSION, NGINX_CONF];
  for (const f of [BUSYBOX_BIN, NGINX_BIN, WGET_BIN]) {
    const st = statSync(f);
    parts.push(`${f}:${st.size}:${st.mtimeMs}`);
  }
  return sha256(parts.join('\n')).slice(0, 16);
}

interface ImageRecipe {
  repository: string;
  tag: string;
  rootfs: (root: string) => Promise<void>;
  config: ImageConfig;
}

const recipes: ImageRecipe[] = [
  {
    repository: 'local/pause',
    tag: '1',
    rootfs: busyboxRootfs,
    // Sleeps until told to stop; the trap makes SIGTERM end it at once even as PID 1.
    config: {
      Entrypoint: ['/bin/sh', '-c', "trap 'exit 0' TERM INT; while true; do sleep 3600 & wait $!; done"],
    },
  },
  { repository: 'library/busybox', tag: 'latest', rootfs: busyboxWithWgetRootfs, config: { Cmd: ['sh'] } },
  {
    repository: 'library/nginx',
    tag: 'latest',
    rootfs: nginxRootfs,
    config: { Cmd: ['/usr/sbin/nginx'], ExposedPorts: { '80/tcp': {} } },
  },
];

function imagesOf(dir: string): TestImage[] {
  return recipes.map((r) => ({
    repository: r.repository,
    tag: r.tag,
    name: `docker.io/${r.repository}:${r.tag}`,
    layout: join(dir, r.repository.replace('/', '_')),
  }));
}

/**
 * Builds the test images once per machine (cached under the OS temp dir, keyed
 * by the inputs) and returns them. Safe to call from test files running in
 * parallel: each build happens in a private directory that is renamed into
 * place, and the loser of a race uses the winner's.
 */
export async function buildTestImages(): Promise<TestImage[]> {
  for (const bin of [BUSYBOX_BIN, NGINX_BIN, WGET_BIN]) {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: install busybox-static, nginx-light and wget`);
  }
  const dir = join(tmpdir(), `kubit-test-images-${cacheKey()}`);
  if (existsSync(join(dir, 'complete'))) return imagesOf(dir);
  const work = `${dir}.${process.pid}.${Date.now()}`;
  await mkdir(work, { recursive: true });
  try {
    for (const r of recipes) {
      const rootfs = join(work, `${r.repository.replace('/', '_')}-rootfs`);
      await mkdir(rootfs, { recursive: true });
      await r.rootfs(rootfs);
      await writeLayout(join(work, r.repository.replace('/', '_')), rootfs, r.config, r.tag);
      await rm(rootfs, { recursive: true, force: true });
    }
    await writeFile(join(work, 'complete'), new Date().toISOString());
    try {
      await rename(work, dir);
    } catch {
      // Another process finished first; use its build.
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  if (!existsSync(join(dir, 'complete'))) throw new Error(`building test images in ${dir} failed`);
  return imagesOf(dir);
}

/** Copies the images into a registry at `host` ("127.0.0.1:PORT") over plain HTTP. */
export async function pushTestImages(host: string, images?: TestImage[]): Promise<TestImage[]> {
  const list = images ?? (await buildTestImages());
  await Promise.all(list.map((img) => pushTestImage(img, `${host}/${img.repository}:${img.tag}`)));
  return list;
}

/**
 * Copies one image to `dest` ("HOST:PORT/REPO:TAG") over plain HTTP, logging in
 * with `creds` ("USER:PASSWORD") when the registry wants it.
 */
export async function pushTestImage(img: TestImage, dest: string, creds?: string): Promise<void> {
  await run(
    'skopeo',
    [
      '--insecure-policy',
      'copy',
      '--quiet',
      '--dest-tls-verify=false',
      ...(creds ? ['--dest-creds', creds] : []),
      `oci:${img.layout}:${img.tag}`,
      `docker://${dest}`,
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
}

/**
 * A CRI ContainerConfig that keeps `image` running (`sleep 3600`), logging to
 * c/0.log under its sandbox: for benchmarks that drive the runtime directly.
 */
export function sleeperContainerConfig(image: string) {
  return {
    metadata: { name: 'c', attempt: 0 },
    image: { image },
    command: ['sleep', '3600'],
    args: [] as string[],
    workingDir: '',
    envs: [] as { key: string; value: string }[],
    mounts: [] as never[],
    labels: { 'io.kubernetes.container.name': 'c' } as Record<string, string>,
    annotations: {} as Record<string, string>,
    logPath: 'c/0.log',
  };
}
