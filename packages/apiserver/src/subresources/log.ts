// pods/<name>/log: the container's log, proxied from the pod's kubelet and
// streamed as it comes (logs.ts).
import { methodNotSupported } from '@kubit/api';
import type { SubresourceDef } from '../kinds/types.js';
import { proxyPodLog } from '../logs.js';
import { failResponse } from '../reply.js';

export const logSubresource: SubresourceDef = {
  name: 'log',
  verbs: ['get'],
  kind: { group: '', version: 'v1', kind: 'Pod' },
  async serve(verb, { rest, ri, ctx, raw, kubeletTls }) {
    if (verb !== 'get') throw methodNotSupported({ group: '', resource: 'pods/log' }, verb);
    const res = raw.hijack();
    await proxyPodLog(rest.store, ri, ctx, res, kubeletTls, raw.onClose).catch((err) =>
      failResponse(res, err),
    );
    if (!res.writableEnded && !res.destroyed) res.end();
    return undefined;
  },
};
