// Running kubit in-process against a real control plane, capturing its output.

import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { repoRoot } from '@kubit/testkit';
import { run } from '../src/index.js';
import type { IO } from '../src/io.js';

export interface Result {
  code: number;
  out: string;
  err: string;
}

export interface KubitOptions {
  env: NodeJS.ProcessEnv;
  stdin?: string;
  signal?: AbortSignal;
  isTTY?: boolean;
  /** Called with each chunk written to stdout (for watches). */
  onOut?: (chunk: string) => void;
}

export async function kubit(args: string[], o: KubitOptions): Promise<Result> {
  let out = '';
  let err = '';
  const io: IO = {
    out: {
      write: (s: string) => {
        out += s;
        o.onOut?.(s);
        return true;
      },
    },
    err: {
      write: (s: string) => {
        err += s;
        return true;
      },
    },
    readStdin: async () => o.stdin ?? '',
    isTTY: o.isTTY ?? false,
    env: o.env,
    signal: o.signal,
  };
  const code = await run(args, io);
  return { code, out, err };
}

/** The command line that runs kubit as its own process, from sources (as the test runner does). */
export function kubitCommand(): { command: string; args: string[] } {
  return {
    command: process.execPath,
    args: [
      '--conditions=kubit-source',
      '--import',
      'tsx',
      join(repoRoot, 'packages', 'cli', 'src', 'main.ts'),
    ],
  };
}

/** Gathers a child's stdout and stderr until it closes, then resolves with them and its exit code. */
function collectResult(
  child: ChildProcessByStdio<Writable | null, Readable, Readable>,
  resolve: (r: Result) => void,
  reject: (err: Error) => void,
): void {
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    out += s;
  });
  child.stderr.setEncoding('utf8').on('data', (s: string) => {
    err += s;
  });
  child.once('error', reject);
  child.once('close', (code) => resolve({ code: code ?? -1, out, err }));
}

/** Runs kubit as a real process; resolves with its exit code and output. */
export function kubitProcess(args: string[], env: NodeJS.ProcessEnv, stdin = ''): Promise<Result> {
  const cmd = kubitCommand();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd.command, [...cmd.args, ...args], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    collectResult(child, resolve, reject);
    child.stdin.end(stdin);
  });
}

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * Runs kubit as a real process on a pseudo-terminal (util-linux `script`), so
 * its stdout is a TTY; resolves with everything the terminal received.
 */
export function kubitInTerminal(args: string[], env: NodeJS.ProcessEnv): Promise<Result> {
  const cmd = kubitCommand();
  const line = [cmd.command, ...cmd.args, ...args].map(shellQuote).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', line, '/dev/null'], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH, TERM: 'xterm', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    collectResult(child, resolve, reject);
  });
}
