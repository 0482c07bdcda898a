// autoscaling/v2 and autoscaling/v1 HorizontalPodAutoscalers: one stored form (v2's; v1
// reads and writes it through @kubit/api's conversions, which keep only its CPU target),
// status apart from spec, and the columns of `kubectl get hpa`. Defaulting and validation
// come from @kubit/api; the controller is packages/controllers/src/hpa.
import {
  defaultHorizontalPodAutoscaler,
  defaultHorizontalPodAutoscalerV1,
  hpaV1ToV2,
  hpaV2ToV1,
} from '@kubit/api';
import { objectMeta, S, type Schema } from '../model/schema.js';
import type { KObject } from '../storage.js';
import { statusSubresource } from '../subresources/status.js';
import { age } from '../table.js';
import { arr, type Column, type KindDef, obj, str } from './types.js';

const typeMeta = { apiVersion: S.str, kind: S.str, metadata: objectMeta };
const crossVersionObjectReference = S.obj({ apiVersion: S.str, kind: S.str, name: S.str });
const metricTarget = S.obj({
  type: S.str,
  value: S.quantity,
  averageValue: S.quantity,
  averageUtilization: S.int,
});
const metricValueStatus = S.obj({ value: S.quantity, averageValue: S.quantity, averageUtilization: S.int });
const labelSelector = S.obj({
  matchLabels: S.map(S.str),
  matchExpressions: S.list(S.obj({ key: S.str, operator: S.str, values: S.list(S.str) })),
});
const metricIdentifier = S.obj({ name: S.str, selector: labelSelector });
const scalingRules = S.obj({
  stabilizationWindowSeconds: S.int,
  selectPolicy: S.str,
  policies: S.list(S.obj({ type: S.str, value: S.int, periodSeconds: S.int })),
  tolerance: S.quantity,
});
const conditions = S.list(
  S.obj({ type: S.str, status: S.str, lastTransitionTime: S.str, reason: S.str, message: S.str }),
);

const hpaV2Schema: Schema = S.obj({
  ...typeMeta,
  spec: S.obj({
    scaleTargetRef: crossVersionObjectReference,
    minReplicas: S.int,
    maxReplicas: S.int,
    metrics: S.list(
      S.obj({
        type: S.str,
        object: S.obj({
          describedObject: crossVersionObjectReference,
          target: metricTarget,
          metric: metricIdentifier,
        }),
        pods: S.obj({ metric: metricIdentifier, target: metricTarget }),
        resource: S.obj({ name: S.str, target: metricTarget }),
        containerResource: S.obj({ name: S.str, target: metricTarget, container: S.str }),
        external: S.obj({ metric: metricIdentifier, target: metricTarget }),
      }),
    ),
    behavior: S.obj({ scaleUp: scalingRules, scaleDown: scalingRules }),
  }),
  status: S.obj({
    observedGeneration: S.int,
    lastScaleTime: S.str,
    currentReplicas: S.int,
    desiredReplicas: S.int,
    currentMetrics: S.list(
      S.obj({
        type: S.str,
        object: S.obj({
          metric: metricIdentifier,
          current: metricValueStatus,
          describedObject: crossVersionObjectReference,
        }),
        pods: S.obj({ metric: metricIdentifier, current: metricValueStatus }),
        resource: S.obj({ name: S.str, current: metricValueStatus }),
        containerResource: S.obj({ name: S.str, current: metricValueStatus, container: S.str }),
        external: S.obj({ metric: metricIdentifier, current: metricValueStatus }),
      }),
    ),
    conditions,
  }),
});

const hpaV1Schema: Schema = S.obj({
  ...typeMeta,
  spec: S.obj({
    scaleTargetRef: crossVersionObjectReference,
    minReplicas: S.int,
    maxReplicas: S.int,
    targetCPUUtilizationPercentage: S.int,
  }),
  status: S.obj({
    observedGeneration: S.int,
    lastScaleTime: S.str,
    currentReplicas: S.int,
    desiredReplicas: S.int,
    currentCPUUtilizationPercentage: S.int,
  }),
});

const COLUMNS: Column[] = [
  { name: 'Reference', type: 'string', description: 'The scale target: kind/name.', priority: 0 },
  { name: 'Targets', type: 'string', description: 'Each metric: current/target.', priority: 0 },
  { name: 'MinPods', type: 'string', description: 'The lower limit of replicas.', priority: 0 },
  { name: 'MaxPods', type: 'integer', description: 'The upper limit of replicas.', priority: 0 },
  { name: 'Replicas', type: 'integer', description: 'Current number of replicas.', priority: 0 },
  { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 },
];

const utilization = (v: unknown): string | undefined => (typeof v === 'number' ? `${v}%` : undefined);
const quantityText = (v: unknown): string | undefined =>
  typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;

/** kubectl's TARGETS: each metric's current/target, the first two, then "+ N more...". */
export function hpaTargetsText(hpa: KObject): string {
  const specs = arr(obj(hpa.spec).metrics).map(obj);
  if (specs.length === 0) return '<none>';
  const statuses = arr(obj(hpa.status).currentMetrics).map(obj);
  const list = specs.map((spec, i) => {
    const type = str(spec.type);
    const field = {
      Resource: 'resource',
      ContainerResource: 'containerResource',
      Pods: 'pods',
      Object: 'object',
      External: 'external',
    }[type];
    if (!field) return '<unknown type>';
    const src = obj(spec[field]);
    const target = obj(src.target);
    const current = obj(obj(statuses[i]?.[field]).current);
    if (type === 'Resource' || type === 'ContainerResource') {
      const name = str(src.name);
      if (target.averageValue !== undefined)
        return `${name}: ${quantityText(current.averageValue) ?? '<unknown>'}/${quantityText(target.averageValue)}`;
      return `${name}: ${utilization(current.averageUtilization) ?? '<unknown>'}/${utilization(target.averageUtilization) ?? '<auto>'}`;
    }
    if (type === 'Pods')
      return `${quantityText(current.averageValue) ?? '<unknown>'}/${quantityText(target.averageValue)}`;
    if (target.averageValue !== undefined)
      return `${quantityText(current.averageValue) ?? '<unknown>'}/${quantityText(target.averageValue)} (avg)`;
    return `${quantityText(current.value) ?? '<unknown>'}/${quantityText(target.value)}`;
  });
  return list.length > 2 ? `${list.slice(0, 2).join(', ')} + ${list.length - 2} more...` : list.join(', ');
}

function cells(hpa: KObject, now: number): unknown[] {
  const spec = obj(hpa.spec);
  const ref = obj(spec.scaleTargetRef);
  const status = obj(hpa.status);
  return [
    `${str(ref.kind)}/${str(ref.name)}`,
    hpaTargetsText(hpa),
    typeof spec.minReplicas === 'number' ? String(spec.minReplicas) : '<unset>',
    typeof spec.maxReplicas === 'number' ? spec.maxReplicas : 0,
    typeof status.currentReplicas === 'number' ? status.currentReplicas : 0,
    age(hpa, now),
  ];
}

const hpaKind = {
  group: 'autoscaling',
  kind: 'HorizontalPodAutoscaler',
  resource: 'horizontalpodautoscalers',
  singular: 'horizontalpodautoscaler',
  shortNames: ['hpa'],
  categories: ['all'],
  namespaced: true,
  nameRule: 'subdomain' as const,
  subresources: [statusSubresource],
  generation: true,
  prepareForCreate(o: KObject) {
    o.status = {};
  },
  prepareForUpdate(o: KObject, old: KObject) {
    o.status = old.status;
  },
  prepareForStatusUpdate(o: KObject, old: KObject) {
    o.spec = old.spec;
  },
};

const example = {
  spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, maxReplicas: 3 },
};

export const horizontalpodautoscalers: KindDef = {
  ...hpaKind,
  version: 'v2',
  schema: hpaV2Schema,
  example,
  defaults: (o) => defaultHorizontalPodAutoscaler(o as Record<string, unknown>),
  table: { columns: COLUMNS, cells },
};

/** autoscaling/v1: the same objects, their CPU target as targetCPUUtilizationPercentage. */
export const horizontalpodautoscalersV1: KindDef = {
  ...hpaKind,
  version: 'v1',
  schema: hpaV1Schema,
  storageResource: 'horizontalpodautoscalers',
  example: { spec: { ...example.spec, targetCPUUtilizationPercentage: 50 } },
  defaults: (o) => defaultHorizontalPodAutoscalerV1(o as Record<string, unknown>),
  table: { columns: COLUMNS, cells: (o, now) => cells(hpaV1ToV2(o) as KObject, now) },
  toStorage: (o) => hpaV1ToV2(o) as KObject,
  fromStorage: (o) => hpaV2ToV1(o) as KObject,
};
