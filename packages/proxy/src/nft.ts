// The one place kubit-proxy runs nft: a script on stdin (`nft -f -`, one
// atomic transaction), optionally inside a named network namespace
// (`ip netns exec NAME nft …`, --network-namespace) so that tests and the netns
// lab can program a namespace of their own while the daemon runs on the host.
import { spawn } from 'node:child_process';

export interface NftRunnerOptions {
  /** Run inside this named network namespace (ip netns exec). */
  netns?: string;
  /** The nft binary (default "nft" on PATH). */
  nftPath?: string;
  timeoutMs?: number;
}

export class NftError extends Error {
  override name = 'NftError';
}

/** Runs `cmd args` with `input` on stdin; resolves stdout, rejects with stderr on a non-zero exit. */
export function runWithInput(
  cmd: string,
  args: string[],
  input: string,
  timeoutMs: number,
): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new NftError(`cannot run ${cmd}: ${e.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        stdout: Buffer.concat(out).toString(),
        stderr: Buffer.concat(err).toString(),
        code: code ?? -1,
      });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

export class NftRunner {
  private readonly timeoutMs: number;

  constructor(private readonly o: NftRunnerOptions = {}) {
    this.timeoutMs = o.timeoutMs ?? 60_000;
  }

  /** The command line that runs `args` (with the netns prefix when set). */
  command(program: string, args: string[]): [string, string[]] {
    return this.o.netns ? ['ip', ['netns', 'exec', this.o.netns, program, ...args]] : [program, args];
  }

  private async nft(args: string[], input = ''): Promise<string> {
    const [cmd, argv] = this.command(this.o.nftPath ?? 'nft', args);
    const r = await runWithInput(cmd, argv, input, this.timeoutMs);
    if (r.code !== 0) {
      throw new NftError(`nft ${args.join(' ')} failed (exit ${r.code}): ${r.stderr.trim().slice(0, 2000)}`);
    }
    return r.stdout;
  }

  /** Applies a script as one transaction. */
  async apply(script: string): Promise<void> {
    if (script) await this.nft(['-f', '-'], script);
  }

  /** Checks a script against the kernel without committing it (nft -c). */
  async check(script: string): Promise<void> {
    await this.nft(['-c', '-f', '-'], script);
  }

  /** `nft list table`, or undefined when the table does not exist. */
  async listTable(family: string, name: string, json = false): Promise<string | undefined> {
    try {
      return await this.nft([...(json ? ['-j'] : []), 'list', 'table', family, name]);
    } catch (err) {
      if (/No such file or directory|does not exist/.test((err as Error).message)) return undefined;
      throw err;
    }
  }

  /** Whether the chain exists: a cheap canary for "someone flushed our table". */
  async chainExists(family: string, table: string, chain: string): Promise<boolean> {
    try {
      await this.nft(['list', 'chain', family, table, chain]);
      return true;
    } catch (err) {
      if (/No such file or directory|does not exist/.test((err as Error).message)) return false;
      throw err;
    }
  }

  /** Fails with a clear message when nft is missing or cannot talk to the kernel. */
  async probe(): Promise<void> {
    await this.nft(['list', 'tables']);
  }
}
