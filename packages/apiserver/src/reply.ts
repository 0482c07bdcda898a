// Writing an answer on a raw response: the one place a Status error is turned
// into bytes, for fastify's error handler and for the requests that took over
// their response (watches, logs).
import type { ServerResponse } from 'node:http';
import { type Status, statusFromUnknown } from '@kubit/api';

/** Writes a Status as the whole answer. */
export function writeStatus(res: ServerResponse, status: Status, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(status);
  res.writeHead(status.code, {
    ...headers,
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * Ends a taken-over response with `err`: its Status when nothing was sent yet,
 * else by closing the connection (a half-sent body cannot carry an error).
 */
export function failResponse(res: ServerResponse, err: unknown): void {
  if (!res.headersSent) writeStatus(res, statusFromUnknown(err));
  else res.destroy();
}
