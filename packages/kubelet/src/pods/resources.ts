// Container resources as the CRI wants them (cgroup values), and pod requests
// for admission.
import { toMilli, toNumber } from '@kubit/api';
import type { LinuxContainerResources } from '@kubit/cri';
import type { Container, Pod } from 'kubernetes-types/core/v1.js';

/** The CFS period the kubelet uses: 100 ms. */
export const CPU_PERIOD_US = 100_000;
const MIN_SHARES = 2;
const SHARES_PER_CPU = 1024;
const MIN_QUOTA_US = 1000;

/** cpu request → shares, cpu limit → quota over a 100 ms period, memory limit → bytes. */
export function linuxResources(container: Container): LinuxContainerResources {
  const requests = container.resources?.requests ?? {};
  const limits = container.resources?.limits ?? {};
  const out: LinuxContainerResources = {};
  // Kubernetes defaults a missing request to the limit.
  const cpuRequest = requests.cpu ?? limits.cpu;
  out.cpuShares = cpuRequest
    ? Math.max(MIN_SHARES, Math.floor((toMilli(cpuRequest) * SHARES_PER_CPU) / 1000))
    : MIN_SHARES;
  if (limits.cpu) {
    out.cpuPeriod = CPU_PERIOD_US;
    out.cpuQuota = Math.max(MIN_QUOTA_US, Math.floor((toMilli(limits.cpu) * CPU_PERIOD_US) / 1000));
  }
  if (limits.memory) out.memoryLimitInBytes = Math.floor(toNumber(limits.memory));
  return out;
}

export interface PodRequests {
  milliCpu: number;
  memoryBytes: number;
}

/** What a pod asks for: the larger of the sum of its containers and its biggest init container. */
export function podRequests(pod: Pod): PodRequests {
  const req = (c: Container) => {
    const r = c.resources?.requests ?? {};
    const l = c.resources?.limits ?? {};
    const cpu = r.cpu ?? l.cpu;
    const mem = r.memory ?? l.memory;
    return { milliCpu: cpu ? toMilli(cpu) : 0, memoryBytes: mem ? toNumber(mem) : 0 };
  };
  const sum = { milliCpu: 0, memoryBytes: 0 };
  for (const c of pod.spec?.containers ?? []) {
    const r = req(c);
    sum.milliCpu += r.milliCpu;
    sum.memoryBytes += r.memoryBytes;
  }
  for (const c of pod.spec?.initContainers ?? []) {
    const r = req(c);
    sum.milliCpu = Math.max(sum.milliCpu, r.milliCpu);
    sum.memoryBytes = Math.max(sum.memoryBytes, r.memoryBytes);
  }
  return sum;
}
