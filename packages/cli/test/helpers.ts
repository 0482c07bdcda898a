// Running kubit in-process against a real control plane, capturing its output.

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
