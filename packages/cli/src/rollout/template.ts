// A pod template laid out as describe lays it out ("Pod Template:" section),
// for `rollout history --revision=N`.

import { DescribeWriter, writeCommandAndArgs } from '../describe/writer.js';
import type { PodTemplate } from './deployment.js';

interface Container {
  name?: string;
  image?: string;
  command?: string[];
  args?: string[];
  ports?: { containerPort?: number; hostPort?: number; protocol?: string }[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}

function ports(list: Container['ports'], host: boolean): string {
  if (!list || list.length === 0) return '<none>';
  return list.map((p) => `${(host ? p.hostPort : p.containerPort) ?? 0}/${p.protocol ?? 'TCP'}`).join(', ');
}

function writeContainer(w: DescribeWriter, c: Container): void {
  w.line(2, `${c.name ?? ''}:`);
  w.kv(3, 'Image', c.image);
  const multi = (c.ports?.length ?? 0) > 1;
  w.kv(3, multi ? 'Ports' : 'Port', ports(c.ports, false));
  w.kv(3, multi ? 'Host Ports' : 'Host Port', ports(c.ports, true));
  writeCommandAndArgs(w, 3, c);
  if (c.env?.length) {
    w.line(3, 'Environment:');
    for (const e of c.env) w.line(4, `${e.name}:\t${e.value ?? (e.valueFrom ? '<set from a source>' : '')}`);
  } else w.kv(3, 'Environment', '');
  if (c.volumeMounts?.length) {
    w.line(3, 'Mounts:');
    for (const m of c.volumeMounts) w.line(4, `${m.mountPath} from ${m.name} (${m.readOnly ? 'ro' : 'rw'})`);
  } else w.kv(3, 'Mounts', '');
}

export function describeTemplate(t: PodTemplate): string {
  const w = new DescribeWriter();
  w.line(0, 'Pod Template:');
  w.map(1, 'Labels', t.metadata?.labels);
  const annotations = t.metadata?.annotations;
  if (annotations && Object.keys(annotations).length > 0) w.map(1, 'Annotations', annotations, ': ');
  const spec = (t.spec ?? {}) as {
    initContainers?: Container[];
    containers?: Container[];
    volumes?: { name: string }[];
  };
  if (spec.initContainers?.length) {
    w.line(1, 'Init Containers:');
    for (const c of spec.initContainers) writeContainer(w, c);
  }
  w.line(1, 'Containers:');
  for (const c of spec.containers ?? []) writeContainer(w, c);
  if (spec.volumes?.length) {
    w.line(1, 'Volumes:');
    for (const v of spec.volumes) w.line(2, `${v.name}:`);
  } else w.kv(1, 'Volumes', '');
  return w.toString();
}
