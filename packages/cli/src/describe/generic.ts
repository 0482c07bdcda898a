// describe for kinds without a dedicated layout: metadata, then every other
// field with titled names, nested by indentation.

import type { KubeObject } from '@kubit/client';
import { titleCase } from './format.js';
import { visibleAnnotations } from './pod.js';
import type { DescribeWriter } from './writer.js';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function scalar(v: unknown): string {
  return v === null || v === undefined ? '<nil>' : typeof v === 'string' ? v : String(v);
}

function writeValue(w: DescribeWriter, level: number, key: string, v: unknown): void {
  if (isRecord(v)) {
    if (Object.keys(v).length === 0) {
      w.kv(level, key, '');
      return;
    }
    w.line(level, `${key}:`);
    for (const [k, x] of Object.entries(v)) writeValue(w, level + 1, titleCase(k), x);
  } else if (Array.isArray(v)) {
    if (v.length === 0) {
      w.kv(level, key, '');
      return;
    }
    w.line(level, `${key}:`);
    for (const item of v) {
      if (isRecord(item)) {
        const entries = Object.entries(item);
        entries.forEach(([k, x], i) => {
          if (isRecord(x) || Array.isArray(x)) writeValue(w, level + 1, titleCase(k), x);
          else w.line(level + 1, `${i === 0 ? '' : ''}${titleCase(k)}:\t${scalar(x)}`);
        });
      } else w.line(level + 1, scalar(item));
    }
  } else {
    w.line(level, `${key}:\t${scalar(v)}`);
  }
}

export function describeGeneric(w: DescribeWriter, obj: KubeObject & Record<string, unknown>): void {
  const meta = obj.metadata ?? {};
  w.kv(0, 'Name', meta.name);
  if (meta.namespace) w.kv(0, 'Namespace', meta.namespace);
  w.map(0, 'Labels', meta.labels);
  w.map(0, 'Annotations', visibleAnnotations(meta.annotations), ': ');
  w.kv(0, 'API Version', obj.apiVersion);
  w.kv(0, 'Kind', obj.kind);
  const {
    name: _n,
    namespace: _ns,
    labels: _l,
    annotations: _a,
    managedFields: _m,
    ...restMeta
  } = meta as Record<string, unknown>;
  writeValue(w, 0, 'Metadata', restMeta);
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'apiVersion' || k === 'kind' || k === 'metadata') continue;
    writeValue(w, 0, titleCase(k), v);
  }
}
