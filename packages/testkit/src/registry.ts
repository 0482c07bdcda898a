import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort, startProcess, type TestProcess, tempDir, waitFor } from './process.js';

const REGISTRY_BIN = '/usr/bin/docker-registry';

/** A real OCI registry (Debian's docker-registry, distribution 2.8) on a loopback port. */
export interface TestRegistry {
  /** "127.0.0.1:PORT", for image references and hosts.toml. */
  readonly host: string;
  readonly port: number;
  readonly process: TestProcess;
  stop(): Promise<void>;
}

export async function startRegistry(): Promise<TestRegistry> {
  if (!existsSync(REGISTRY_BIN)) {
    throw new Error(`${REGISTRY_BIN} is missing: install Debian's docker-registry package`);
  }
  const dir = await tempDir('kubit-registry-');
  const port = await freePort();
  const config = [
    'version: 0.1',
    'log:',
    '  level: warn',
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
  const proc = startProcess({
    command: REGISTRY_BIN,
    args: ['serve', configFile],
    logFile: join(dir.path, 'registry.log'),
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
        return res.status === 200;
      },
      20_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { host, port, process: proc, stop };
}
