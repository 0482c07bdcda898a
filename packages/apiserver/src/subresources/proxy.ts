// pods/<[scheme:]name[:port]>/proxy/<path>, services/<[scheme:]name[:port]>/proxy/<path> and
// nodes/<[scheme:]name[:port]>/proxy/<path>: any request (GET, POST, PUT, PATCH, DELETE; HEAD
// as get) forwarded to the pod, to a ready endpoint of the Service, or to the node's kubelet
// (with the apiserver's kubelet client certificate), and its answer streamed back (`kubectl proxy`, the
// Kubernetes Basics tutorial's `/api/v1/namespaces/default/pods/NAME:80/proxy/`). RBAC
// authorizes it as the request's verb on pods/proxy, services/proxy or nodes/proxy. Upgrades
// (WebSocket) arrive through streaming.ts and go to `proxyUpgrade`.
import { badRequest, methodNotSupported } from '@kubit/api';
import type { SubresourceDef } from '../kinds/types.js';
import type { KubeletClientTls } from '../logs.js';
import type { ResourceRequest } from '../request.js';
import type { Store } from '../storage.js';
import { proxiedPath, proxyHttp } from './proxy-forward.js';
import { nodeLocation, type ProxyLocation, podLocation, serviceLocation } from './proxy-location.js';

const PROXY_VERBS = ['create', 'delete', 'get', 'patch', 'update'] as const;

/** The backend a pods/proxy, services/proxy or nodes/proxy request goes to. */
export function proxyLocation(
  store: Store,
  ri: ResourceRequest,
  tls: KubeletClientTls,
): Promise<ProxyLocation> {
  if (ri.resource === 'pods') return podLocation(store, ri.namespace, ri.name);
  if (ri.resource === 'nodes') return nodeLocation(store, ri.name, tls);
  return serviceLocation(store, ri.namespace, ri.name);
}

function proxySubresource(resource: 'pods' | 'services' | 'nodes', kind: string): SubresourceDef {
  return {
    name: 'proxy',
    verbs: PROXY_VERBS,
    kind: { group: '', version: 'v1', kind },
    connect: true,
    async serve(verb, { rest, ri, ctx, raw, kubeletTls }) {
      if (!PROXY_VERBS.includes(verb as (typeof PROXY_VERBS)[number]))
        throw methodNotSupported({ group: '', resource: `${resource}/proxy` }, verb);
      const path = proxiedPath(raw.request.url ?? '', resource);
      if (!path) throw badRequest(`the request path does not name a ${resource}/proxy subresource`);
      // Resolved before the response is taken over: a 404 or 503 is an ordinary Status answer.
      const loc = await proxyLocation(rest.store, ri, kubeletTls);
      await proxyHttp(raw.request, raw.hijack(), loc, path, ctx.body);
      return undefined;
    },
  };
}

export const podProxySubresource = proxySubresource('pods', 'PodProxyOptions');
export const serviceProxySubresource = proxySubresource('services', 'ServiceProxyOptions');
/** nodes/<[scheme:]name[:port]>/proxy/<path>: the kubelet (`kubectl get --raw .../proxy/stats/summary`). */
export const nodeProxySubresource = proxySubresource('nodes', 'NodeProxyOptions');
