// Services and EndpointSlices for the planner's tests, shaped as the apiserver serves them.
import type { EndpointSlice, Service, ServiceSpec } from '@kubit/api';
import { SERVICE_NAME_LABEL } from '@kubit/api';
import type { PlannerOptions } from '../src/planner.js';

export const opts: PlannerOptions = {
  nodeName: 'node-a',
  clusterCidrs: ['10.244.0.0/16'],
  nodePortAddresses: [],
  masqueradeAll: false,
};

export function service(name: string, spec: ServiceSpec, extra: Partial<Service> = {}): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: {
      type: 'ClusterIP',
      ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
      ...spec,
    },
    ...extra,
  };
}

export interface Ep {
  ip: string;
  node?: string;
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
}

export function slice(
  svc: string,
  eps: Ep[],
  ports: { name?: string; port: number; protocol?: string }[] = [{ name: 'http', port: 8080 }],
  name = `${svc}-abc`,
): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace: 'default', labels: { [SERVICE_NAME_LABEL]: svc } },
    addressType: 'IPv4',
    ports: ports.map((p) => ({ name: p.name, port: p.port, protocol: p.protocol ?? 'TCP' })),
    endpoints: eps.map((e) => ({
      addresses: [e.ip],
      nodeName: e.node ?? 'node-a',
      conditions: {
        ready: e.ready ?? true,
        serving: e.serving ?? e.ready ?? true,
        terminating: e.terminating ?? false,
      },
    })),
  };
}
