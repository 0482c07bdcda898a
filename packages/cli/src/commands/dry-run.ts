// --dry-run for the commands that write: none (write), client (write nothing,
// say what would be done), server (the apiserver runs the whole write and
// stores nothing). The printed suffix is kubectl's.
import { CliError } from '../errors.js';

export type DryRunMode = 'none' | 'client' | 'server';

export function dryRunMode(v: string | undefined): DryRunMode {
  if (v === undefined || v === 'none' || v === 'false') return 'none';
  if (v === 'client' || v === 'server') return v;
  throw new CliError(`Invalid dry-run value (${v}). Must be "none", "server", or "client".`);
}

/** What kubectl appends to "deleted", "created", ... in a dry run. */
export function dryRunSuffix(mode: DryRunMode): string {
  return mode === 'client' ? ' (dry run)' : mode === 'server' ? ' (server dry run)' : '';
}
