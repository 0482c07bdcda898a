// pods/<name>/ephemeralcontainers: how `kubectl debug` adds a container to a running
// pod. A get answers the pod; an update or patch may change spec.ephemeralContainers and
// nothing else (the rest of the body is ignored, as Kubernetes' strategy does), and only
// by additions (@kubit/api validateEphemeralContainersUpdate). The kubelet then starts
// each new one in the pod's sandbox and reports it in status.ephemeralContainerStatuses.
import { methodNotSupported, validateEphemeralContainersUpdate } from '@kubit/api';
import { obj, type SubresourceDef } from '../kinds/types.js';

export const ephemeralContainersSubresource: SubresourceDef = {
  name: 'ephemeralcontainers',
  verbs: ['get', 'patch', 'update'],
  async serve(verb, { rest, def, ri, ctx }) {
    if (verb === 'get') return rest.get(def, ri);
    if (verb === 'update') return rest.update(def, ri, ctx);
    if (verb === 'patch') return rest.patch(def, ri, ctx);
    throw methodNotSupported({ group: '', resource: 'pods/ephemeralcontainers' }, verb);
  },
  prepareForUpdate(next, current) {
    const wanted = obj(next.spec).ephemeralContainers;
    next.spec = structuredClone(current.spec ?? {});
    if (wanted === undefined) delete obj(next.spec).ephemeralContainers;
    else obj(next.spec).ephemeralContainers = wanted;
    next.status = current.status;
  },
  validateUpdate: (next, current) => validateEphemeralContainersUpdate(next, current),
  exampleBody(verb, parent) {
    const spec = obj(parent.spec);
    const debuggers = [
      ...((spec.ephemeralContainers as unknown[] | undefined) ?? []),
      {
        name: `debugger-${Math.random().toString(36).slice(2, 7)}`,
        image: 'busybox',
        stdin: true,
        tty: true,
      },
    ];
    if (verb === 'update') return { body: { ...parent, spec: { ...spec, ephemeralContainers: debuggers } } };
    if (verb === 'patch') return { body: { spec: { ephemeralContainers: debuggers } } };
    return undefined;
  },
};
