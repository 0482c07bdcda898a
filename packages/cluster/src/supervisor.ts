// Starts the cluster's processes detached (they outlive `up`), records each
// PID in run/<name>.pid, and stops them by that PID only after checking the
// PID still belongs to this cluster: PIDs are reused, and a stale file after a
// reboot must never make `down` signal some unrelated process.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Command } from './commands.js';

export interface ProcFs {
  /** The NUL-separated command line of a PID, or undefined when there is no such process. */
  cmdline(pid: number): string[] | undefined;
  /** True for a zombie: exited but not reaped, so it holds nothing any more. */
  isZombie(pid: number): boolean;
}

export const realProcFs: ProcFs = {
  cmdline(pid) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (argv[argv.length - 1] === '') argv.pop();
      return argv;
    } catch {
      return undefined;
    }
  },
  isZombie(pid) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
    } catch {
      return false;
    }
  },
};

/** The PID recorded in a PID file, or undefined when the file is missing or holds no PID. */
export function readPidFile(file: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const text = readFileSync(file, 'utf8').trim();
  if (!/^\d+$/.test(text)) return undefined;
  const pid = Number(text);
  return pid > 1 ? pid : undefined;
}

/**
 * Whether `pid` is a live process of this cluster: its command line mentions
 * `marker` (the state dir, which every supervised command line contains) and
 * runs the same program we started.
 */
export function isOurs(pid: number, marker: string, program: string, proc: ProcFs = realProcFs): boolean {
  const argv = proc.cmdline(pid);
  if (!argv || argv.length === 0 || proc.isZombie(pid)) return false;
  const programName = program.split('/').pop() ?? program;
  const argv0 = argv[0].split('/').pop() ?? argv[0];
  return argv0 === programName && argv.some((a) => a.includes(marker));
}

/** The PID of a supervised process that is running now, or undefined. */
export function runningPid(
  pidFile: string,
  marker: string,
  program: string,
  proc: ProcFs = realProcFs,
): number | undefined {
  const pid = readPidFile(pidFile);
  return pid !== undefined && isOurs(pid, marker, program, proc) ? pid : undefined;
}

/**
 * Starts `cmd` in its own session (so a Ctrl-C in the terminal that ran `up`
 * does not reach it), output appended to `logFile`, PID written to `pidFile`.
 */
export async function startDetached(
  cmd: Command,
  logFile: string,
  pidFile: string,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<number> {
  mkdirSync(dirname(logFile), { recursive: true });
  mkdirSync(dirname(pidFile), { recursive: true });
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(cmd.command, cmd.args, {
      cwd,
      env,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    const pid = await new Promise<number>((resolve, reject) => {
      child.once('error', (err) =>
        reject(new Error(`cannot start ${cmd.name} (${cmd.command}): ${err.message}`)),
      );
      child.once('spawn', () => resolve(child.pid as number));
    });
    child.unref();
    await writeFile(pidFile, `${pid}\n`);
    return pid;
  } finally {
    closeSync(fd);
  }
}

function alive(pid: number, proc: ProcFs): boolean {
  return proc.cmdline(pid) !== undefined && !proc.isZombie(pid);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * SIGTERM, wait up to `graceMs`, then SIGKILL. Signals only a PID that is ours
 * (see isOurs); removes the PID file. Returns what it did.
 */
export async function stopByPidFile(
  pidFile: string,
  marker: string,
  program: string,
  graceMs = 10_000,
  proc: ProcFs = realProcFs,
): Promise<'stopped' | 'killed' | 'not-running'> {
  const pid = runningPid(pidFile, marker, program, proc);
  if (pid === undefined) {
    await rm(pidFile, { force: true });
    return 'not-running';
  }
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    await rm(pidFile, { force: true });
    return 'not-running';
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!alive(pid, proc)) {
      await rm(pidFile, { force: true });
      return 'stopped';
    }
    await sleep(50);
  }
  if (isOurs(pid, marker, program, proc)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone between the check and the signal
    }
    for (let i = 0; i < 100 && alive(pid, proc); i++) await sleep(50);
  }
  await rm(pidFile, { force: true });
  return 'killed';
}
