// autoscaling's shared model: the HorizontalPodAutoscaler defaults (Kubernetes'
// SetDefaults for autoscaling/v2 and v1), the default scaling rules the controller uses
// when an HPA has no `behavior`, and the conversions between v1 and v2 (the two versions
// share one stored form, v2's).
import type {
  HorizontalPodAutoscaler,
  HPAScalingPolicy,
  HPAScalingRules,
  MetricSpec,
} from 'kubernetes-types/autoscaling/v2.js';

export type { HorizontalPodAutoscaler, HPAScalingRules, MetricSpec };

/** The CPU target an HPA without metrics gets (v2) or a v1 HPA without targetCPUUtilizationPercentage means. */
export const DEFAULT_CPU_UTILIZATION = 80;
/** --horizontal-pod-autoscaler-downscale-stabilization's default. */
export const DEFAULT_SCALE_DOWN_STABILIZATION_SECONDS = 300;
/** The ratio of usage to target within which an HPA does not scale (--horizontal-pod-autoscaler-tolerance). */
export const DEFAULT_TOLERANCE = 0.1;

/** Kubernetes' GenerateHPAScaleUpRules: double or add 4 pods every 15 s, whichever is more; no window. */
export function defaultScaleUpRules(given?: HPAScalingRules): HPAScalingRules {
  const policies: HPAScalingPolicy[] = given?.policies ?? [
    { type: 'Pods', value: 4, periodSeconds: 15 },
    { type: 'Percent', value: 100, periodSeconds: 15 },
  ];
  return {
    stabilizationWindowSeconds: given?.stabilizationWindowSeconds ?? 0,
    selectPolicy: given?.selectPolicy ?? 'Max',
    policies,
  };
}

/** Kubernetes' GenerateHPAScaleDownRules: down to the target at once, after a 300 s window. */
export function defaultScaleDownRules(given?: HPAScalingRules, windowSeconds?: number): HPAScalingRules {
  return {
    stabilizationWindowSeconds:
      given?.stabilizationWindowSeconds ?? windowSeconds ?? DEFAULT_SCALE_DOWN_STABILIZATION_SECONDS,
    selectPolicy: given?.selectPolicy ?? 'Max',
    policies: given?.policies ?? [{ type: 'Percent', value: 100, periodSeconds: 15 }],
  };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** autoscaling/v2's defaults: minReplicas 1, CPU at 80% without metrics, the behavior's rules filled in. */
export function defaultHorizontalPodAutoscaler(o: Obj): void {
  const spec = isObj(o.spec) ? o.spec : undefined;
  if (!spec) return;
  if (spec.minReplicas === undefined) spec.minReplicas = 1;
  if (spec.metrics === undefined || (Array.isArray(spec.metrics) && spec.metrics.length === 0)) {
    spec.metrics = [
      {
        type: 'Resource',
        resource: {
          name: 'cpu',
          target: { type: 'Utilization', averageUtilization: DEFAULT_CPU_UTILIZATION },
        },
      },
    ];
  }
  if (isObj(spec.behavior)) {
    const b = spec.behavior;
    b.scaleUp = defaultScaleUpRules(isObj(b.scaleUp) ? (b.scaleUp as HPAScalingRules) : undefined);
    b.scaleDown = defaultScaleDownRules(isObj(b.scaleDown) ? (b.scaleDown as HPAScalingRules) : undefined);
  }
}

/** autoscaling/v1's defaults: minReplicas 1 (no CPU target means 80% to the controller). */
export function defaultHorizontalPodAutoscalerV1(o: Obj): void {
  const spec = isObj(o.spec) ? o.spec : undefined;
  if (spec && spec.minReplicas === undefined) spec.minReplicas = 1;
}

// What autoscaling/v1 cannot say is kept in annotations of its v1 form, under
// Kubernetes' names, so a v1 client's read-modify-write keeps a v2 HPA's other metrics,
// behavior and conditions.
const METRICS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/metrics';
const CURRENT_METRICS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/current-metrics';
const BEHAVIOR_ANNOTATION = 'autoscaling.alpha.kubernetes.io/behavior';
const CONDITIONS_ANNOTATION = 'autoscaling.alpha.kubernetes.io/conditions';
const V1_ANNOTATIONS = [
  METRICS_ANNOTATION,
  CURRENT_METRICS_ANNOTATION,
  BEHAVIOR_ANNOTATION,
  CONDITIONS_ANNOTATION,
];

const o = (v: unknown): Obj => (isObj(v) ? v : {});
const defined = (x: Obj): Obj => Object.fromEntries(Object.entries(x).filter(([, v]) => v !== undefined));
const isCpuUtilization = (m: Obj) =>
  m.type === 'Resource' && o(m.resource).name === 'cpu' && o(o(m.resource).target).type === 'Utilization';

/** A v2 target as v1's `target*` fields. */
function v1Target(t: Obj, prefix: 'target' | 'current'): Obj {
  return defined({
    [`${prefix}AverageUtilization`]: t.averageUtilization,
    [`${prefix}AverageValue`]: t.averageValue,
  });
}

function v2Target(src: Obj, prefix: 'target' | 'current'): Obj {
  const util = src[`${prefix}AverageUtilization`];
  const avg = src[`${prefix}AverageValue`];
  if (prefix === 'current') return defined({ averageUtilization: util, averageValue: avg });
  return util !== undefined
    ? { type: 'Utilization', averageUtilization: util }
    : defined({ type: 'AverageValue', averageValue: avg });
}

function metricToV1(m: Obj): Obj {
  const t = o(
    o(
      m[
        {
          Resource: 'resource',
          ContainerResource: 'containerResource',
          Pods: 'pods',
          Object: 'object',
          External: 'external',
        }[String(m.type)] ?? ''
      ],
    ).target,
  );
  switch (m.type) {
    case 'Resource':
      return { type: 'Resource', resource: { name: o(m.resource).name, ...v1Target(t, 'target') } };
    case 'ContainerResource': {
      const c = o(m.containerResource);
      return {
        type: 'ContainerResource',
        containerResource: { name: c.name, container: c.container, ...v1Target(t, 'target') },
      };
    }
    case 'Pods': {
      const p = o(m.pods);
      return {
        type: 'Pods',
        pods: defined({
          metricName: o(p.metric).name,
          selector: o(p.metric).selector,
          targetAverageValue: t.averageValue,
        }),
      };
    }
    case 'Object': {
      const x = o(m.object);
      return {
        type: 'Object',
        object: defined({
          target: x.describedObject,
          metricName: o(x.metric).name,
          selector: o(x.metric).selector,
          targetValue: t.value,
          averageValue: t.averageValue,
        }),
      };
    }
    case 'External': {
      const x = o(m.external);
      return {
        type: 'External',
        external: defined({
          metricName: o(x.metric).name,
          metricSelector: o(x.metric).selector,
          targetValue: t.value,
          targetAverageValue: t.averageValue,
        }),
      };
    }
    default:
      return m;
  }
}

function metricToV2(m: Obj): Obj {
  const metric = (name: unknown, selector: unknown) => defined({ name, selector });
  const valueTarget = (value: unknown, average: unknown) =>
    value !== undefined ? { type: 'Value', value } : { type: 'AverageValue', averageValue: average };
  switch (m.type) {
    case 'Resource':
      return {
        type: 'Resource',
        resource: { name: o(m.resource).name, target: v2Target(o(m.resource), 'target') },
      };
    case 'ContainerResource': {
      const c = o(m.containerResource);
      return {
        type: 'ContainerResource',
        containerResource: { name: c.name, container: c.container, target: v2Target(c, 'target') },
      };
    }
    case 'Pods': {
      const p = o(m.pods);
      return {
        type: 'Pods',
        pods: {
          metric: metric(p.metricName, p.selector),
          target: { type: 'AverageValue', averageValue: p.targetAverageValue },
        },
      };
    }
    case 'Object': {
      const x = o(m.object);
      return {
        type: 'Object',
        object: defined({
          describedObject: x.target,
          metric: metric(x.metricName, x.selector),
          target: valueTarget(x.targetValue, x.averageValue),
        }),
      };
    }
    case 'External': {
      const x = o(m.external);
      return {
        type: 'External',
        external: {
          metric: metric(x.metricName, x.metricSelector),
          target: valueTarget(x.targetValue, x.targetAverageValue),
        },
      };
    }
    default:
      return m;
  }
}

function statusToV1(m: Obj): Obj {
  if (m.type === 'Resource')
    return {
      type: 'Resource',
      resource: { name: o(m.resource).name, ...v1Target(o(o(m.resource).current), 'current') },
    };
  if (m.type === 'ContainerResource') {
    const c = o(m.containerResource);
    return {
      type: 'ContainerResource',
      containerResource: { name: c.name, container: c.container, ...v1Target(o(c.current), 'current') },
    };
  }
  return m;
}

function statusToV2(m: Obj): Obj {
  if (m.type === 'Resource')
    return {
      type: 'Resource',
      resource: { name: o(m.resource).name, current: v2Target(o(m.resource), 'current') },
    };
  if (m.type === 'ContainerResource') {
    const c = o(m.containerResource);
    return {
      type: 'ContainerResource',
      containerResource: { name: c.name, container: c.container, current: v2Target(c, 'current') },
    };
  }
  return m;
}

function parseAnnotation(annotations: Obj, key: string): unknown {
  const text = annotations[key];
  if (typeof text !== 'string') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    // A hand-edited annotation that is not JSON carries nothing we can keep.
    return undefined;
  }
}

/**
 * A v1 HPA in its v2 form: targetCPUUtilizationPercentage as a CPU Resource metric, the
 * other metrics, behavior and conditions from the v1 annotations (which it drops).
 */
export function hpaV1ToV2(obj: Obj): Obj {
  const spec = o(obj.spec);
  const meta = o(obj.metadata);
  const annotations = o(meta.annotations);
  const { targetCPUUtilizationPercentage, ...restSpec } = spec;
  const others = parseAnnotation(annotations, METRICS_ANNOTATION);
  const behavior = parseAnnotation(annotations, BEHAVIOR_ANNOTATION);
  const kept = Object.fromEntries(Object.entries(annotations).filter(([k]) => !V1_ANNOTATIONS.includes(k)));
  const metrics: Obj[] = [];
  if (typeof targetCPUUtilizationPercentage === 'number')
    metrics.push({
      type: 'Resource',
      resource: {
        name: 'cpu',
        target: { type: 'Utilization', averageUtilization: targetCPUUtilizationPercentage },
      },
    });
  if (Array.isArray(others)) metrics.push(...others.filter(isObj).map(metricToV2));
  // v1 without a target means 80% of the CPU requests.
  if (metrics.length === 0)
    metrics.push({
      type: 'Resource',
      resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: DEFAULT_CPU_UTILIZATION } },
    });
  const out: Obj = {
    ...obj,
    apiVersion: 'autoscaling/v2',
    metadata: defined({ ...meta, annotations: Object.keys(kept).length ? kept : undefined }),
    spec: { ...restSpec, metrics, ...(isObj(behavior) ? { behavior } : {}) },
  };
  const status = isObj(obj.status) ? obj.status : undefined;
  if (status) {
    const { currentCPUUtilizationPercentage, ...restStatus } = status;
    const current: Obj[] = [];
    if (typeof currentCPUUtilizationPercentage === 'number')
      current.push({
        type: 'Resource',
        resource: { name: 'cpu', current: { averageUtilization: currentCPUUtilizationPercentage } },
      });
    const otherCurrent = parseAnnotation(annotations, CURRENT_METRICS_ANNOTATION);
    if (Array.isArray(otherCurrent)) current.push(...otherCurrent.filter(isObj).map(statusToV2));
    const conditions = parseAnnotation(annotations, CONDITIONS_ANNOTATION);
    out.status = {
      ...restStatus,
      ...(current.length ? { currentMetrics: current } : {}),
      ...(Array.isArray(conditions) ? { conditions } : {}),
    };
  }
  return out;
}

/** A stored (v2) HPA as autoscaling/v1 shows it: its CPU utilization target, the rest in annotations. */
export function hpaV2ToV1(obj: Obj): Obj {
  const spec = o(obj.spec);
  const meta = o(obj.metadata);
  const { metrics, behavior, ...restSpec } = spec;
  const all = (Array.isArray(metrics) ? metrics : []).filter(isObj);
  const cpu = all.find(isCpuUtilization);
  const others = all.filter((m) => m !== cpu);
  const annotations: Obj = { ...o(meta.annotations) };
  if (others.length) annotations[METRICS_ANNOTATION] = JSON.stringify(others.map(metricToV1));
  if (isObj(behavior)) annotations[BEHAVIOR_ANNOTATION] = JSON.stringify(behavior);
  const out: Obj = { ...obj, apiVersion: 'autoscaling/v1', spec: { ...restSpec } };
  if (cpu) (out.spec as Obj).targetCPUUtilizationPercentage = o(o(cpu.resource).target).averageUtilization;
  const status = isObj(obj.status) ? obj.status : undefined;
  if (status) {
    const { currentMetrics, conditions, ...restStatus } = status;
    const current = (Array.isArray(currentMetrics) ? currentMetrics : []).filter(isObj);
    const cpuNow = current.find((m) => m.type === 'Resource' && o(m.resource).name === 'cpu');
    const util = o(o(cpuNow?.resource).current).averageUtilization;
    const otherCurrent = current.filter((m) => m !== cpuNow);
    if (otherCurrent.length)
      annotations[CURRENT_METRICS_ANNOTATION] = JSON.stringify(otherCurrent.map(statusToV1));
    if (Array.isArray(conditions) && conditions.length)
      annotations[CONDITIONS_ANNOTATION] = JSON.stringify(conditions);
    out.status = {
      ...restStatus,
      ...(typeof util === 'number' ? { currentCPUUtilizationPercentage: util } : {}),
    };
  }
  out.metadata = defined({ ...meta, annotations: Object.keys(annotations).length ? annotations : undefined });
  return out;
}
