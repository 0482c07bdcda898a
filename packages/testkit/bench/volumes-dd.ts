// The write-throughput half of bench:volumes: the shell script a busybox
// container runs (the same sequential write, in turns, on each target
// directory) and the parser of what it prints. busybox's dd prints no timing,
// its date has no %N and its `time` counts in 10 ms (5 % of a 256 MiB write at
// 1.4 GB/s), so each write is timed by the clock adjtimex(2) reads out, in µs.

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
  const lines: string[] = [
    // Microseconds since the epoch, from adjtimex's time.tv_sec and time.tv_usec.
    `clock() { adjtimex | awk '/tv_sec/ { s = $2 } /tv_usec/ { u = $2 } END { printf "%d%06d", s, u }'; }`,
  ];
  for (let round = 0; round < opts.rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      const file = `${opts.targets[name]}/dd-bench`;
      lines.push(
        'sync',
        's=$(clock)',
        // A failed write ends the script with what went wrong, so the bench stops waiting.
        `out=$(dd if=/dev/zero of=${file} bs=1M count=${opts.mib} ${opts.flag} 2>&1) || { echo "DD-FAILED ${name} $out"; echo ${DD_DONE}; exec sleep 3600; }`,
        'e=$(clock)',
        `echo "DD ${name} ${round} $s $e"`,
        `rm -f ${file}`,
      );
    }
  }
  lines.push(`echo ${DD_DONE}`, opts.finally ?? 'exec sleep 3600');
  return lines.join('\n');
}

/** The timed writes in a container's log, or undefined until the script has finished; throws on a failed write. */
export function parseDdLog(log: string): DdResult[] | undefined {
  const lines = log.split('\n').map((l) => l.trim());
  if (!lines.includes(DD_DONE)) return undefined;
  const failed = lines.find((l) => l.startsWith('DD-FAILED '));
  if (failed) throw new Error(`a write failed: ${failed.slice('DD-FAILED '.length)}`);
  const out: DdResult[] = [];
  for (const line of lines) {
    const m = /^DD (\S+) (\d+) (\d+) (\d+)$/.exec(line);
    if (m) out.push({ target: m[1], round: Number(m[2]), seconds: (Number(m[4]) - Number(m[3])) / 1e6 });
  }
  return out;
}

/** MB/s (10^6 bytes a second, as dd reports) of `mib` MiB written in `seconds`. */
export function mbPerSecond(mib: number, seconds: number): number {
  return (mib * 1024 * 1024) / 1e6 / seconds;
}
