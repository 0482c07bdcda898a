// kubectl exec, attach and port-forward on this node. The apiserver upgrades
// /exec/<ns>/<pod>/<container>, /attach/... or /portForward/<ns>/<pod> here;
// the kubelet asks the runtime for a session on its streaming server (CRI
// Exec, Attach, PortForward) and splices the connection to the URL it gets,
// so the SPDY protocol runs end to end between kubectl and containerd.
import type { IncomingMessage, Server } from 'node:http';
import { connect as connectTcp, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as connectTls } from 'node:tls';
import type { ContainerRuntime, StreamChoice } from '@kubit/cri';
import { refuseUpgrade, spliceUpgrade, upgradeRequestHead } from '@kubit/daemon';
import { CONTAINER_NAME_LABEL, POD_UID_LABEL } from '../pods/labels.js';
import type { PodManager } from '../pods/manager.js';
import { failureStatus } from './status.js';

export interface StreamingOptions {
  manager: PodManager;
  runtime: ContainerRuntime;
  /** Why this client may not stream here, or undefined when it may. */
  denied?: (req: IncomingMessage) => string | undefined;
}

class Refusal extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

const flag = (q: URLSearchParams, name: string) => ['1', 'true'].includes(q.get(name) ?? '');

export function registerStreaming(server: Server, opts: StreamingOptions): void {
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    toRuntime(opts, req, socket, head).catch((err) => {
      const refusal =
        err instanceof Refusal ? err : new Refusal(500, 'InternalError', (err as Error).message);
      refuseUpgrade(socket, failureStatus(refusal.code, refusal.reason, refusal.message));
    });
  });
}

/** The runtime's streaming URL for this request. */
async function sessionUrl(opts: StreamingOptions, req: IncomingMessage, url: URL): Promise<string> {
  let parts: string[];
  try {
    parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw new Refusal(400, 'BadRequest', 'the request path is not valid URL encoding');
  }
  const [kind, namespace, podName, container] = parts;
  const arity = kind === 'portForward' ? 3 : 4;
  if (!['exec', 'attach', 'portForward'].includes(kind) || parts.length !== arity)
    throw new Refusal(404, 'NotFound', `no streaming endpoint at ${url.pathname}`);
  const denied = opts.denied?.(req);
  if (denied) throw new Refusal(403, 'Forbidden', denied);
  const pod = opts.manager
    .pods()
    .find((p) => p.metadata?.namespace === namespace && p.metadata?.name === podName);
  if (!pod)
    throw new Refusal(404, 'NotFound', `pod "${podName}" in namespace "${namespace}" not found on this node`);
  const uid = pod.metadata?.uid ?? '';
  const q = url.searchParams;
  if (kind === 'portForward') {
    const ports = q.getAll('port').map(Number);
    if (ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65535))
      throw new Refusal(400, 'BadRequest', `invalid port in "${q.getAll('port').join(',')}"`);
    const [sandbox] = await opts.runtime.listPodSandbox({
      labelSelector: { [POD_UID_LABEL]: uid },
      state: 'SANDBOX_READY',
    });
    if (!sandbox) throw new Refusal(400, 'BadRequest', `pod "${podName}" has no running sandbox`);
    return opts.runtime.portForward(sandbox.id, ports);
  }
  const known = [
    ...(pod.spec?.containers ?? []),
    ...(pod.spec?.initContainers ?? []),
    ...(pod.spec?.ephemeralContainers ?? []),
  ].some((c) => c.name === container);
  if (!known) throw new Refusal(400, 'BadRequest', `container ${container} is not valid for pod ${podName}`);
  const [running] = await opts.runtime.listContainers({
    labelSelector: { [POD_UID_LABEL]: uid, [CONTAINER_NAME_LABEL]: container },
    state: 'CONTAINER_RUNNING',
  });
  if (!running)
    throw new Refusal(400, 'BadRequest', `container ${container} in pod ${podName} is not running`);
  const streams: StreamChoice = {
    stdin: flag(q, 'stdin'),
    stdout: flag(q, 'stdout'),
    stderr: flag(q, 'stderr'),
    tty: flag(q, 'tty'),
  };
  if (kind === 'attach') return opts.runtime.attach(running.id, streams);
  const command = q.getAll('command');
  if (command.length === 0)
    throw new Refusal(400, 'BadRequest', 'you must specify at least one command for the container');
  return opts.runtime.exec(running.id, command, streams);
}

async function toRuntime(opts: StreamingOptions, req: IncomingMessage, socket: Duplex, head: Buffer) {
  const target = new URL(await sessionUrl(opts, req, new URL(req.url ?? '/', 'https://kubelet')));
  const secure = target.protocol === 'https:';
  const port = Number(target.port) || (secure ? 443 : 80);
  const host = target.hostname.replace(/^\[|\]$/g, '');
  await new Promise<void>((resolve, reject) => {
    // containerd's streaming server is on loopback; with TLS its certificate is its own.
    const upstream: Socket = secure
      ? connectTls({ host, port, rejectUnauthorized: false })
      : connectTcp({ host, port });
    upstream.once(secure ? 'secureConnect' : 'connect', () => {
      upstream.removeAllListeners('error');
      spliceUpgrade(
        socket,
        head,
        upstream,
        upgradeRequestHead(req, `${target.pathname}${target.search}`, target.host),
      );
      resolve();
    });
    upstream.once('error', (err) => {
      upstream.destroy();
      reject(
        new Refusal(502, 'InternalError', `the runtime's streaming server is unreachable: ${err.message}`),
      );
    });
  });
}
