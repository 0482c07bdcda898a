// Turning failures into the words kubectl uses, and exit codes.

import type { StatusError } from '@kubit/api';

// @kubit/api is not imported here (only its types): every verb loads this file, and
// verbs that never reach a server (config, completion, version --client) start faster
// without it. A StatusError is recognised by its shape.
function isStatusError(e: unknown): e is StatusError {
  return (
    e instanceof Error && e.name === 'StatusError' && typeof (e as Partial<StatusError>).status === 'object'
  );
}

/** A user-facing error: printed as "error: <message>" with no stack. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

interface ConnectionLike {
  name: string;
  message: string;
  code?: string;
  host?: string;
}

function isConnectionError(e: unknown): e is ConnectionLike {
  return e instanceof Error && (e.name === 'ConnectionError' || e.name === 'RequestTimeoutError');
}

/** The message for an Invalid Status with causes, as kubectl lays it out. */
function invalidMessage(e: StatusError): string {
  const d = e.status.details;
  const causes = d?.causes ?? [];
  if (!d || causes.length === 0) return `Error from server (Invalid): ${e.message}`;
  // kubectl names the kind without its group here ("The Deployment "web" is invalid").
  const prefix = `The ${d.kind} "${d.name ?? ''}" is invalid: `;
  const lines = causes.map((c) => (c.field ? `${c.field}: ${c.message ?? ''}` : (c.message ?? '')));
  if (lines.length === 1) return prefix + lines[0];
  return `${prefix}\n${lines.map((l) => `* ${l}`).join('\n')}`;
}

/** The text printed for an error (without trailing newline). */
export function formatError(e: unknown): string {
  if (isStatusError(e)) {
    const reason = e.status.reason ?? '';
    if (e.code === 401 || reason === 'Unauthorized')
      return `error: You must be logged in to the server (${e.message})`;
    if (reason === 'Invalid') return invalidMessage(e);
    return reason ? `Error from server (${reason}): ${e.message}` : `Error from server: ${e.message}`;
  }
  if (isConnectionError(e)) {
    if (e.code === 'ECONNREFUSED' && e.host) {
      return `The connection to the server ${e.host} was refused - did you specify the right host or port?`;
    }
    return e.message;
  }
  if (e instanceof CliError) {
    if (e.message === '') return ''; // the details were printed already
    return e.message.startsWith('error: ') ? e.message : `error: ${e.message}`;
  }
  if (e instanceof Error) {
    if (e.name === 'KubeConfigError') return `error: ${e.message}`;
    return e.message.startsWith('error: ') ? e.message : `error: ${e.message}`;
  }
  return `error: ${String(e)}`;
}

export function exitCodeOf(e: unknown): number {
  if (e instanceof CliError) return e.exitCode;
  return 1;
}

/** Prefixes a server error with what was being done to which file, as kubectl does. */
export function addSourceToError(verb: string, source: string, e: unknown): unknown {
  if (!isStatusError(e) || !source) return e;
  const Ctor = e.constructor as typeof StatusError;
  return new Ctor({ ...e.status, message: `error when ${verb} "${source}": ${e.message}` });
}

/**
 * kubectl's way with many targets: one target's own failure (an API error, a
 * CLI error) is printed and the others still run; the command exits 1 at the
 * end. Any other error is a bug or a lost server and stops the command.
 */
export class PerTargetErrors {
  private failed = false;

  constructor(private readonly err: { write(text: string): unknown }) {}

  /** Runs `work` for each target in turn, printing the failures it may go on past. */
  async each<T>(targets: Iterable<T>, work: (target: T) => Promise<void>): Promise<void> {
    for (const target of targets) {
      try {
        await work(target);
      } catch (e) {
        if (!isStatusError(e) && !(e instanceof CliError)) throw e;
        this.err.write(`${formatError(e)}\n`);
        this.failed = true;
      }
    }
  }

  /** Exits 1, with nothing more to print, when any target failed. */
  finish(): void {
    if (this.failed) throw new CliError('', 1);
  }
}
