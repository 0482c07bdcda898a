// Pods: defaults, the status strategy and the columns of `kubectl get pods`.
// Validation (including the update rules) comes from @kubit/api.
import {
  addDefaultTolerations,
  defaultPod as apiDefaultPod,
  compareQuantities,
  toQuantity,
} from '@kubit/api';
import { schemas } from '../model/schema.js';
import type { KObject } from '../storage.js';
import { bindingSubresource } from '../subresources/binding.js';
import { ephemeralContainersSubresource } from '../subresources/ephemeral-containers.js';
import { evictionSubresource } from '../subresources/eviction.js';
import { logSubresource } from '../subresources/log.js';
import { podProxySubresource } from '../subresources/proxy.js';
import { statusSubresource } from '../subresources/status.js';
import { age } from '../table.js';
import { arr, type KindDef, meta, type Obj, obj, str } from './types.js';

function containersOf(spec: Obj): Obj[] {
  return [...arr(spec.initContainers), ...arr(spec.containers)].map(obj);
}

/**
 * Defaults from @kubit/api, then what admission adds on top: the service
 * account and the not-ready/unreachable tolerations (DefaultTolerationSeconds).
 */
export function defaultPod(pod: KObject): void {
  pod.spec ??= {};
  apiDefaultPod(pod);
  // spec.priority and spec.preemptionPolicy are the Priority admission plugin's, from the
  // pod's class (admission/priority.ts): a default here would hide what the client sent.
  const spec = obj(pod.spec);
  if (spec.serviceAccountName === undefined && typeof spec.serviceAccount === 'string') {
    spec.serviceAccountName = spec.serviceAccount;
  }
  spec.serviceAccountName ??= 'default';
  spec.serviceAccount = spec.serviceAccountName;
  addDefaultTolerations(pod);
}

function sameQuantity(a: unknown, b: unknown): boolean {
  try {
    return compareQuantities(toQuantity(a as string), toQuantity(b as string)) === 0;
  } catch {
    return false;
  }
}

function qosClass(pod: KObject): string {
  const containers = containersOf(obj(pod.spec));
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const res = obj(c.resources);
    const req = obj(res.requests);
    const lim = obj(res.limits);
    if (Object.keys(req).length > 0 || Object.keys(lim).length > 0) any = true;
    for (const r of ['cpu', 'memory']) {
      if (lim[r] === undefined || !sameQuantity(req[r] ?? lim[r], lim[r])) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

/** The STATUS column, following kubectl's rules. */
export function podStatusText(pod: KObject): {
  status: string;
  ready: number;
  total: number;
  restarts: number;
} {
  const spec = obj(pod.spec);
  const status = obj(pod.status);
  let reason = str(status.reason) || str(status.phase);
  const total = arr(spec.containers).length;
  let ready = 0;
  let restarts = 0;
  let initializing = false;
  const inits = arr(status.initContainerStatuses).map(obj);
  const initCount = arr(spec.initContainers).length;
  inits.forEach((s, i) => {
    restarts += Number(s.restartCount ?? 0);
    const st = obj(s.state);
    const term = obj(st.terminated);
    const wait = obj(st.waiting);
    if (st.terminated && term.exitCode === 0) return;
    if (initializing) return;
    if (st.terminated) {
      reason = term.reason
        ? `Init:${str(term.reason)}`
        : term.signal
          ? `Init:Signal:${term.signal}`
          : `Init:ExitCode:${term.exitCode}`;
      initializing = true;
    } else if (st.waiting && str(wait.reason) && wait.reason !== 'PodInitializing') {
      reason = `Init:${str(wait.reason)}`;
      initializing = true;
    } else {
      reason = `Init:${i}/${initCount}`;
      initializing = true;
    }
  });
  let hasRunning = false;
  const statuses = arr(status.containerStatuses).map(obj);
  for (let i = statuses.length - 1; i >= 0; i--) {
    const s = statuses[i];
    restarts += Number(s.restartCount ?? 0);
    if (initializing) continue;
    const st = obj(s.state);
    const term = obj(st.terminated);
    const wait = obj(st.waiting);
    if (st.waiting && str(wait.reason)) reason = str(wait.reason);
    else if (st.terminated && str(term.reason)) reason = str(term.reason);
    else if (st.terminated) reason = term.signal ? `Signal:${term.signal}` : `ExitCode:${term.exitCode}`;
    else if (s.ready === true && st.running) {
      hasRunning = true;
      ready++;
    }
  }
  if (!initializing && reason === 'Completed' && hasRunning) {
    const readyCond = arr(status.conditions)
      .map(obj)
      .find((c) => c.type === 'Ready');
    reason = readyCond?.status === 'True' ? 'Running' : 'NotReady';
  }
  const m = meta(pod);
  if (m.deletionTimestamp && status.reason === 'NodeLost') reason = 'Unknown';
  else if (m.deletionTimestamp) reason = 'Terminating';
  return { status: reason, ready, total, restarts };
}

export const pods: KindDef = {
  group: '',
  version: 'v1',
  kind: 'Pod',
  resource: 'pods',
  singular: 'pod',
  namespaced: true,
  shortNames: ['po'],
  categories: ['all'],
  schema: schemas.pod,
  nameRule: 'subdomain',
  subresources: [
    statusSubresource,
    bindingSubresource,
    logSubresource,
    evictionSubresource,
    podProxySubresource,
    ephemeralContainersSubresource,
  ],
  generation: true,
  example: { spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] } },
  deletion: {
    gracePeriodSeconds(pod, requested) {
      const spec = obj(pod.spec);
      const phase = str(obj(pod.status).phase);
      // Nothing runs an unbound or finished pod: there is nothing to wait for.
      if (!str(spec.nodeName) || phase === 'Succeeded' || phase === 'Failed') return 0;
      return requested ?? Number(spec.terminationGracePeriodSeconds ?? 30);
    },
    // A pod marked with a grace period is removed by its kubelet (a delete with grace 0).
    stillWaiting: (pod) => Number(meta(pod).deletionGracePeriodSeconds ?? 0) > 0,
  },
  defaults: defaultPod,
  prepareForCreate(pod) {
    pod.status = { phase: 'Pending', qosClass: qosClass(pod) };
  },
  prepareForUpdate(pod, old) {
    pod.status = old.status;
  },
  prepareForStatusUpdate(pod, old) {
    pod.spec = old.spec;
    const m = meta(pod);
    const om = meta(old);
    m.deletionTimestamp = om.deletionTimestamp;
    m.deletionGracePeriodSeconds = om.deletionGracePeriodSeconds;
    if (m.deletionTimestamp === undefined) delete m.deletionTimestamp;
    if (m.deletionGracePeriodSeconds === undefined) delete m.deletionGracePeriodSeconds;
  },
  fields(pod) {
    const spec = obj(pod.spec);
    const status = obj(pod.status);
    return {
      'spec.nodeName': str(spec.nodeName),
      'spec.restartPolicy': str(spec.restartPolicy),
      'spec.schedulerName': str(spec.schedulerName),
      'spec.serviceAccountName': str(spec.serviceAccountName),
      'spec.hostNetwork': String(spec.hostNetwork === true),
      'status.phase': str(status.phase),
      'status.podIP': str(status.podIP),
      'status.nominatedNodeName': str(status.nominatedNodeName),
    };
  },
  table: {
    columns: [
      {
        name: 'Ready',
        type: 'string',
        description: 'The aggregate readiness state of this pod for accepting traffic.',
        priority: 0,
      },
      {
        name: 'Status',
        type: 'string',
        description: 'The aggregate status of the containers in this pod.',
        priority: 0,
      },
      {
        name: 'Restarts',
        type: 'string',
        description: 'The number of times the containers in this pod have been restarted.',
        priority: 0,
      },
      { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 },
      { name: 'IP', type: 'string', description: 'The IP address assigned to the pod', priority: 1 },
      {
        name: 'Node',
        type: 'string',
        description: 'The name of the node the pod is assigned to',
        priority: 1,
      },
      { name: 'Nominated Node', type: 'string', description: 'The nominated node of the pod', priority: 1 },
      { name: 'Readiness Gates', type: 'string', description: 'The readiness gates of the pod', priority: 1 },
    ],
    cells(pod, now) {
      const s = podStatusText(pod);
      const spec = obj(pod.spec);
      const status = obj(pod.status);
      const gates = arr(spec.readinessGates).map(obj);
      let gatesText = '<none>';
      if (gates.length > 0) {
        const conds = arr(status.conditions).map(obj);
        const ok = gates.filter((g) =>
          conds.some((c) => c.type === g.conditionType && c.status === 'True'),
        ).length;
        gatesText = `${ok}/${gates.length}`;
      }
      return [
        `${s.ready}/${s.total}`,
        s.status,
        String(s.restarts),
        age(pod, now),
        str(status.podIP) || '<none>',
        str(spec.nodeName) || '<none>',
        str(status.nominatedNodeName) || '<none>',
        gatesText,
      ];
    },
  },
};
