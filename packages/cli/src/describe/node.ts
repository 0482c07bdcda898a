// describe node, laid out as kubectl lays it out (conditions, addresses,
// capacity, the pods on the node and what they request).

import { Quantity, tryParseQuantity } from '@kubit/api';
import type { KubeObject, Lease } from '@kubit/client';
import { ageOf } from '../printers/humanize.js';
import { rfc1123z } from './format.js';
import type { PodShape } from './pod.js';
import { visibleAnnotations } from './pod.js';
import type { DescribeWriter } from './writer.js';

export interface NodeShape extends KubeObject {
  spec?: {
    podCIDR?: string;
    podCIDRs?: string[];
    unschedulable?: boolean;
    taints?: { key: string; value?: string; effect: string }[];
    providerID?: string;
  };
  status?: {
    conditions?: {
      type: string;
      status: string;
      lastHeartbeatTime?: string;
      lastTransitionTime?: string;
      reason?: string;
      message?: string;
    }[];
    addresses?: { type: string; address: string }[];
    capacity?: Record<string, string>;
    allocatable?: Record<string, string>;
    nodeInfo?: Record<string, string>;
  };
}

const INFO: [string, string][] = [
  ['machineID', 'Machine ID'],
  ['systemUUID', 'System UUID'],
  ['bootID', 'Boot ID'],
  ['kernelVersion', 'Kernel Version'],
  ['osImage', 'OS Image'],
  ['operatingSystem', 'Operating System'],
  ['architecture', 'Architecture'],
  ['containerRuntimeVersion', 'Container Runtime Version'],
  ['kubeletVersion', 'Kubelet Version'],
  ['kubeProxyVersion', 'Kube-Proxy Version'],
];

function sumResources(pods: PodShape[], which: 'requests' | 'limits', resource: string): Quantity {
  // The sum takes the format of its first term ("64Mi" stays binary), as Kubernetes adds quantities.
  let sum: Quantity | undefined;
  for (const p of pods) {
    for (const c of p.spec?.containers ?? []) {
      const q = tryParseQuantity(String(c.resources?.[which]?.[resource] ?? ''));
      if (q) sum = sum ? sum.add(q) : q;
    }
  }
  return sum ?? Quantity.zero();
}

/** "250m (12%)": CPU shares compare in millicores, everything else in whole units. */
function withPercent(value: Quantity, total: Quantity | undefined, milli: boolean): string {
  const of = (q: Quantity) => (milli ? q.milliValue() : q.value());
  const t = total ? of(total) : 0;
  const pct = t > 0 ? Math.floor((of(value) / t) * 100) : 0;
  return `${value.toString()} (${pct}%)`;
}

/** One row of requests and limits for a resource over some pods. */
function usage(pods: PodShape[], resource: string, total: Quantity | undefined): string {
  const milli = resource === 'cpu';
  return `${withPercent(sumResources(pods, 'requests', resource), total, milli)}\t${withPercent(sumResources(pods, 'limits', resource), total, milli)}`;
}

export type NodeLease = { lease: Lease } | { error: string };

export function describeNode(w: DescribeWriter, node: NodeShape, pods: PodShape[], lease: NodeLease): void {
  const meta = node.metadata ?? {};
  const status = node.status ?? {};
  const spec = node.spec ?? {};
  const roles = Object.keys(meta.labels ?? {})
    .filter((k) => k.startsWith('node-role.kubernetes.io/'))
    .map((k) => k.slice('node-role.kubernetes.io/'.length));
  w.kv(0, 'Name', meta.name);
  w.kv(0, 'Roles', roles.join(',') || '<none>');
  w.map(0, 'Labels', meta.labels);
  w.map(0, 'Annotations', visibleAnnotations(meta.annotations), ': ');
  w.kv(0, 'CreationTimestamp', rfc1123z(meta.creationTimestamp));
  const taints = spec.taints ?? [];
  if (taints.length === 0) w.kv(0, 'Taints', '<none>');
  taints.forEach((t, i) => {
    w.line(0, `${i === 0 ? 'Taints:' : ''}\t${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`);
  });
  w.kv(0, 'Unschedulable', spec.unschedulable ? 'true' : 'false');
  if ('error' in lease) w.kv(0, 'Lease', `Failed to get lease: ${lease.error}`);
  else {
    w.line(0, 'Lease:');
    w.kv(1, 'HolderIdentity', lease.lease.spec?.holderIdentity ?? '<unset>');
    w.kv(
      1,
      'AcquireTime',
      lease.lease.spec?.acquireTime ? rfc1123z(lease.lease.spec.acquireTime) : '<unset>',
    );
    w.kv(1, 'RenewTime', lease.lease.spec?.renewTime ? rfc1123z(lease.lease.spec.renewTime) : '<unset>');
  }
  const conds = status.conditions ?? [];
  w.line(0, 'Conditions:');
  w.line(1, 'Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage');
  w.line(1, '----\t------\t-----------------\t------------------\t------\t-------');
  for (const c of conds) {
    // kubectl ends each condition cell with a space, which widens these columns by one.
    w.line(
      1,
      `${c.type} \t${c.status} \t${rfc1123z(c.lastHeartbeatTime)} \t${rfc1123z(c.lastTransitionTime)} \t${c.reason ?? ''} \t${c.message ?? ''}`,
    );
  }
  w.line(0, 'Addresses:');
  for (const a of status.addresses ?? []) w.kv(1, a.type, a.address);
  for (const [label, m] of [
    ['Capacity', status.capacity],
    ['Allocatable', status.allocatable],
  ] as const) {
    w.line(0, `${label}:`);
    for (const [k, v] of Object.entries(m ?? {}).sort()) w.kv(1, k, v);
  }
  w.line(0, 'System Info:');
  for (const [k, label] of INFO) w.line(1, `${label}:\t${status.nodeInfo?.[k] ?? ''}`);
  if (spec.podCIDR) w.kv(0, 'PodCIDR', spec.podCIDR);
  if (spec.podCIDRs?.length) w.kv(0, 'PodCIDRs', spec.podCIDRs.join(','));
  if (spec.providerID) w.kv(0, 'ProviderID', spec.providerID);
  const running = pods.filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
  const allocatable = (name: string) =>
    tryParseQuantity(String(status.allocatable?.[name] ?? status.capacity?.[name] ?? ''));
  const cpuTotal = allocatable('cpu');
  const memTotal = allocatable('memory');
  w.line(0, `Non-terminated Pods:\t(${running.length} in total)`);
  w.line(1, 'Namespace\tName\t\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge');
  w.line(1, '---------\t----\t\t------------\t----------\t---------------\t-------------\t---');
  for (const p of running) {
    const one = [p];
    w.line(
      1,
      [
        p.metadata?.namespace ?? '',
        p.metadata?.name ?? '',
        '',
        usage(one, 'cpu', cpuTotal),
        usage(one, 'memory', memTotal),
        ageOf(p.metadata?.creationTimestamp),
      ].join('\t'),
    );
  }
  w.line(0, 'Allocated resources:');
  w.line(1, '(Total limits may be over 100 percent, i.e., overcommitted.)');
  w.line(1, 'Resource\tRequests\tLimits');
  w.line(1, '--------\t--------\t------');
  w.line(1, `cpu\t${usage(running, 'cpu', cpuTotal)}`);
  w.line(1, `memory\t${usage(running, 'memory', memTotal)}`);
  w.line(1, `ephemeral-storage\t${usage(running, 'ephemeral-storage', allocatable('ephemeral-storage'))}`);
}
