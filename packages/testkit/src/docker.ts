import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startProcess, type TestProcess, tempDir, waitFor } from './process.js';

const run = promisify(execFile);

const DOCKERD_BIN = '/usr/sbin/dockerd';

/**
 * A private Docker Engine (Debian's docker.io) for one test: its own data
 * root, exec root, PID file and unix socket, so it shares nothing with any
 * other dockerd on the machine. Started and stopped by PID.
 */
export interface TestDockerEngine {
  /** "unix:///…/docker.sock", for DOCKER_HOST. */
  readonly host: string;
  readonly socket: string;
  readonly dataRoot: string;
  readonly process: TestProcess;
  /** process.env plus DOCKER_HOST: the environment for docker, docker-compose and scripts. */
  readonly env: NodeJS.ProcessEnv;
  /** The end of dockerd's log, for failure messages. */
  logTail(lines?: number): string;
  /** Stops dockerd by PID (it stops its containers and its containerd) and removes its directories. */
  stop(): Promise<void>;
}

/** Lazily unmounts whatever is still mounted under `dir` (overlay layers, netns files), deepest first. */
async function unmountUnder(dir: string): Promise<void> {
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .map((p) => p.replace(/\\040/g, ' '))
    .filter((p) => p === dir || p.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) await run('umount', ['-l', m]).catch(() => undefined);
}

export async function startDockerEngine(opts: { startTimeoutMs?: number } = {}): Promise<TestDockerEngine> {
  if (!existsSync(DOCKERD_BIN)) {
    throw new Error(`${DOCKERD_BIN} is missing: install Debian's docker.io package`);
  }
  if (process.getuid?.() !== 0) throw new Error('a private dockerd needs root');
  const dir = await tempDir('kubit-dockerd-');
  const dataRoot = join(dir.path, 'data');
  const execRoot = join(dir.path, 'exec');
  const socket = join(dir.path, 'docker.sock');
  const host = `unix://${socket}`;
  const logFile = join(dir.path, 'dockerd.log');
  const proc = startProcess({
    command: DOCKERD_BIN,
    args: [
      `--data-root=${dataRoot}`,
      `--exec-root=${execRoot}`,
      `--pidfile=${join(dir.path, 'dockerd.pid')}`,
      `-H`,
      host,
      // Its own containerd (under the exec root), never the machine's or another test's.
      `--containerd-namespace=kubit-test`,
      `--containerd-plugins-namespace=kubit-test-plugins`,
    ],
    logFile,
    name: 'dockerd',
  });
  const env = { ...process.env, DOCKER_HOST: host };
  const logTail = (lines = 20) =>
    existsSync(logFile) ? readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n') : '';
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // dockerd gives its containers 15 s to stop, then its containerd a moment.
    await proc.stop(40_000);
    await unmountUnder(dir.path);
    await rm(dir.path, { recursive: true, force: true }).catch(async () => {
      await unmountUnder(dir.path);
      await rm(dir.path, { recursive: true, force: true });
    });
  };
  try {
    await waitFor(
      'dockerd to answer on its socket',
      async () => {
        if (!proc.running) throw new Error(`dockerd exited:\n${logTail()}`);
        if (!existsSync(socket)) return false;
        await run('docker', ['version', '--format', '{{.Server.Version}}'], { env });
        return true;
      },
      opts.startTimeoutMs ?? 60_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { host, socket, dataRoot, process: proc, env, logTail, stop };
}
