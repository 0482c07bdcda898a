// pods/log: proxied over HTTPS to the kubelet running the pod, streamed (with
// follow) and authenticated with the apiserver's kubelet client certificate.
import type { ServerResponse } from 'node:http';
import { request } from 'node:https';
import { badRequest, notFound, StatusError, serviceUnavailable } from '@kubit/api';
import { arr, obj, str } from './kinds/types.js';
import { queryInt, queryString, type ResourceRequest } from './request.js';
import type { Ctx } from './rest.js';
import type { Store } from './storage.js';

export interface KubeletClientTls {
  cert?: Buffer;
  key?: Buffer;
  ca?: Buffer;
}

function bool(q: Record<string, unknown>, name: string): boolean {
  const v = queryString(q, name);
  if (v === undefined || v === '' || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1') return true;
  throw badRequest(`invalid value for ${name}: "${v}" is not a boolean`);
}

/** Where a node's kubelet listens: its first InternalIP (else Hostname) and daemon endpoint port. */
export function kubeletAddress(node: Record<string, unknown>): { host: string; port: number } | undefined {
  const status = obj(node.status);
  const addrs = arr(status.addresses).map(obj);
  const pick = (t: string) => addrs.find((a) => a.type === t && str(a.address));
  const a = pick('InternalIP') ?? pick('Hostname') ?? pick('ExternalIP');
  if (!a) return undefined;
  const port = Number(obj(obj(status.daemonEndpoints).kubeletEndpoint).Port ?? 10250) || 10250;
  return { host: str(a.address), port };
}

type KubeletAddr = { host: string; port: number };

async function loadPod(store: Store, ri: ResourceRequest): Promise<Record<string, unknown>> {
  const pod = await store.get(`/registry/pods/${ri.namespace}/${ri.name}`);
  if (!pod) throw notFound({ group: '', resource: 'pods' }, ri.name);
  return pod.obj;
}

async function kubeletOfPod(
  store: Store,
  ri: ResourceRequest,
  pod: Record<string, unknown>,
  purpose: string,
): Promise<{ nodeName: string; addr: KubeletAddr }> {
  const nodeName = str(obj(pod.spec).nodeName);
  if (!nodeName) throw badRequest(`pod ${ri.name} does not have a host assigned`);
  const node = await store.get(`/registry/nodes/${nodeName}`);
  const addr = node ? kubeletAddress(node.obj) : undefined;
  if (!addr) throw serviceUnavailable(`no address known for node "${nodeName}" to ${purpose}`);
  return { nodeName, addr };
}

/** A pod and the kubelet of the node it is bound to (`purpose` words the error when none is known). */
export async function podOnNode(store: Store, ri: ResourceRequest, purpose: string) {
  const pod = await loadPod(store, ri);
  return { pod, ...(await kubeletOfPod(store, ri, pod, purpose)) };
}

/** The same, for one of its containers: the one asked for, or the only one. */
export async function containerTarget(
  store: Store,
  ri: ResourceRequest,
  requested: string | undefined,
  purpose: string,
) {
  const pod = await loadPod(store, ri);
  const spec = obj(pod.spec);
  const names = [...arr(spec.containers), ...arr(spec.initContainers), ...arr(spec.ephemeralContainers)].map(
    (c) => str(obj(c).name),
  );
  let container = requested ?? '';
  if (!container) {
    const main = arr(spec.containers).map((c) => str(obj(c).name));
    if (main.length !== 1) {
      throw badRequest(
        `a container name must be specified for pod ${ri.name}, choose one of: [${main.join(' ')}]`,
      );
    }
    container = main[0];
  }
  if (!names.includes(container)) throw badRequest(`container ${container} is not valid for pod ${ri.name}`);
  return { pod, container, ...(await kubeletOfPod(store, ri, pod, purpose)) };
}

/** A kubelet's error body when it is a Kubernetes Status with a message (its HTTP code wins). */
function kubeletStatus(text: string, code: number): ConstructorParameters<typeof StatusError>[0] | undefined {
  if (!text.startsWith('{')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const s = obj(parsed);
  if (s.kind !== 'Status' || typeof s.message !== 'string') return undefined;
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: s.message,
    reason: str(s.reason) || (code === 404 ? 'NotFound' : code === 400 ? 'BadRequest' : 'InternalError'),
    code: code >= 400 && code < 600 ? code : 502,
  };
}

export async function proxyPodLog(
  store: Store,
  ri: ResourceRequest,
  ctx: Ctx,
  res: ServerResponse,
  tls: KubeletClientTls,
  onClose: (fn: () => void) => void,
): Promise<void> {
  const q = ctx.query;
  const follow = bool(q, 'follow');
  const previous = bool(q, 'previous');
  const timestamps = bool(q, 'timestamps');
  const params = new URLSearchParams();
  for (const name of ['tailLines', 'limitBytes', 'sinceSeconds']) {
    const v = queryInt(q, name);
    if (v !== undefined) {
      if (v < 0 || (name !== 'tailLines' && v === 0))
        throw badRequest(`${name}: Invalid value: ${v}: must be greater than 0`);
      params.set(name, String(v));
    }
  }
  const sinceTime = queryString(q, 'sinceTime');
  if (sinceTime !== undefined) {
    if (Number.isNaN(Date.parse(sinceTime)))
      throw badRequest(`sinceTime: Invalid value: "${sinceTime}": not an RFC3339 time`);
    params.set('sinceTime', sinceTime);
  }
  if (follow) params.set('follow', 'true');
  if (previous) params.set('previous', 'true');
  if (timestamps) params.set('timestamps', 'true');
  const { container, nodeName, addr } = await containerTarget(
    store,
    ri,
    queryString(q, 'container'),
    'fetch logs from',
  );
  const host = addr.host.includes(':') ? `[${addr.host}]` : addr.host;
  const qs = params.toString();
  const url = `https://${host}:${addr.port}/containerLogs/${encodeURIComponent(ri.namespace)}/${encodeURIComponent(ri.name)}/${encodeURIComponent(container)}${qs ? `?${qs}` : ''}`;
  await new Promise<void>((resolve, reject) => {
    const up = request(
      url,
      {
        method: 'GET',
        cert: tls.cert,
        key: tls.key,
        ca: tls.ca,
        rejectUnauthorized: tls.ca !== undefined,
        servername: undefined,
      },
      (upRes) => {
        const code = upRes.statusCode ?? 502;
        if (code !== 200) {
          const chunks: Buffer[] = [];
          upRes.on('data', (c: Buffer) => chunks.push(c));
          upRes.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8').trim();
            // The kubelet answers with a Status of its own: passed on as it is, so kubectl
            // shows its message rather than the JSON.
            const status = kubeletStatus(text, code);
            if (status) return reject(new StatusError(status));
            reject(
              new StatusError({
                kind: 'Status',
                apiVersion: 'v1',
                metadata: {},
                status: 'Failure',
                message: text || `the kubelet answered ${code}`,
                reason: code === 404 ? 'NotFound' : code === 400 ? 'BadRequest' : 'InternalError',
                code: code >= 400 && code < 600 ? code : 502,
              }),
            );
          });
          return;
        }
        res.writeHead(200, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked' });
        upRes.pipe(res);
        upRes.on('end', () => resolve());
        upRes.on('error', () => resolve());
      },
    );
    up.on('error', (err) => {
      if (res.headersSent) {
        res.destroy();
        resolve();
      } else reject(serviceUnavailable(`unable to reach the kubelet of node "${nodeName}": ${err.message}`));
    });
    onClose(() => up.destroy());
    up.end();
  });
}
