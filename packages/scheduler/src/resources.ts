// Pod resource requests and node allocatable, reduced to plain numbers once per object.
import { parseMilli, parseValue } from './quantity.js';
import type { Container, Node, Pod } from './types.js';

export interface Resources {
  milliCpu: number;
  memory: number;
  ephemeralStorage: number;
  /** Extended resources (e.g. example.com/gpu), in whole units; null when there are none. */
  scalars: Map<string, number> | null;
}

export function emptyResources(): Resources {
  return { milliCpu: 0, memory: 0, ephemeralStorage: 0, scalars: null };
}

// Kubernetes gives request-less containers these amounts for spreading scores only
// (never for fit), so best-effort pods do not all pile onto one node.
export const defaultMilliCpuRequest = 100;
export const defaultMemoryRequest = 200 * 1024 * 1024;

const ignoredForFit = new Set(['cpu', 'memory', 'ephemeral-storage', 'pods']);

function addList(into: Resources, list: Readonly<Record<string, string>> | undefined): void {
  if (!list) return;
  for (const [name, q] of Object.entries(list)) {
    if (name === 'cpu') into.milliCpu += parseMilli(q);
    else if (name === 'memory') into.memory += parseValue(q);
    else if (name === 'ephemeral-storage') into.ephemeralStorage += parseValue(q);
    else if (!ignoredForFit.has(name) && !name.startsWith('hugepages-') && name.includes('/')) {
      into.scalars ??= new Map();
      into.scalars.set(name, (into.scalars.get(name) ?? 0) + parseValue(q));
    }
  }
}

function maxInto(into: Resources, other: Resources): void {
  into.milliCpu = Math.max(into.milliCpu, other.milliCpu);
  into.memory = Math.max(into.memory, other.memory);
  into.ephemeralStorage = Math.max(into.ephemeralStorage, other.ephemeralStorage);
  if (other.scalars) {
    into.scalars ??= new Map();
    for (const [k, v] of other.scalars) into.scalars.set(k, Math.max(into.scalars.get(k) ?? 0, v));
  }
}

function addInto(into: Resources, other: Resources): void {
  into.milliCpu += other.milliCpu;
  into.memory += other.memory;
  into.ephemeralStorage += other.ephemeralStorage;
  if (other.scalars) {
    into.scalars ??= new Map();
    for (const [k, v] of other.scalars) into.scalars.set(k, (into.scalars.get(k) ?? 0) + v);
  }
}

function containerRequests(c: Container): Resources {
  const r = emptyResources();
  addList(r, c.resources?.requests);
  return r;
}

/**
 * What a pod asks of a node, as Kubernetes computes it: the sum of its containers,
 * raised to the largest init container (init containers run one at a time, before
 * the others), where restartable (sidecar) init containers keep running and so add
 * to everything after them; plus the pod overhead.
 */
export function podRequests(pod: Pod): Resources {
  const total = emptyResources();
  for (const c of pod.spec?.containers ?? []) addInto(total, containerRequests(c));
  const sidecars = emptyResources();
  const initPeak = emptyResources();
  for (const c of pod.spec?.initContainers ?? []) {
    const r = containerRequests(c);
    if (c.restartPolicy === 'Always') {
      addInto(sidecars, r);
      maxInto(initPeak, sidecars);
    } else {
      const during = emptyResources();
      addInto(during, sidecars);
      addInto(during, r);
      maxInto(initPeak, during);
    }
  }
  addInto(total, sidecars);
  maxInto(total, initPeak);
  addList(total, pod.spec?.overhead);
  return total;
}

/** Like podRequests, but cpu and memory of request-less containers count as the scoring defaults. */
export function podNonZeroRequests(pod: Pod): { milliCpu: number; memory: number } {
  let cpu = 0;
  let mem = 0;
  for (const c of pod.spec?.containers ?? []) {
    const req = c.resources?.requests;
    cpu += req?.cpu !== undefined ? parseMilli(req.cpu) : defaultMilliCpuRequest;
    mem += req?.memory !== undefined ? parseValue(req.memory) : defaultMemoryRequest;
  }
  for (const c of pod.spec?.initContainers ?? []) {
    const req = c.resources?.requests;
    cpu = Math.max(cpu, req?.cpu !== undefined ? parseMilli(req.cpu) : defaultMilliCpuRequest);
    mem = Math.max(mem, req?.memory !== undefined ? parseValue(req.memory) : defaultMemoryRequest);
  }
  const oh = pod.spec?.overhead;
  if (oh?.cpu !== undefined) cpu += parseMilli(oh.cpu);
  if (oh?.memory !== undefined) mem += parseValue(oh.memory);
  return { milliCpu: cpu, memory: mem };
}

export interface Allocatable extends Resources {
  pods: number;
}

export function nodeAllocatable(node: Node): Allocatable {
  const list = node.status?.allocatable ?? node.status?.capacity ?? {};
  const r = emptyResources();
  addList(r, list);
  // One literal shape for every node keeps the filter's property reads monomorphic.
  return {
    milliCpu: r.milliCpu,
    memory: r.memory,
    ephemeralStorage: r.ephemeralStorage,
    scalars: r.scalars,
    pods: list.pods !== undefined ? parseValue(list.pods) : 0,
  };
}
