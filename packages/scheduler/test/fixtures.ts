// Builders for pods and nodes in tests: short to write, complete enough for every plugin.
import type { Node, Pod } from '../src/types.js';

export interface NodeSpec {
  cpu?: string;
  memory?: string;
  pods?: string;
  labels?: Record<string, string>;
  taints?: { key: string; value?: string; effect: string }[];
  unschedulable?: boolean;
  extra?: Record<string, string>;
}

export function node(name: string, s: NodeSpec = {}): Node {
  const alloc = { cpu: s.cpu ?? '4', memory: s.memory ?? '8Gi', pods: s.pods ?? '110', ...s.extra };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...s.labels } },
    spec: { taints: s.taints, unschedulable: s.unschedulable },
    status: { allocatable: alloc, capacity: alloc },
  };
}

export function pod(
  name: string,
  spec: Partial<NonNullable<Pod['spec']>> & { cpu?: string; memory?: string } = {},
  meta: { labels?: Record<string, string>; namespace?: string } = {},
): Pod {
  const { cpu, memory, ...rest } = spec;
  const requests: Record<string, string> = {};
  if (cpu) requests.cpu = cpu;
  if (memory) requests.memory = memory;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: meta.namespace ?? 'default', labels: meta.labels, uid: `uid-${name}` },
    spec: {
      containers: [
        { name: 'c', image: 'busybox', resources: Object.keys(requests).length ? { requests } : undefined },
      ],
      ...rest,
    },
  };
}

export function onNode(p: Pod, nodeName: string): Pod {
  return { ...p, spec: { ...p.spec!, nodeName } };
}

export function antiAffinityByHostname(app: string): NonNullable<Pod['spec']>['affinity'] {
  return {
    podAntiAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [
        { labelSelector: { matchLabels: { app } }, topologyKey: 'kubernetes.io/hostname' },
      ],
    },
  };
}
