// namespaces/<name>/finalize: the namespace controller's PUT that changes
// spec.finalizers and nothing else (Rest.updateWith keeps the rest).
import { methodNotSupported } from '@kubit/api';
import type { SubresourceDef } from '../kinds/types.js';
import { gr } from '../rest.js';

export const finalizeSubresource: SubresourceDef = {
  name: 'finalize',
  verbs: ['update'],
  async serve(verb, { rest, def, ri, ctx }) {
    if (verb === 'update') return rest.update(def, ri, ctx);
    throw methodNotSupported({ ...gr(def), resource: `${def.resource}/finalize` }, verb);
  },
  exampleBody(verb, parent) {
    if (verb !== 'update') return undefined;
    return { body: { ...parent, spec: { ...(parent.spec as Record<string, unknown>), finalizers: [] } } };
  },
};
