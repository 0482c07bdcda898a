// nodes/<name>/proxy/<path>: a GET forwarded to the node's kubelet over HTTPS with the
// apiserver's kubelet client certificate, its answer streamed back as the kubelet gave it
// (`kubectl get --raw /api/v1/nodes/<node>/proxy/stats/summary`, metrics-server's fallback).
// Only reads: the kubelet's streaming endpoints have their own upgrade path (streaming.ts).
import { request } from 'node:https';
import { methodNotSupported, notFound, serviceUnavailable } from '@kubit/api';
import type { SubresourceDef } from '../kinds/types.js';
import { kubeletAddress } from '../logs.js';
import { failResponse } from '../reply.js';

/** The query the client sent, forwarded as it was (repeated keys kept). */
function queryString(query: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    for (const one of Array.isArray(v) ? v : [v]) if (one !== undefined) params.append(k, String(one));
  }
  const qs = params.toString();
  return qs ? `?${qs}` : '';
}

export const nodeProxySubresource: SubresourceDef = {
  name: 'proxy',
  verbs: ['get'],
  kind: { group: '', version: 'v1', kind: 'NodeProxyOptions' },
  async serve(verb, { rest, ri, ctx, raw, kubeletTls }) {
    if (verb !== 'get') throw methodNotSupported({ group: '', resource: 'nodes/proxy' }, verb);
    const node = await rest.store.get(`/registry/nodes/${ri.name}`);
    if (!node) throw notFound({ group: '', resource: 'nodes' }, ri.name);
    const addr = kubeletAddress(node.obj);
    if (!addr) throw serviceUnavailable(`no address known for node "${ri.name}" to proxy to`);
    const host = addr.host.includes(':') ? `[${addr.host}]` : addr.host;
    const url = `https://${host}:${addr.port}/${ri.subpath ?? ''}${queryString(ctx.query)}`;
    const res = raw.hijack();
    await new Promise<void>((resolve) => {
      const up = request(
        url,
        {
          method: 'GET',
          cert: kubeletTls.cert,
          key: kubeletTls.key,
          ca: kubeletTls.ca,
          rejectUnauthorized: kubeletTls.ca !== undefined,
        },
        (upRes) => {
          const type = upRes.headers['content-type'];
          res.writeHead(upRes.statusCode ?? 502, type ? { 'Content-Type': type } : {});
          upRes.pipe(res);
          upRes.on('end', () => resolve());
          upRes.on('error', () => {
            res.destroy();
            resolve();
          });
        },
      );
      up.on('error', (err) => {
        failResponse(
          res,
          serviceUnavailable(`error trying to reach the kubelet of node "${ri.name}": ${err.message}`),
        );
        resolve();
      });
      raw.onClose(() => up.destroy());
      up.end();
    });
    if (!res.writableEnded && !res.destroyed) res.end();
    return undefined;
  },
};
