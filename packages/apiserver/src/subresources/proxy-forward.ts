// One HTTP exchange through a proxy subresource (pods/x/proxy, services/x/proxy):
// the client's request goes to the backend with its method, path, query, headers
// and body, streamed both ways, as Kubernetes' UpgradeAwareHandler passes it.
// What the apiserver consumed is not passed on: the Authorization and
// Impersonate-* headers (Kubernetes' authentication and impersonation filters
// drop them before the proxy), and the hop-by-hop headers. A backend's redirect
// to itself is rewritten to go through the proxy again, as Kubernetes' proxy
// transport does. A WebSocket (or any) upgrade is `proxyUpgrade`'s.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { serviceUnavailable } from '@kubit/api';
import { spliceUpgrade } from '@kubit/daemon';
import { failResponse } from '../reply.js';
import { hostPort, type ProxyLocation } from './proxy-location.js';

/** Headers that belong to one hop (RFC 9110 §7.6.1) or to the apiserver itself. */
const DROPPED_REQUEST_HEADER =
  /^(host|authorization|impersonate-.*|proxy-.*|keep-alive|te|trailer|transfer-encoding)$/i;
const HOP_BY_HOP_RESPONSE_HEADER = /^(connection|keep-alive|proxy-.*|te|trailer|transfer-encoding|upgrade)$/i;

/** The part of a raw request URL a proxy subresource forwards, found without decoding it. */
export interface ProxiedPath {
  /** The apiserver's path up to and including `/proxy` (as the client sent it). */
  prefix: string;
  /** What follows `/proxy`, as sent (percent-encoding kept): "" or a path starting with "/". */
  rest: string;
  /** The query, with its "?", or "". */
  search: string;
}

/** Splits `url` at the `<resource>/<name>/proxy` segment; undefined when it has none. */
export function proxiedPath(url: string, resource: string): ProxiedPath | undefined {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const search = q < 0 ? '' : url.slice(q);
  const segments = path.split('/');
  for (let i = 2; i < segments.length; i++) {
    if (segments[i] === 'proxy' && segments[i - 2] === resource) {
      const prefix = segments.slice(0, i + 1).join('/');
      return { prefix, rest: path.slice(prefix.length), search };
    }
  }
  return undefined;
}

function forwardedHeaders(req: IncomingMessage, loc: ProxyLocation): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const connectionTokens = String(req.headers.connection ?? '')
    .toLowerCase()
    .split(',')
    .map((s) => s.trim());
  for (const [name, value] of Object.entries(req.headers as IncomingHttpHeaders)) {
    if (value === undefined || DROPPED_REQUEST_HEADER.test(name)) continue;
    if (name === 'connection' || connectionTokens.includes(name)) continue;
    out[name] = value;
  }
  out.host = hostPort(loc);
  const from = req.socket.remoteAddress;
  if (from)
    out['x-forwarded-for'] = req.headers['x-forwarded-for']
      ? `${req.headers['x-forwarded-for']}, ${from}`
      : from;
  return out;
}

/** A backend's Location pointing at itself, pointed back through the proxy. */
function rewriteLocation(location: string, target: string, req: IncomingMessage, prefix: string) {
  let resolved: URL;
  try {
    resolved = new URL(location, target);
  } catch {
    return location;
  }
  if (resolved.host !== new URL(target).host) return location;
  const host = req.headers.host;
  const path = `${prefix}${resolved.pathname}${resolved.search}${resolved.hash}`;
  return host ? `https://${host}${path}` : path;
}

/**
 * A kubelet gets the apiserver's client certificate and has its serving certificate checked
 * when a CA is known; Kubernetes' proxy transport does not verify a pod's or a Service's.
 */
function tlsOptions(loc: ProxyLocation) {
  if (!loc.tls) return { rejectUnauthorized: false };
  const { cert, key, ca } = loc.tls;
  return { cert, key, ca, rejectUnauthorized: ca !== undefined };
}

/** Forwards one request to `loc`; answers on `res` itself (a 503 Status when the backend is unreachable). */
export function proxyHttp(
  req: IncomingMessage,
  res: ServerResponse,
  loc: ProxyLocation,
  path: ProxiedPath,
  bufferedBody: Buffer | undefined,
): Promise<void> {
  // Kubernetes sends `.../proxy` (no path at all) to `.../proxy/` first, so relative links resolve.
  if (path.rest === '' && (req.method === 'GET' || req.method === 'HEAD')) {
    res.writeHead(301, { Location: `${path.prefix}/${path.search}`, 'Content-Length': 0 });
    res.end();
    return Promise.resolve();
  }
  const target = `${loc.scheme}://${hostPort(loc)}${path.rest || '/'}${path.search}`;
  const send = loc.scheme === 'https' ? httpsRequest : httpRequest;
  return new Promise<void>((resolve) => {
    const up = send(target, {
      method: req.method,
      headers: forwardedHeaders(req, loc),
      ...tlsOptions(loc),
    });
    up.on('response', (upRes) => {
      const headers: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(upRes.headers)) {
        if (value === undefined || HOP_BY_HOP_RESPONSE_HEADER.test(name)) continue;
        headers[name] =
          name === 'location' ? rewriteLocation(String(value), target, req, path.prefix) : value;
      }
      res.writeHead(upRes.statusCode ?? 502, headers);
      upRes.pipe(res);
      upRes.on('end', () => resolve());
      upRes.on('error', () => {
        res.destroy();
        resolve();
      });
    });
    up.on('error', (err) => {
      if (res.headersSent) res.destroy();
      else failResponse(res, serviceUnavailable(`error trying to reach service: ${err.message}`));
      resolve();
    });
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    if (bufferedBody !== undefined) up.end(bufferedBody);
    else if (req.readableEnded) up.end();
    else req.pipe(up);
  });
}

/** The head of an upgrade request as the backend gets it: every header but the apiserver's own. */
function upgradeHead(req: IncomingMessage, loc: ProxyLocation, path: ProxiedPath): string {
  const lines = [
    `${req.method ?? 'GET'} ${path.rest || '/'}${path.search} HTTP/1.1`,
    `Host: ${hostPort(loc)}`,
  ];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i];
    if (/^(host|authorization|impersonate-.*)$/i.test(name)) continue;
    lines.push(`${name}: ${req.rawHeaders[i + 1]}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** Passes an upgrade (WebSocket) through to `loc`: the backend's answer, 101 or not, reaches the client as is. */
export function proxyUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  loc: ProxyLocation,
  path: ProxiedPath,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const port = loc.port ?? (loc.scheme === 'https' ? 443 : 80);
    const upstream =
      loc.scheme === 'https'
        ? tlsConnect({ host: loc.host, port, ...tlsOptions(loc), ALPNProtocols: ['http/1.1'] })
        : netConnect({ host: loc.host, port });
    upstream.once(loc.scheme === 'https' ? 'secureConnect' : 'connect', () => {
      upstream.removeAllListeners('error');
      spliceUpgrade(socket, head, upstream, upgradeHead(req, loc, path));
      resolve();
    });
    upstream.once('error', (err) => {
      upstream.destroy();
      reject(serviceUnavailable(`error trying to reach service: ${err.message}`));
    });
  });
}
