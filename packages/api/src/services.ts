// The names and defaults that Services, their endpoints, the proxy and cluster DNS
// share, as Kubernetes spells them.
import { type Cidr, nthAddress, parseCidr } from './ipv4.js';

/** Every EndpointSlice names its Service with this label. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
/** Who keeps an EndpointSlice up to date. */
export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
/** The value of MANAGED_BY_LABEL on the slices the controller manager writes. */
export const ENDPOINTSLICE_CONTROLLER_NAME = 'endpointslice-controller.k8s.io';
/** A Service with this label is left to a proxy of that name (kube-proxy skips it). */
export const SERVICE_PROXY_NAME_LABEL = 'service.kubernetes.io/service-proxy-name';
/** Set on a Service or its endpoints when no selector is there to keep them. */
export const HEADLESS_LABEL = 'service.kubernetes.io/headless';

export const DEFAULT_SERVICE_CIDR = '10.96.0.0/12';
export const DEFAULT_NODE_PORT_RANGE = '30000-32767';
export const DEFAULT_CLUSTER_DOMAIN = 'cluster.local';

/** The first address of the service range is the `kubernetes` Service's. */
export function apiServerServiceIP(serviceCidr: string | Cidr): number {
  const c = typeof serviceCidr === 'string' ? parseCidr(serviceCidr) : serviceCidr;
  return nthAddress(c, 1);
}

/** The tenth address of the service range is cluster DNS's (kube-system/kube-dns). */
export function clusterDnsIP(serviceCidr: string | Cidr): number {
  const c = typeof serviceCidr === 'string' ? parseCidr(serviceCidr) : serviceCidr;
  return nthAddress(c, 10);
}
