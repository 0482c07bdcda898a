// <resource>/status: reads and writes of the status alone (each kind's
// prepareForStatusUpdate keeps the rest as stored).
import { methodNotSupported } from '@kubit/api';
import type { SubresourceDef } from '../kinds/types.js';
import { gr } from '../rest.js';

export const statusSubresource: SubresourceDef = {
  name: 'status',
  verbs: ['get', 'patch', 'update'],
  async serve(verb, { rest, def, ri, ctx }) {
    if (verb === 'get') return rest.get(def, ri);
    if (verb === 'update') return rest.update(def, ri, ctx);
    if (verb === 'patch') return rest.patch(def, ri, ctx);
    throw methodNotSupported({ ...gr(def), resource: `${def.resource}/status` }, verb);
  },
  exampleBody(verb, parent) {
    const condition = { type: 'DryRunExample', status: 'True' };
    const status = { ...(parent.status as Record<string, unknown> | undefined), conditions: [condition] };
    if (verb === 'update') return { body: { ...parent, status } };
    if (verb === 'patch') return { body: { status: { conditions: [condition] } } };
    return undefined;
  },
};
