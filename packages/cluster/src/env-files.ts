// The launcher's command lines as systemd EnvironmentFiles (deploy/systemd
// reads /etc/kubit/<process>.env), so a host run by systemd starts each
// daemon with exactly the flags `up` uses.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Command, clusterCommands, type DaemonRunner, readCluster } from './commands.js';

/** systemd splits an unquoted $VAR on whitespace and does no quote processing: refuse what it would break. */
function checkArg(arg: string): string {
  if (/[\s"'\\$]/.test(arg)) {
    throw new Error(`"${arg}" has whitespace, quotes, "\\" or "$", which a systemd $KUBIT_ARGS cannot carry`);
  }
  return arg;
}

/** The flags of a command, without the program (and, for daemons, without node and the script). */
export function envFileText(cmd: Command, runner: DaemonRunner): string {
  const script = cmd.args.findIndex((a) => /\/main\.(js|ts|bundle\.mjs)$/.test(a));
  const flags = cmd.command === runner.nodePath && script >= 0 ? cmd.args.slice(script + 1) : cmd.args;
  return [
    `# ${cmd.name}: written by the Kubit launcher (env-files); the unit supplies the program.`,
    `KUBIT_ROOT=${runner.repoRoot}`,
    `KUBIT_ARGS="${flags.map(checkArg).join(' ')}"`,
    '',
  ].join('\n');
}

export async function writeEnvFiles(
  stateDir: string,
  runner: DaemonRunner,
  outDir: string,
): Promise<string[]> {
  const cluster = readCluster(stateDir);
  if (!cluster) throw new Error(`no cluster in ${stateDir}: run up first, or give --state-dir`);
  const cmds = clusterCommands(cluster.layout, cluster.ports, cluster.settings, runner);
  await mkdir(outDir, { recursive: true });
  const written: string[] = [];
  for (const cmd of cmds) {
    const file = join(outDir, `${cmd.name}.env`);
    await writeFile(file, envFileText(cmd, runner));
    written.push(file);
  }
  return written;
}
