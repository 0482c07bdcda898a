// The resources kubit-dns reads that @kubit/client's list does not name yet.
import type { ResourceRef } from '@kubit/client';

export const endpointSlices: ResourceRef = {
  group: 'discovery.k8s.io',
  version: 'v1',
  resource: 'endpointslices',
  kind: 'EndpointSlice',
  namespaced: true,
};
