// Where a command reads and writes. run() takes one, so tests can drive the
// CLI in-process and read what it printed.

export interface Output {
  write(s: string): unknown;
}

export interface IO {
  out: Output;
  err: Output;
  /** Reads all of stdin (for `-f -`). */
  readStdin(): Promise<string>;
  /** stdout is a terminal: colour and live progress are allowed. */
  isTTY: boolean;
  env: NodeJS.ProcessEnv;
  /** Aborted on SIGINT (watch, logs -f, wait). */
  signal?: AbortSignal;
}

export function processIO(signal?: AbortSignal): IO {
  return {
    out: process.stdout,
    err: process.stderr,
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    isTTY: Boolean(process.stdout.isTTY) && !process.env.NO_COLOR,
    env: process.env,
    signal,
  };
}

/** Wraps text in an ANSI colour only on a terminal. */
export function colour(io: IO, code: number, text: string): string {
  return io.isTTY ? `\u001b[${code}m${text}\u001b[0m` : text;
}
