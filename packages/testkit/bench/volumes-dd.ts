// The write-throughput half of bench:volumes: the shell script a busybox
// container runs (the same sequential write, in turns, on each target
// directory) and the parser of what it prints. busybox's dd prints no timing
// and its date has no %N, so each dd is timed by busybox's `time -f %e`
// (10 ms resolution: about 1 % of a 256 MiB write at a few hundred MB/s).

/** One timed write: the target's name and its wall seconds. */
export interface DdResult {
  target: string;
  round: number;
  seconds: number;
}

export interface DdScriptOptions {
  /** name → directory in the container, e.g. { 'kubit-disk': '/disk', emptyDir: '/node' }. */
  targets: Record<string, string>;
  rounds: number;
  mib: number;
  /** dd's flag that makes the data reach the device: conv=fsync or oflag=direct. */
  flag: string;
  /** What the container does after: sleeps by default, to be read and then deleted. */
  finally?: string;
}

/** The line that marks the script's end (the container then sleeps, to be read and deleted). */
export const DD_DONE = 'DD-DONE';

/**
 * The script: for each round, each target once (the order reversed every other
 * round, so neither always goes first), a `sync` before each write so one's
 * dirty pages are not flushed in another's time, the file removed after.
 */
export function ddScript(opts: DdScriptOptions): string {
  const names = Object.keys(opts.targets);
  const lines: string[] = ['set -e'];
  for (let round = 0; round < opts.rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      const file = `${opts.targets[name]}/dd-bench`;
      lines.push(
        'sync',
        // time's line goes to stderr with dd's own; grep keeps only ours.
        `time -f "DD ${name} ${round} %e" dd if=/dev/zero of=${file} bs=1M count=${opts.mib} ${opts.flag} 2>&1 | grep '^DD '`,
        `rm -f ${file}`,
      );
    }
  }
  lines.push(`echo ${DD_DONE}`, opts.finally ?? 'exec sleep 3600');
  return lines.join('\n');
}

/** The timed writes in a container's log, or undefined until the script has finished. */
export function parseDdLog(log: string): DdResult[] | undefined {
  const lines = log.split('\n').map((l) => l.trim());
  if (!lines.includes(DD_DONE)) return undefined;
  const out: DdResult[] = [];
  for (const line of lines) {
    const m = /^DD (\S+) (\d+) (\d+(?:\.\d+)?)$/.exec(line);
    if (m) out.push({ target: m[1], round: Number(m[2]), seconds: Number(m[3]) });
  }
  return out;
}

/** MB/s (10^6 bytes a second, as dd reports) of `mib` MiB written in `seconds`. */
export function mbPerSecond(mib: number, seconds: number): number {
  return (mib * 1024 * 1024) / 1e6 / seconds;
}
