// describe pod, laid out as kubectl lays it out.

import type { KubeObject } from '@kubit/client';
import { rfc1123z } from './format.js';
import { type DescribeWriter, writeCommandAndArgs } from './writer.js';

interface ContainerSpec {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  ports?: { containerPort: number; hostPort?: number; protocol?: string; name?: string }[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  resources?: { limits?: Record<string, string>; requests?: Record<string, string> };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface ContainerState {
  running?: { startedAt?: string };
  waiting?: { reason?: string; message?: string };
  terminated?: {
    reason?: string;
    exitCode?: number;
    startedAt?: string;
    finishedAt?: string;
    message?: string;
  };
}
interface ContainerStatus {
  name: string;
  containerID?: string;
  imageID?: string;
  ready?: boolean;
  restartCount?: number;
  state?: ContainerState;
  lastState?: ContainerState;
}
export interface PodShape extends KubeObject {
  spec?: {
    nodeName?: string;
    priority?: number;
    serviceAccountName?: string;
    containers?: ContainerSpec[];
    initContainers?: ContainerSpec[];
    volumes?: ({ name: string } & Record<string, unknown>)[];
    nodeSelector?: Record<string, string>;
    tolerations?: {
      key?: string;
      operator?: string;
      value?: string;
      effect?: string;
      tolerationSeconds?: number;
    }[];
  };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    hostIP?: string;
    podIP?: string;
    podIPs?: { ip: string }[];
    startTime?: string;
    qosClass?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: ContainerStatus[];
    initContainerStatuses?: ContainerStatus[];
  };
}

/** kubectl keeps apply's bookkeeping annotation out of describe. */
export function visibleAnnotations(a: Record<string, string> | undefined): Record<string, string> {
  const { 'kubectl.kubernetes.io/last-applied-configuration': _omit, ...rest } = a ?? {};
  return rest;
}

function writeState(w: DescribeWriter, level: number, label: string, s: ContainerState | undefined): void {
  if (!s || (!s.running && !s.waiting && !s.terminated)) {
    w.kv(level, label, 'Waiting');
    return;
  }
  if (s.running) {
    w.kv(level, label, 'Running');
    w.kv(level + 1, 'Started', rfc1123z(s.running.startedAt));
  } else if (s.waiting) {
    w.kv(level, label, 'Waiting');
    if (s.waiting.reason) w.kv(level + 1, 'Reason', s.waiting.reason);
    if (s.waiting.message) w.kv(level + 1, 'Message', s.waiting.message);
  } else if (s.terminated) {
    w.kv(level, label, 'Terminated');
    if (s.terminated.reason) w.kv(level + 1, 'Reason', s.terminated.reason);
    if (s.terminated.message) w.kv(level + 1, 'Message', s.terminated.message);
    w.kv(level + 1, 'Exit Code', s.terminated.exitCode ?? 0);
    if (s.terminated.startedAt) w.kv(level + 1, 'Started', rfc1123z(s.terminated.startedAt));
    if (s.terminated.finishedAt) w.kv(level + 1, 'Finished', rfc1123z(s.terminated.finishedAt));
  }
}

function writeContainers(
  w: DescribeWriter,
  title: string,
  specs: ContainerSpec[],
  statuses: ContainerStatus[],
): void {
  w.line(0, `${title}:`);
  for (const c of specs) {
    const st = statuses.find((s) => s.name === c.name);
    w.line(1, `${c.name}:`);
    if (st) w.line(2, `Container ID:\t${st.containerID ?? ''}`);
    w.kv(2, 'Image', c.image ?? '');
    if (st) w.line(2, `Image ID:\t${st.imageID ?? ''}`);
    const ports = c.ports ?? [];
    w.kv(
      2,
      ports.length > 1 ? 'Ports' : 'Port',
      ports.length ? ports.map((p) => `${p.containerPort}/${p.protocol ?? 'TCP'}`).join(', ') : '<none>',
    );
    w.kv(
      2,
      ports.length > 1 ? 'Host Ports' : 'Host Port',
      ports.length ? ports.map((p) => `${p.hostPort ?? 0}/${p.protocol ?? 'TCP'}`).join(', ') : '<none>',
    );
    writeCommandAndArgs(w, 2, c);
    if (st) {
      writeState(w, 2, 'State', st.state);
      const last = st.lastState;
      if (last && (last.terminated || last.running || last.waiting)) writeState(w, 2, 'Last State', last);
      w.kv(2, 'Ready', st.ready ? 'True' : 'False');
      w.kv(2, 'Restart Count', st.restartCount ?? 0);
    }
    for (const [label, m] of [
      ['Limits', c.resources?.limits],
      ['Requests', c.resources?.requests],
    ] as const) {
      if (m && Object.keys(m).length > 0) {
        w.line(2, `${label}:`);
        for (const [k, v] of Object.entries(m).sort()) w.kv(3, k, v);
      }
    }
    if (c.env?.length) {
      w.line(2, 'Environment:');
      for (const e of c.env) w.kv(3, e.name, e.value ?? (e.valueFrom ? JSON.stringify(e.valueFrom) : ''));
    } else w.kv(2, 'Environment', '<none>');
    if (c.volumeMounts?.length) {
      w.line(2, 'Mounts:');
      for (const m of c.volumeMounts)
        w.line(3, `${m.mountPath} from ${m.name} (${m.readOnly ? 'ro' : 'rw'})`);
    } else w.kv(2, 'Mounts', '<none>');
  }
}

export function describePod(w: DescribeWriter, pod: PodShape): void {
  const spec = pod.spec ?? {};
  const status = pod.status ?? {};
  const meta = pod.metadata ?? {};
  w.kv(0, 'Name', meta.name);
  w.kv(0, 'Namespace', meta.namespace);
  w.kv(0, 'Priority', spec.priority ?? 0);
  w.kv(0, 'Service Account', spec.serviceAccountName ?? 'default');
  w.kv(0, 'Node', spec.nodeName ? `${spec.nodeName}/${status.hostIP ?? ''}` : '<none>');
  if (status.startTime) w.kv(0, 'Start Time', rfc1123z(status.startTime));
  w.map(0, 'Labels', meta.labels);
  w.map(0, 'Annotations', visibleAnnotations(meta.annotations), ': ');
  if (meta.deletionTimestamp) {
    w.kv(0, 'Status', `Terminating (lasts ${meta.deletionGracePeriodSeconds ?? 0}s)`);
    w.kv(0, 'Termination Grace Period', `${meta.deletionGracePeriodSeconds ?? 0}s`);
  } else w.kv(0, 'Status', status.phase ?? 'Pending');
  if (status.reason) w.kv(0, 'Reason', status.reason);
  if (status.message) w.kv(0, 'Message', status.message);
  w.line(0, `IP:\t${status.podIP ?? ''}`);
  const ips = status.podIPs ?? (status.podIP ? [{ ip: status.podIP }] : []);
  if (ips.length === 0) w.kv(0, 'IPs', '<none>');
  else {
    w.line(0, 'IPs:');
    for (const ip of ips) w.kv(1, 'IP', ip.ip);
  }
  if (spec.initContainers?.length)
    writeContainers(w, 'Init Containers', spec.initContainers, status.initContainerStatuses ?? []);
  writeContainers(w, 'Containers', spec.containers ?? [], status.containerStatuses ?? []);
  const conds = status.conditions ?? [];
  if (conds.length > 0) {
    w.line(0, 'Conditions:');
    w.line(1, 'Type\tStatus');
    for (const c of conds) w.line(1, `${c.type} \t${c.status} `);
  }
  const vols = spec.volumes ?? [];
  if (vols.length === 0) w.kv(0, 'Volumes', '<none>');
  else {
    w.line(0, 'Volumes:');
    for (const v of vols) {
      w.line(1, `${v.name}:`);
      const [type, src] = Object.entries(v).find(([k]) => k !== 'name') ?? ['', {}];
      w.kv(2, 'Type', type ? `${type.charAt(0).toUpperCase()}${type.slice(1)}` : '<unknown>');
      if (src && typeof src === 'object')
        for (const [k, val] of Object.entries(src as Record<string, unknown>))
          w.kv(
            2,
            k.charAt(0).toUpperCase() + k.slice(1),
            typeof val === 'object' ? JSON.stringify(val) : String(val),
          );
    }
  }
  w.kv(0, 'QoS Class', status.qosClass ?? 'BestEffort');
  w.kv(
    0,
    'Node-Selectors',
    Object.entries(spec.nodeSelector ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(',') || '<none>',
  );
  const tol = spec.tolerations ?? [];
  if (tol.length === 0) w.kv(0, 'Tolerations', '<none>');
  tol.forEach((t, i) => {
    let text = t.key ?? '';
    if (t.operator === 'Exists' && !t.key) text = '';
    else if (t.value) text += `=${t.value}`;
    else if (t.operator === 'Exists') text += '';
    if (t.effect) text += `:${t.effect}`;
    if (t.operator === 'Exists' && !t.value) text += ' op=Exists';
    if (t.tolerationSeconds !== undefined) text += ` for ${t.tolerationSeconds}s`;
    w.line(0, `${i === 0 ? 'Tolerations:' : ''}\t${text.trim()}`);
  });
}
