// Volumes are set up on the node before any container of the pod is created:
// emptyDir (on disk, or tmpfs for medium Memory), hostPath, configMap, secret,
// downwardAPI, and projected (configMap, secret and downwardAPI sources).
// A missing configMap/secret that is not optional keeps the pod in
// ContainerCreating (the worker reports FailedMount and retries).
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { promisify } from 'node:util';
import { toNumber } from '@kubit/api';
import { isMountPoint, type MountEntry, mountsUnder, readMountTable } from '@kubit/cri/host-mounts';
import { createLogger, type Logger } from '@kubit/daemon';
import type {
  ConfigMapProjection,
  DownwardAPIVolumeFile,
  KeyToPath,
  Pod,
  SecretProjection,
  ServiceAccountTokenProjection,
  Volume,
} from 'kubernetes-types/core/v1.js';
import { detachDevice } from '../volumes/disk.js';
import { unmount } from '../volumes/mounter.js';
import { claimNameOf, PersistentMountError, setUpClaimVolume } from '../volumes/persistent.js';
import { ContainerConfigError, fieldValue, resourceValue } from './env.js';
import { logFailure } from './failures.js';
import type { ObjectSource } from './sinks.js';
import { type TokenManager, tokenRequestFor } from './tokens.js';

const run = promisify(execFile);

export class MountError extends Error {
  override name = 'MountError';
  constructor(
    readonly volume: string,
    message: string,
  ) {
    super(`MountVolume.SetUp failed for volume "${volume}" : ${message}`);
  }
}

/**
 * The loop device a mount holds: a filesystem on it (source /dev/loopN), or a Block
 * volume's bind mount of the device node itself (devtmpfs, root /loopN).
 */
function loopDeviceOf(m: MountEntry): string | undefined {
  if (/^\/dev\/loop\d+$/.test(m.source)) return m.source;
  if ((m.fsType === 'devtmpfs' || m.fsType === 'tmpfs') && /^\/loop\d+$/.test(m.root)) return `/dev${m.root}`;
  return undefined;
}

/** Writes `files` into `dir` (creating subdirectories), removing what is no longer listed. */
async function syncFiles(dir: string, files: Map<string, { data: Buffer; mode: number }>): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [rel, f] of files) {
    const path = join(dir, rel);
    let same = false;
    try {
      same = readFileSync(path).equals(f.data) && (statSync(path).mode & 0o777) === f.mode;
    } catch {
      same = false;
    }
    if (same) continue;
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, f.data);
    await chmod(path, f.mode);
  }
  const top = new Set([...files.keys()].map((k) => k.split('/')[0]));
  for (const entry of await readdir(dir)) {
    if (!top.has(entry)) await rm(join(dir, entry), { recursive: true, force: true });
  }
}

function safeRelative(volume: string, path: string): string {
  const n = normalize(path);
  if (n.startsWith('/') || n.startsWith('..')) throw new MountError(volume, `invalid item path "${path}"`);
  return n;
}

function projectKeys(
  volume: string,
  data: Map<string, Buffer>,
  items: KeyToPath[] | undefined,
  defaultMode: number,
  optional: boolean,
  kind: string,
  name: string,
): Map<string, { data: Buffer; mode: number }> {
  const out = new Map<string, { data: Buffer; mode: number }>();
  if (!items || items.length === 0) {
    for (const [k, v] of data) out.set(safeRelative(volume, k), { data: v, mode: defaultMode });
    return out;
  }
  for (const item of items) {
    const v = data.get(item.key);
    if (v === undefined) {
      if (optional) continue;
      throw new MountError(volume, `configuration of ${kind} "${name}" has no key "${item.key}"`);
    }
    out.set(safeRelative(volume, item.path), { data: v, mode: item.mode ?? defaultMode });
  }
  return out;
}

type Files = Map<string, { data: Buffer; mode: number }>;

/** Field paths a downwardAPI volume may project (status.* exists only for env). */
const VOLUME_FIELD_PATHS =
  /^metadata\.(name|namespace|uid|labels|annotations)$|^metadata\.(labels|annotations)\['.+'\]$/;

/** A whole label or annotation map as a file: one key="value" line per entry, sorted. */
function mapFile(map: Record<string, string> | undefined): string {
  return Object.keys(map ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(map?.[k] ?? '')}\n`)
    .join('');
}

/** The files of a downwardAPI volume or projection. */
function downwardFiles(pod: Pod, volume: string, items: DownwardAPIVolumeFile[], defaultMode: number): Files {
  const out: Files = new Map();
  for (const item of items) {
    let value: string;
    if (item.fieldRef) {
      const path = item.fieldRef.fieldPath;
      if (!VOLUME_FIELD_PATHS.test(path))
        throw new MountError(volume, `fieldRef fieldPath "${path}" is not supported in a downwardAPI volume`);
      if (path === 'metadata.labels') value = mapFile(pod.metadata?.labels);
      else if (path === 'metadata.annotations') value = mapFile(pod.metadata?.annotations);
      else value = fieldValue(pod, path, { podIP: '', hostIP: '' });
    } else if (item.resourceFieldRef) {
      const ref = item.resourceFieldRef;
      const c = pod.spec?.containers.find((x) => x.name === ref.containerName);
      if (!c)
        throw new MountError(volume, `resourceFieldRef names no container "${ref.containerName ?? ''}"`);
      try {
        value = resourceValue(c, ref.resource, ref.divisor);
      } catch (err) {
        if (err instanceof ContainerConfigError) throw new MountError(volume, err.message);
        throw err;
      }
    } else {
      throw new MountError(volume, `item "${item.path}" has neither fieldRef nor resourceFieldRef`);
    }
    out.set(safeRelative(volume, item.path), { data: Buffer.from(value), mode: item.mode ?? defaultMode });
  }
  return out;
}

export class VolumeManager {
  constructor(
    /** The kubelet's --root-dir; pod volumes live under pods/<uid>/volumes. */
    private readonly rootDir: string,
    private readonly objects: ObjectSource,
    private readonly log: Logger = createLogger({ name: 'kubit-kubelet', level: 'silent' }),
    /** Tokens for serviceAccountToken projections; without it such a volume cannot be set up. */
    private readonly tokens?: TokenManager,
  ) {}

  podDir(uid: string): string {
    return join(this.rootDir, 'pods', uid);
  }

  /** Sets up every volume of the pod; returns volume name → host path. */
  async setUp(pod: Pod): Promise<Map<string, string>> {
    const uid = pod.metadata?.uid ?? '';
    const ns = pod.metadata?.namespace ?? 'default';
    const paths = new Map<string, string>();
    for (const v of pod.spec?.volumes ?? []) {
      paths.set(v.name, await this.setUpOne(pod, uid, ns, v));
    }
    return paths;
  }

  /** The files a configMap volume or projection holds (none when optional and missing). */
  private async configMapFiles(
    volume: string,
    ns: string,
    src: ConfigMapProjection,
    defaultMode: number,
  ): Promise<Files> {
    const name = src.name ?? '';
    const cm = await this.objects.configMap(ns, name);
    if (!cm && !src.optional) throw new MountError(volume, `configmap "${name}" not found`);
    const data = new Map<string, Buffer>();
    for (const [k, s] of Object.entries(cm?.data ?? {})) data.set(k, Buffer.from(s));
    for (const [k, s] of Object.entries(cm?.binaryData ?? {})) data.set(k, Buffer.from(s, 'base64'));
    return projectKeys(volume, data, src.items, defaultMode, !!src.optional, 'configmap', name);
  }

  /** The files a secret volume or projection holds (none when optional and missing). */
  private async secretFiles(
    volume: string,
    ns: string,
    src: SecretProjection,
    defaultMode: number,
  ): Promise<Files> {
    const name = src.name ?? '';
    const s = await this.objects.secret(ns, name);
    if (!s && !src.optional) throw new MountError(volume, `secret "${name}" not found`);
    const data = new Map<string, Buffer>();
    for (const [k, b64] of Object.entries(s?.data ?? {})) data.set(k, Buffer.from(b64, 'base64'));
    for (const [k, str] of Object.entries(s?.stringData ?? {})) data.set(k, Buffer.from(str));
    return projectKeys(volume, data, src.items, defaultMode, !!src.optional, 'secret', name);
  }

  /** A serviceAccountToken projection: the pod's bound token, asked of the apiserver (tokens.ts). */
  private async tokenFile(
    pod: Pod,
    volume: string,
    src: ServiceAccountTokenProjection,
    mode: number,
  ): Promise<Files> {
    if (!this.tokens) throw new MountError(volume, 'this kubelet cannot request service account tokens');
    let token: string;
    try {
      token = await this.tokens.token(tokenRequestFor(pod, src));
    } catch (err) {
      throw new MountError(volume, `failed to fetch token: ${(err as Error).message}`);
    }
    return new Map([[safeRelative(volume, src.path), { data: Buffer.from(token), mode }]]);
  }

  private async setUpOne(pod: Pod, uid: string, ns: string, v: Volume): Promise<string> {
    const base = join(this.podDir(uid), 'volumes');
    const claimName = claimNameOf(pod, v);
    if (claimName !== undefined) {
      try {
        return await setUpClaimVolume(pod, v, claimName, this.objects, base);
      } catch (err) {
        if (err instanceof PersistentMountError) throw new MountError(v.name, err.message);
        throw err;
      }
    }
    if (v.emptyDir) {
      const dir = join(base, 'kubernetes.io~empty-dir', v.name);
      await mkdir(dir, { recursive: true });
      await chmod(dir, 0o777);
      if (v.emptyDir.medium === 'Memory' && !isMountPoint(dir)) {
        const opts = ['mode=0777'];
        if (v.emptyDir.sizeLimit) opts.push(`size=${Math.floor(toNumber(v.emptyDir.sizeLimit))}`);
        try {
          await run('mount', ['-t', 'tmpfs', '-o', opts.join(','), 'tmpfs', dir]);
        } catch (err) {
          throw new MountError(v.name, `mounting tmpfs failed: ${(err as Error).message}`);
        }
      }
      return dir;
    }
    if (v.hostPath) {
      const path = v.hostPath.path;
      const type = v.hostPath.type ?? '';
      if (type === 'DirectoryOrCreate') await mkdir(path, { recursive: true });
      else if (type === 'FileOrCreate' && !existsSync(path)) {
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, '');
      } else if (type === 'Directory' && !(existsSync(path) && statSync(path).isDirectory())) {
        throw new MountError(v.name, `hostPath type check failed: ${path} is not a directory`);
      } else if (type === 'File' && !(existsSync(path) && statSync(path).isFile())) {
        throw new MountError(v.name, `hostPath type check failed: ${path} is not a file`);
      }
      return path;
    }
    if (v.configMap) {
      const dir = join(base, 'kubernetes.io~configmap', v.name);
      const { name, items, optional } = v.configMap;
      await syncFiles(
        dir,
        await this.configMapFiles(v.name, ns, { name, items, optional }, v.configMap.defaultMode ?? 0o644),
      );
      return dir;
    }
    if (v.secret) {
      const dir = join(base, 'kubernetes.io~secret', v.name);
      const { secretName: name, items, optional } = v.secret;
      await syncFiles(
        dir,
        await this.secretFiles(v.name, ns, { name, items, optional }, v.secret.defaultMode ?? 0o644),
      );
      return dir;
    }
    if (v.downwardAPI) {
      const dir = join(base, 'kubernetes.io~downward-api', v.name);
      await syncFiles(
        dir,
        downwardFiles(pod, v.name, v.downwardAPI.items ?? [], v.downwardAPI.defaultMode ?? 0o644),
      );
      return dir;
    }
    if (v.projected) {
      const mode = v.projected.defaultMode ?? 0o644;
      const files: Files = new Map();
      for (const src of v.projected.sources ?? []) {
        let part: Files;
        if (src.configMap) part = await this.configMapFiles(v.name, ns, src.configMap, mode);
        else if (src.secret) part = await this.secretFiles(v.name, ns, src.secret, mode);
        else if (src.downwardAPI) part = downwardFiles(pod, v.name, src.downwardAPI.items ?? [], mode);
        else if (src.serviceAccountToken)
          part = await this.tokenFile(pod, v.name, src.serviceAccountToken, mode);
        else
          throw new MountError(
            v.name,
            'unsupported projected source (Kubit projects configMap, secret, downwardAPI and serviceAccountToken)',
          );
        for (const [path, f] of part) files.set(path, f);
      }
      const dir = join(base, 'kubernetes.io~projected', v.name);
      await syncFiles(dir, files);
      return dir;
    }
    throw new MountError(
      v.name,
      'unsupported volume type (Kubit supports emptyDir, hostPath, configMap, secret, downwardAPI, projected, persistentVolumeClaim, ephemeral)',
    );
  }

  /**
   * Unmounts the pod's volumes (tmpfs, bind mounts of local volumes, disks), detaches the
   * loop devices no other mount uses, and removes the pod's directory. It works from the
   * kernel's mount table alone, so it also cleans up after a kubelet that was killed. A
   * directory that still has a mount below it is not removed: that would delete the data
   * of a persistent volume through its bind mount.
   */
  async tearDown(uid: string): Promise<void> {
    this.tokens?.forgetPod(uid);
    const dir = this.podDir(uid);
    if (!existsSync(dir)) return;
    for (const m of mountsUnder(dir)) {
      try {
        await unmount(m.mountPoint);
      } catch (err) {
        logFailure(this.log, { pod: `uid ${uid}`, call: `umount ${m.mountPoint}` })(err);
        continue;
      }
      const loop = loopDeviceOf(m);
      if (loop && !readMountTable().some((x) => loopDeviceOf(x) === loop))
        await detachDevice(loop).catch(
          logFailure(this.log, { pod: `uid ${uid}`, call: `losetup -d ${loop}` }),
        );
    }
    if (mountsUnder(dir).length > 0) throw new Error(`pod ${uid}: volumes are still mounted under ${dir}`);
    await rm(dir, { recursive: true, force: true });
  }

  /** UIDs of pods that have a directory here (to find leftovers after a restart). */
  async knownPodUids(): Promise<string[]> {
    const dir = join(this.rootDir, 'pods');
    if (!existsSync(dir)) return [];
    return readdir(dir);
  }
}
