// kubit-dns's place in the cluster: the kube-system/kube-dns Service (no
// selector, the tenth address of the service range) that pods' resolv.conf
// names, and this instance's own EndpointSlice `kube-dns-<node>` with its one
// endpoint, so a proxy sends 10.96.0.10:53 to advertise-address:port. Each
// instance writes only its own slice, so instances never race; a restarted one
// takes its slice over; on shutdown it marks itself not ready, then deletes it.
import {
  type EndpointSlice,
  isAlreadyExists,
  isConflict,
  isNotFound,
  MANAGED_BY_LABEL,
  type Node,
  SERVICE_NAME_LABEL,
  type Service,
} from '@kubit/api';
import { type KubeClient, resources } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { endpointSlices } from './resources.js';

export const KUBE_DNS_NAMESPACE = 'kube-system';
export const KUBE_DNS_SERVICE = 'kube-dns';
/** MANAGED_BY_LABEL's value on the slices kubit-dns writes (the endpointslice controller leaves them alone). */
export const KUBIT_DNS_MANAGER = 'kubit-dns';

export interface RegistrationOptions {
  clusterDnsIP: string;
  /** The node this instance runs on (the slice's name and endpoint nodeName). */
  nodeName: string;
  /** The address proxies reach this instance at; undefined: the Node's InternalIP. */
  advertiseAddress?: string;
  dnsPort: number;
  /** 0: no metrics port in the slice. */
  metricsPort: number;
}

export function kubeDnsService(clusterIP: string): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: KUBE_DNS_SERVICE,
      namespace: KUBE_DNS_NAMESPACE,
      labels: {
        'k8s-app': 'kube-dns',
        'kubernetes.io/name': 'KubitDNS',
        'kubernetes.io/cluster-service': 'true',
      },
    },
    spec: {
      type: 'ClusterIP',
      clusterIP,
      clusterIPs: [clusterIP],
      ports: [
        { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
        { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
        { name: 'metrics', port: 9153, protocol: 'TCP', targetPort: 9153 },
      ],
    },
  };
}

export function sliceName(nodeName: string): string {
  return `${KUBE_DNS_SERVICE}-${nodeName}`.toLowerCase();
}

/** This instance's slice: one endpoint, ready or (shutting down) terminating. */
export function kubeDnsSlice(o: RegistrationOptions & { address: string; ready: boolean }): EndpointSlice {
  const ports: EndpointSlice['ports'] = [
    { name: 'dns', port: o.dnsPort, protocol: 'UDP' },
    { name: 'dns-tcp', port: o.dnsPort, protocol: 'TCP' },
  ];
  if (o.metricsPort > 0) ports.push({ name: 'metrics', port: o.metricsPort, protocol: 'TCP' });
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: sliceName(o.nodeName),
      namespace: KUBE_DNS_NAMESPACE,
      labels: { [SERVICE_NAME_LABEL]: KUBE_DNS_SERVICE, [MANAGED_BY_LABEL]: KUBIT_DNS_MANAGER },
    },
    addressType: 'IPv4',
    endpoints: [
      {
        addresses: [o.address],
        nodeName: o.nodeName,
        conditions: { ready: o.ready, serving: o.ready, terminating: !o.ready },
      },
    ],
    ports,
  };
}

/** The Node's InternalIP (what kubelets report), or undefined while it has none. */
export function internalIP(node: Node): string | undefined {
  return node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
}

export class Registration {
  private address: string | undefined;
  private warnedClusterIP = false;
  private warnedLoopback = false;

  constructor(
    private readonly client: KubeClient,
    private readonly o: RegistrationOptions,
    private readonly log: Logger,
  ) {
    this.address = o.advertiseAddress;
  }

  /** Makes sure the Service and this instance's ready slice are as they should be. Throws on API errors. */
  async reconcile(): Promise<void> {
    await this.ensureService();
    const address = await this.resolveAddress();
    if (!address) return;
    if (address.startsWith('127.')) {
      // EndpointSlice validation refuses loopback addresses (as Kubernetes'), so no proxy could reach us there.
      if (!this.warnedLoopback) {
        this.warnedLoopback = true;
        this.log.error(
          { address, node: this.o.nodeName },
          'the advertise address is a loopback address, which an EndpointSlice may not hold: ' +
            'set --advertise-address to an address proxies can reach; not registering in kube-dns',
        );
      }
      return;
    }
    await this.putSlice(kubeDnsSlice({ ...this.o, address, ready: true }));
  }

  private async resolveAddress(): Promise<string | undefined> {
    if (this.address) return this.address;
    try {
      const node = await this.client.get<Node & { metadata?: object }>(resources.nodes, this.o.nodeName);
      this.address = internalIP(node);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!this.address) {
      this.log.warn(
        { node: this.o.nodeName },
        'no InternalIP for this node yet (set --advertise-address or --hostname-override); retrying',
      );
    }
    return this.address;
  }

  private async ensureService(): Promise<void> {
    let existing: Service | undefined;
    try {
      existing = await this.client.get<Service & { metadata?: object }>(
        resources.services,
        KUBE_DNS_SERVICE,
        {
          namespace: KUBE_DNS_NAMESPACE,
        },
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!existing) {
      try {
        await this.client.create(
          resources.services,
          kubeDnsService(this.o.clusterDnsIP) as Service & object,
          {
            namespace: KUBE_DNS_NAMESPACE,
          },
        );
        this.log.info({ clusterIP: this.o.clusterDnsIP }, 'created the kube-system/kube-dns Service');
      } catch (err) {
        // Another instance created it first: fine.
        if (!isAlreadyExists(err)) throw err;
      }
      return;
    }
    if (existing.spec?.clusterIP !== this.o.clusterDnsIP && !this.warnedClusterIP) {
      this.warnedClusterIP = true;
      this.log.warn(
        { clusterIP: existing.spec?.clusterIP, expected: this.o.clusterDnsIP },
        'kube-system/kube-dns already exists with another cluster IP; leaving it as it is',
      );
    }
  }

  /** Creates the slice, or takes over the one a previous run of this instance left. */
  private async putSlice(want: EndpointSlice): Promise<void> {
    const name = want.metadata?.name ?? '';
    for (let attempt = 0; attempt < 3; attempt++) {
      let have: EndpointSlice | undefined;
      try {
        have = await this.client.get<EndpointSlice & { metadata?: object }>(endpointSlices, name, {
          namespace: KUBE_DNS_NAMESPACE,
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      try {
        if (!have) {
          await this.client.create(endpointSlices, want as EndpointSlice & object, {
            namespace: KUBE_DNS_NAMESPACE,
          });
          this.log.info({ slice: name, address: want.endpoints[0]?.addresses[0] }, 'registered in kube-dns');
        } else if (!sameSlice(have, want)) {
          await this.client.update(
            endpointSlices,
            {
              ...want,
              metadata: { ...have.metadata, labels: { ...have.metadata?.labels, ...want.metadata?.labels } },
            } as EndpointSlice & object,
            { namespace: KUBE_DNS_NAMESPACE },
          );
          this.log.info(
            { slice: name, address: want.endpoints[0]?.addresses[0] },
            'updated own kube-dns slice',
          );
        }
        return;
      } catch (err) {
        if (!isConflict(err) && !isAlreadyExists(err)) throw err;
      }
    }
  }

  /** Shutdown: first not ready (proxies stop sending), then gone. */
  async deregister(): Promise<void> {
    const address = this.address;
    if (!address) return;
    const name = sliceName(this.o.nodeName);
    try {
      await this.putSlice(kubeDnsSlice({ ...this.o, address, ready: false }));
      await this.client.delete(endpointSlices, name, { namespace: KUBE_DNS_NAMESPACE });
      this.log.info({ slice: name }, 'removed own kube-dns slice');
    } catch (err) {
      if (!isNotFound(err))
        this.log.warn({ err: (err as Error).message }, 'could not remove own kube-dns slice');
    }
  }
}

function sameSlice(a: EndpointSlice, b: EndpointSlice): boolean {
  const pick = (s: EndpointSlice) =>
    JSON.stringify({
      addressType: s.addressType,
      endpoints: s.endpoints,
      ports: s.ports,
      svc: s.metadata?.labels?.[SERVICE_NAME_LABEL],
      mgr: s.metadata?.labels?.[MANAGED_BY_LABEL],
    });
  return pick(a) === pick(b);
}
