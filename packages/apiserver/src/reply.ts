// Ending a taken-over response (a watch, a followed log) with an error: the
// Status when nothing was sent yet, else a closed connection.
import type { ServerResponse } from 'node:http';
import { type Status, statusFromUnknown } from '@kubit/api';

/** Writes a Status as the whole answer. */
function writeStatus(res: ServerResponse, status: Status): void {
  const text = JSON.stringify(status);
  res.writeHead(status.code, {
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
