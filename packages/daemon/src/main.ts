import { type Command, CommanderError, InvalidArgumentError } from 'commander';

/** An error whose message is meant for the person who started the daemon. */
export class StartupError extends Error {
  override name = 'StartupError';
}

/**
 * Runs a daemon's entry point: bad flags and StartupErrors print one clear
 * line and exit 1 (never a stack trace); anything else is a bug and shows it.
 */
export async function runMain(program: Command, argv = process.argv): Promise<void> {
  program.exitOverride();
  program.configureOutput({ outputError: (str, write) => write(str) });
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exit(err.exitCode === 0 ? 0 : 1);
    }
    if (err instanceof StartupError) {
      process.stderr.write(`${program.name()}: ${err.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`${program.name()}: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  }
}

/** commander argument parsers with messages that name the flag's problem. */
export function intArg(min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError(`"${value}" is not an integer.`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`${n} is out of range [${min}, ${max}].`);
    return n;
  };
}

const durationUnits: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses Go-style durations as Kubernetes flags take them: "40s", "1m30s", "500ms". Returns ms. */
export function parseDuration(value: string): number {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(value); m !== null; m = re.exec(value)) {
    total += Number(m[1]) * (durationUnits[m[2]] ?? 0);
    matched = re.lastIndex;
  }
  if (value.length === 0 || matched !== value.length) {
    throw new InvalidArgumentError(`"${value}" is not a duration (examples: 500ms, 10s, 1m30s).`);
  }
  return total;
}

export function durationArg(value: string): number {
  return parseDuration(value);
}

/** Collects a repeatable or comma-separated flag into a list. */
export function listArg(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  ];
}
