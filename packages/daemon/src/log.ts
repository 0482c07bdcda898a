import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

export interface LoggerOptions {
  /** Component name, e.g. "kubit-store". Appears as `component` on every line. */
  name: string;
  level?: string;
  /** Force pretty output; by default pretty only when stderr is a TTY. */
  pretty?: boolean;
}

/**
 * The one way daemons log: JSON lines on stderr (so stdout stays free for
 * programs that print data), pretty-printed when a person is watching.
 */
export function createLogger(opts: LoggerOptions): Logger {
  const level = opts.level ?? process.env.KUBIT_LOG_LEVEL ?? 'info';
  const pretty = opts.pretty ?? (process.stderr.isTTY === true && process.env.KUBIT_LOG_FORMAT !== 'json');
  if (pretty) {
    return pino({
      name: opts.name,
      level,
      transport: { target: 'pino-pretty', options: { destination: 2, colorize: true } },
    });
  }
  return pino(
    { name: opts.name, level, base: { component: opts.name, pid: process.pid } },
    pino.destination(2),
  );
}
