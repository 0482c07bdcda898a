#!/usr/bin/env node
import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { repoRootOf } from '@kubit/daemon';
import { listClusters } from '@kubit/daemon/cluster-registry';
import { type LauncherArgs, parseArgs } from './args.js';
import type { DaemonRunner } from './commands.js';
import { DEFAULT_CLUSTER_NAME } from './config.js';
import { down, status } from './down.js';
import { writeEnvFiles } from './env-files.js';
import { clusterId } from './layout.js';
import { up } from './up.js';

const say = (line: string) => process.stderr.write(`${line}\n`);

/** A `kubit` on PATH for this cluster: the built CLI. */
async function writeCliWrapper(stateDir: string, repoRoot: string): Promise<string> {
  const bin = join(stateDir, 'bin');
  await mkdir(bin, { recursive: true });
  const file = join(bin, 'kubit');
  await writeFile(
    file,
    `#!/bin/sh\nexec node ${join(repoRoot, 'packages', 'cli', 'dist', 'src', 'kubit.js')} "$@"\n`,
  );
  await chmod(file, 0o755);
  return bin;
}

/**
 * Where a cluster's state lives, and the name a new one there gets. The default cluster's
 * is the checkout's .kubit, another name's .kubit-NAME; `down` and `status` of a name find
 * it wherever the machine's registry says it was made (a --state-dir of a test, say).
 * A --state-dir without --name names its cluster after the directory's id.
 */
function stateDirOf(args: LauncherArgs, repoRoot: string): { stateDir: string; defaultName: string } {
  const own = join(repoRoot, '.kubit');
  if (args.stateDir) {
    const dir = resolve(args.stateDir);
    return { stateDir: dir, defaultName: dir === own ? DEFAULT_CLUSTER_NAME : `kubit-${clusterId(dir)}` };
  }
  const name = args.settings.name ?? DEFAULT_CLUSTER_NAME;
  const mine = name === DEFAULT_CLUSTER_NAME ? own : `${own}-${name}`;
  if (args.command !== 'up' && !existsSync(join(mine, 'cluster.json'))) {
    const known = listClusters().find((c) => c.name === name);
    if (known) return { stateDir: known.stateDir, defaultName: name };
  }
  return { stateDir: mine, defaultName: name };
}

async function main(argv: string[]): Promise<void> {
  const repoRoot = repoRootOf(import.meta.url);
  const args = parseArgs(argv);
  const { stateDir, defaultName } = stateDirOf(args, repoRoot);
  const runner: DaemonRunner = {
    repoRoot,
    nodePath: process.execPath,
    fromSource: process.env.KUBIT_SOURCE === '1',
  };
  switch (args.command) {
    case 'up': {
      const r = await up({
        stateDir,
        runner,
        requested: args.settings,
        defaultName,
        timeoutMs: args.timeoutMs,
        say,
      });
      const width = Math.max(...r.phases.map(([n]) => n.length));
      for (const [name, ms] of r.phases) say(`  ${name.padEnd(width)}  ${(ms / 1000).toFixed(2)} s`);
      const bin = await writeCliWrapper(stateDir, repoRoot);
      const what =
        r.started.length === 0 ? 'was already running' : `is up (started ${r.started.length} processes)`;
      const nameFlag = r.settings.name === DEFAULT_CLUSTER_NAME ? '' : ` --name ${r.settings.name}`;
      process.stdout.write(
        [
          `Kubit ${what}: cluster "${r.settings.name}", ${r.settings.nodes} node(s) Ready, ${(r.totalMs / 1000).toFixed(2)} s.`,
          `Pods ${r.settings.clusterCidr}, Services ${r.settings.serviceCidr}, API ${r.apiserverUrl}.`,
          `Logs: ${r.layout.logsDir}/<name>.log. Stop it with ./scripts/down${nameFlag} (--purge also removes ${stateDir}).`,
          '',
          'Next:',
          `  export KUBECONFIG=${r.layout.adminKubeconfig} PATH=${bin}:$PATH`,
          '  kubit get nodes        # or kubectl get nodes',
          '',
        ].join('\n'),
      );
      return;
    }
    case 'down': {
      const r = await down({ stateDir, runner, purge: args.purge, say });
      process.stdout.write(
        r.stopped.length === 0 ? 'Kubit was not running.\n' : `Stopped ${r.stopped.length} processes.\n`,
      );
      return;
    }
    case 'env-files': {
      for (const f of await writeEnvFiles(stateDir, runner, resolve(args.outDir)))
        process.stdout.write(`${f}\n`);
      return;
    }
    case 'status': {
      const s = status(stateDir, runner);
      if (!s) {
        process.stdout.write(`no cluster in ${stateDir}\n`);
        return;
      }
      for (const [name, pid] of s)
        process.stdout.write(
          `${name.padEnd(32)} ${pid === undefined ? 'stopped' : `running (pid ${pid})`}\n`,
        );
      return;
    }
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`kubit-cluster: ${(err as Error).message}\n`);
  process.exit(1);
});
