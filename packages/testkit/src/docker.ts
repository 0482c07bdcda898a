import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { unmountUnder } from '@kubit/cri/node-teardown';
import { repoRoot, startProcess, TestProcess, tempDir, waitFor } from './process.js';

const run = promisify(execFile);

const DOCKERD_BIN = '/usr/sbin/dockerd';

/**
 * A private Docker Engine (Debian's docker.io) for one test: its own data
 * root, exec root, PID file and unix socket, so it shares nothing with any
 * other dockerd on the machine. Started and stopped by PID.
 */
export interface TestDockerEngine {
  /** The directory holding the data root, exec root, socket, PID file and log. */
  readonly dir: string;
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

export interface DockerEngineOptions {
  startTimeoutMs?: number;
  /**
   * Let dockerd outlive the test process (for a post-mortem: KUBIT_KEEP_CLUSTER=1).
   * By default a test process that exits without stopping it kills it.
   */
  outliveTest?: boolean;
}

export async function startDockerEngine(opts: DockerEngineOptions = {}): Promise<TestDockerEngine> {
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
  const args = [
    `--data-root=${dataRoot}`,
    `--exec-root=${execRoot}`,
    `--pidfile=${join(dir.path, 'dockerd.pid')}`,
    `-H`,
    host,
    // Its own containerd (under the exec root), never the machine's or another test's.
    `--containerd-namespace=kubit-test`,
    `--containerd-plugins-namespace=kubit-test-plugins`,
    // Nothing on the host outlives the engine: no docker0 bridge, no iptables
    // chains, no ip_forward change (dockerd never removes them). Containers on a
    // compose network still reach each other and the host, published ports go
    // through docker-proxy and the embedded DNS works; only NAT to the outside
    // is gone, which nothing here needs (images are built without network).
    '--bridge=none',
    '--iptables=false',
    '--ip-forward=false',
  ];
  const proc = opts.outliveTest
    ? startDetached(args, logFile)
    : startProcess({ command: DOCKERD_BIN, args, logFile, name: 'dockerd' });
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
  return { dir: dir.path, host, socket, dataRoot, process: proc, env, logTail, stop };
}

/** dockerd in its own session, logging straight to its file, not killed when the test process exits. */
function startDetached(args: string[], logFile: string): TestProcess {
  const log = openSync(logFile, 'a');
  try {
    const child = spawn(DOCKERD_BIN, args, { cwd: repoRoot, detached: true, stdio: ['ignore', log, log] });
    child.unref();
    return new TestProcess(child, 'dockerd');
  } finally {
    closeSync(log);
  }
}
