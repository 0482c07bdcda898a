// Streaming requests (kubectl exec, attach and port-forward) are HTTP/1.1
// upgrades to SPDY/3.1 (or WebSocket). The apiserver hands them to the pod's
// kubelet, and the kubelet to the container runtime's streaming server. Each
// hop writes the request head upstream and then splices the two sockets, so
// the protocol itself passes through untouched, as Kubernetes' proxies do.
import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/** The headers a hop passes on: the upgrade itself and the streaming protocol's own. */
const PASSED_HEADER =
  /^(upgrade|connection|x-stream-protocol-version|sec-websocket-[a-z-]+|content-length)$/i;

/** The head of the upstream request: method, path, Host and the passed headers of `req`. */
export function upgradeRequestHead(req: IncomingMessage, path: string, host: string): string {
  const lines = [`${req.method ?? 'GET'} ${path} HTTP/1.1`, `Host: ${host}`];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    if (PASSED_HEADER.test(req.rawHeaders[i])) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/**
 * Sends `requestHead` (and the bytes the client sent after its head) upstream,
 * then pipes the sockets both ways: the upstream's answer, 101 or an error,
 * reaches the client as it is. Either side closing closes both.
 */
export function spliceUpgrade(client: Duplex, head: Buffer, upstream: Duplex, requestHead: string): void {
  upstream.write(requestHead);
  if (head.length > 0) upstream.write(head);
  client.pipe(upstream);
  upstream.pipe(client);
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('close', close);
  upstream.on('close', close);
  client.on('error', close);
  upstream.on('error', close);
}

/** Answers an upgrade request that will not be upgraded with a Kubernetes Status; the socket then closes. */
export function refuseUpgrade(socket: Duplex, status: { code?: number }): void {
  if (socket.destroyed) return;
  const code = status.code ?? 500;
  const body = JSON.stringify(status);
  socket.end(
    `HTTP/1.1 ${code} ${STATUS_CODES[code] ?? 'Error'}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** The request's upgrade protocol, lower-cased ("spdy/3.1", "websocket"), or "" for none. */
export function upgradeProtocol(req: IncomingMessage): string {
  return String(req.headers.upgrade ?? '').toLowerCase();
}
