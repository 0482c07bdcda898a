// The launcher's command line. Hand-parsed: three subcommands and a few flags.
import type { ClusterSettings } from './config.js';

export interface LauncherArgs {
  command: 'up' | 'down' | 'status' | 'env-files';
  stateDir?: string;
  settings: Partial<ClusterSettings>;
  purge: boolean;
  timeoutMs: number;
  /** env-files: where to write them. */
  outDir: string;
}

export const USAGE = `usage:
  up [--name NAME] [--nodes N] [--state-dir DIR] [--port-offset N] [--cluster-cidr CIDR] [--service-cidr CIDR] [--timeout SECONDS]
  down [--name NAME] [--purge] [--state-dir DIR]
  status [--name NAME] [--state-dir DIR]
  env-files [--name NAME] [--state-dir DIR] [--out DIR]   (systemd EnvironmentFiles, default /etc/kubit)
A cluster's name (default kubit) is unique on the machine; its state is in .kubit (kubit) or .kubit-NAME.`;

function int(flag: string, value: string | undefined): number {
  if (value === undefined || !/^\d+$/.test(value))
    throw new Error(`${flag} needs a whole number, not "${value ?? ''}"`);
  return Number(value);
}

export function parseArgs(argv: string[]): LauncherArgs {
  const [command, ...rest] = argv;
  if (command !== 'up' && command !== 'down' && command !== 'status' && command !== 'env-files') {
    throw new Error(`unknown command "${command ?? ''}"\n${USAGE}`);
  }
  const out: LauncherArgs = { command, settings: {}, purge: false, timeoutMs: 120_000, outDir: '/etc/kubit' };
  for (let i = 0; i < rest.length; i++) {
    const raw = rest[i];
    const eq = raw.indexOf('=');
    const flag = eq > 0 ? raw.slice(0, eq) : raw;
    const inline = eq > 0 ? raw.slice(eq + 1) : undefined;
    const value = (): string | undefined => inline ?? rest[++i];
    const allowed = FLAGS[command];
    if (!allowed.includes(flag)) throw new Error(`${command}: unknown flag ${flag}\n${USAGE}`);
    switch (flag) {
      case '--nodes':
        out.settings.nodes = int(flag, value());
        break;
      case '--port-offset':
        out.settings.portOffset = int(flag, value());
        break;
      case '--name': {
        const v = value();
        if (!v) throw new Error('--name needs a name (e.g. --name dev)');
        out.settings.name = v;
        break;
      }
      case '--service-cidr': {
        const v = value();
        if (!v) throw new Error('--service-cidr needs a CIDR (e.g. 10.96.0.0/12)');
        out.settings.serviceCidr = v;
        break;
      }
      case '--cluster-cidr': {
        const v = value();
        if (!v) throw new Error('--cluster-cidr needs a CIDR (e.g. 10.244.0.0/16)');
        out.settings.clusterCidr = v;
        break;
      }
      case '--timeout':
        out.timeoutMs = int(flag, value()) * 1000;
        break;
      case '--state-dir': {
        const v = value();
        if (!v) throw new Error('--state-dir needs a directory');
        out.stateDir = v;
        break;
      }
      case '--out': {
        const v = value();
        if (!v) throw new Error('--out needs a directory');
        out.outDir = v;
        break;
      }
      case '--purge':
        out.purge = true;
        break;
    }
  }
  return out;
}

const FLAGS: Record<LauncherArgs['command'], string[]> = {
  up: ['--name', '--nodes', '--state-dir', '--port-offset', '--cluster-cidr', '--service-cidr', '--timeout'],
  down: ['--name', '--purge', '--state-dir'],
  status: ['--name', '--state-dir'],
  'env-files': ['--name', '--state-dir', '--out'],
};
