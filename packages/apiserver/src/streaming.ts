// pods/exec, pods/attach and pods/portforward: kubectl upgrades the request to
// SPDY/3.1; the apiserver authenticates and authorizes it like any other
// request, then opens the same upgrade to the pod's kubelet (with its kubelet
// client certificate) and splices the two connections. kubectl first tries
// WebSocket (v5.channel.k8s.io); that is answered 400, and kubectl falls back
// to SPDY, which the whole path (kubelet, containerd's streaming server)
// speaks natively.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { connect } from 'node:tls';
import { badRequest, serviceUnavailable, statusFromUnknown, unauthorized } from '@kubit/api';
import { refuseUpgrade, spliceUpgrade, upgradeProtocol, upgradeRequestHead } from '@kubit/daemon';
import type { UserInfo } from './authn.js';
import { obj, str } from './kinds/types.js';
import { containerTarget, type KubeletClientTls, podOnNode } from './logs.js';
import type { RequestInfo } from './request.js';
import type { Store } from './storage.js';
import { proxyLocation } from './subresources/proxy.js';
import { proxiedPath, proxyUpgrade } from './subresources/proxy-forward.js';

/** The resources whose proxy subresource passes upgrades through to a backend. */
const PROXIED = new Set(['pods', 'services', 'nodes']);

/** The kubelet's path for each streaming subresource (Kubernetes' names). */
const KUBELET_PATH: Record<string, string> = { exec: 'exec', attach: 'attach', portforward: 'portForward' };

export interface StreamingDeps {
  store: Store;
  kubeletTls: KubeletClientTls;
  authenticate(req: IncomingMessage): UserInfo | null | undefined | Promise<UserInfo | null>;
  /** Throws a StatusError when the user may not. */
  authorize(user: UserInfo, info: RequestInfo): void;
  parse(method: string, path: string, query: Record<string, unknown>): RequestInfo;
  serving(): boolean;
  /** CONNECT admission (webhooks) of the upgrade: throws a StatusError when refused. */
  admitConnect?(user: UserInfo, info: RequestInfo, options: Record<string, unknown>): Promise<void>;
}

/** The options object a CONNECT's admission sees (PodExecOptions, PodAttachOptions, PodPortForwardOptions). */
function connectOptions(sub: string, query: URLSearchParams): Record<string, unknown> {
  const kind =
    sub === 'exec' ? 'PodExecOptions' : sub === 'attach' ? 'PodAttachOptions' : 'PodPortForwardOptions';
  const o: Record<string, unknown> = { kind, apiVersion: 'v1' };
  const flag = (name: string) => {
    const v = query.get(name);
    if (v !== null) o[name] = v === 'true' || v === '1';
  };
  if (sub === 'portforward') {
    const ports = query
      .getAll('ports')
      .flatMap((p) => p.split(','))
      .map(Number)
      .filter(Number.isInteger);
    if (ports.length > 0) o.ports = ports;
    return o;
  }
  for (const f of ['stdin', 'stdout', 'stderr', 'tty']) flag(f);
  const container = query.get('container');
  if (container) o.container = container;
  if (sub === 'exec') o.command = query.getAll('command');
  return o;
}

/** Serves the streaming subresources on the server's upgrade requests. */
export function registerStreaming(server: Server, deps: StreamingDeps): void {
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    streamToKubelet(deps, req, socket, head).catch((err) => {
      refuseUpgrade(socket, statusFromUnknown(err));
    });
  });
}

/** The query as fastify would parse it: repeated names (command) as arrays. */
function queryOf(params: URLSearchParams): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of new Set(params.keys())) {
    const all = params.getAll(name);
    out[name] = all.length === 1 ? all[0] : all;
  }
  return out;
}

async function streamToKubelet(
  deps: StreamingDeps,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'https://apiserver');
  let path: string;
  try {
    path = decodeURIComponent(url.pathname.replace(/\/+$/, '') || '/');
  } catch {
    throw badRequest('the request path is not valid URL encoding');
  }
  const user = await deps.authenticate(req);
  if (!user) throw unauthorized();
  if (!deps.serving()) throw serviceUnavailable('the apiserver is starting');
  const info = deps.parse(req.method ?? 'GET', path, queryOf(url.searchParams));
  if (info.kind === 'resource' && info.subresource === 'proxy' && PROXIED.has(info.resource) && info.name) {
    // A WebSocket (or other upgrade) to a pod, a Service or a kubelet passes through as it is.
    deps.authorize(user, info);
    const proxied = proxiedPath(req.url ?? '', info.resource);
    if (!proxied) throw badRequest(`${path} does not name a proxy subresource`);
    const loc = await proxyLocation(deps.store, info, deps.kubeletTls);
    return proxyUpgrade(req, socket, head, loc, proxied);
  }
  const sub = info.kind === 'resource' && info.resource === 'pods' ? info.subresource : '';
  if (info.kind !== 'resource' || !sub || !(sub in KUBELET_PATH) || !info.name)
    throw badRequest(
      `${path} cannot be upgraded: only pods/exec, pods/attach, pods/portforward and the pods, services and nodes proxies stream`,
    );
  deps.authorize(user, info);
  await deps.admitConnect?.(user, info, connectOptions(sub, url.searchParams));
  if (upgradeProtocol(req) !== 'spdy/3.1') {
    // Not 101: kubectl's WebSocket attempt fails its handshake and it retries over SPDY.
    throw badRequest(
      `kubit-apiserver streams ${sub} over SPDY/3.1, not "${req.headers.upgrade ?? ''}": retry with SPDY`,
    );
  }
  const query = new URLSearchParams(url.searchParams);
  if (sub === 'exec' && query.getAll('command').length === 0)
    throw badRequest('you must specify at least one command for the container');
  let target: Awaited<ReturnType<typeof podOnNode>>;
  let kubeletPath: string;
  const ns = encodeURIComponent(info.namespace);
  const name = encodeURIComponent(info.name);
  if (sub === 'portforward') {
    target = await podOnNode(deps.store, info, 'forward ports to');
    kubeletPath = `/portForward/${ns}/${name}`;
  } else {
    const t = await containerTarget(deps.store, info, query.get('container') ?? undefined, `${sub} into`);
    target = t;
    query.delete('container');
    kubeletPath = `/${KUBELET_PATH[sub]}/${ns}/${name}/${encodeURIComponent(t.container)}`;
  }
  const phase = str(obj(target.pod.status).phase);
  if (phase === 'Succeeded' || phase === 'Failed')
    throw badRequest(`cannot ${sub} into a container in a completed pod; current phase is ${phase}`);
  const qs = query.toString();
  const { host, port } = target.addr;
  await new Promise<void>((resolve, reject) => {
    const upstream = connect({
      host,
      port,
      cert: deps.kubeletTls.cert,
      key: deps.kubeletTls.key,
      ca: deps.kubeletTls.ca,
      rejectUnauthorized: deps.kubeletTls.ca !== undefined,
      ALPNProtocols: ['http/1.1'],
    });
    upstream.once('secureConnect', () => {
      upstream.removeAllListeners('error');
      const hostHeader = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
      spliceUpgrade(
        socket,
        head,
        upstream,
        upgradeRequestHead(req, `${kubeletPath}${qs ? `?${qs}` : ''}`, hostHeader),
      );
      resolve();
    });
    upstream.once('error', (err) => {
      upstream.destroy();
      reject(serviceUnavailable(`unable to reach the kubelet of node "${target.nodeName}": ${err.message}`));
    });
  });
}
