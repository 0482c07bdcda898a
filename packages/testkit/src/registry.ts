import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, startProcess, type TestProcess, tempDir, waitFor } from './process.js';

const REGISTRY_BIN = '/usr/bin/docker-registry';

/** A real OCI registry (Debian's docker-registry, distribution 2.8) on a loopback port. */
export interface TestRegistry {
  /** "127.0.0.1:PORT", for image references and hosts.toml. */
  readonly host: string;
  readonly port: number;
  readonly process: TestProcess;
  /** The registry's log; with `logRequests`, one access line per request. */
  readonly logFile: string;
  stop(): Promise<void>;
}

export interface RegistryOptions {
  /** Basic authentication (htpasswd) for every request: one user. */
  htpasswd?: { username: string; password: string };
  /** Log at info level, which writes an access line for every request (tests that count them). */
  logRequests?: boolean;
}

/**
 * A bcrypt hash (the only scheme docker-registry's htpasswd accepts), made with
 * the C library's crypt() through perl, which every Debian has.
 */
async function bcrypt(password: string): Promise<string> {
  const alphabet = './ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const salt = [...randomBytes(22)].map((b) => alphabet[b % 64]).join('');
  const { stdout } = await promisify(execFile)('perl', [
    '-e',
    'print crypt($ARGV[0], $ARGV[1])',
    password,
    `$2b$05$${salt}`,
  ]);
  if (!stdout.startsWith('$2b$')) throw new Error(`crypt() made no bcrypt hash (got "${stdout}")`);
  return stdout;
}

export async function startRegistry(opts: RegistryOptions = {}): Promise<TestRegistry> {
  if (!existsSync(REGISTRY_BIN)) {
    throw new Error(`${REGISTRY_BIN} is missing: install Debian's docker-registry package`);
  }
  const dir = await tempDir('kubit-registry-');
  const port = await freePort();
  const auth: string[] = [];
  if (opts.htpasswd) {
    const file = join(dir.path, 'htpasswd');
    await writeFile(file, `${opts.htpasswd.username}:${await bcrypt(opts.htpasswd.password)}\n`);
    auth.push('auth:', '  htpasswd:', '    realm: kubit-test', `    path: ${file}`);
  }
  const config = [
    'version: 0.1',
    'log:',
    `  level: ${opts.logRequests ? 'info' : 'warn'}`,
    ...auth,
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${join(dir.path, 'data')}`,
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: 127.0.0.1:${port}`,
    '',
  ].join('\n');
  const configFile = join(dir.path, 'config.yml');
  await writeFile(configFile, config);
  const logFile = join(dir.path, 'registry.log');
  const proc = startProcess({
    command: REGISTRY_BIN,
    args: ['serve', configFile],
    logFile,
    name: 'docker-registry',
  });
  const host = `127.0.0.1:${port}`;
  const stop = async () => {
    await proc.stop();
    await dir.cleanup();
  };
  try {
    await waitFor(
      'the registry to answer /v2/',
      async () => {
        if (!proc.running) throw new Error('docker-registry exited; see its log');
        const res = await fetch(`http://${host}/v2/`);
        // Behind htpasswd /v2/ answers 401 with its challenge once it serves.
        return res.status === (opts.htpasswd ? 401 : 200);
      },
      20_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { host, port, process: proc, logFile, stop };
}
