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

/**
 * A v1 HPA in its v2 form: targetCPUUtilizationPercentage as a CPU Resource metric,
 * currentCPUUtilizationPercentage as its current metric. (Kubernetes keeps v2's other
 * metrics in v1 annotations; a v1 client here sees only the CPU target.)
 */
export function hpaV1ToV2(o: Obj): Obj {
  const spec = isObj(o.spec) ? o.spec : {};
  const status = isObj(o.status) ? o.status : undefined;
  const { targetCPUUtilizationPercentage, ...restSpec } = spec;
  const out: Obj = { ...o, apiVersion: 'autoscaling/v2', spec: { ...restSpec } };
  const target =
    typeof targetCPUUtilizationPercentage === 'number' ? targetCPUUtilizationPercentage : undefined;
  (out.spec as Obj).metrics = [
    {
      type: 'Resource',
      resource: {
        name: 'cpu',
        target: { type: 'Utilization', averageUtilization: target ?? DEFAULT_CPU_UTILIZATION },
      },
    },
  ];
  if (status) {
    const { currentCPUUtilizationPercentage, ...restStatus } = status;
    out.status = {
      ...restStatus,
      ...(typeof currentCPUUtilizationPercentage === 'number'
        ? {
            currentMetrics: [
              {
                type: 'Resource',
                resource: { name: 'cpu', current: { averageUtilization: currentCPUUtilizationPercentage } },
              },
            ],
          }
        : {}),
    };
  }
  return out;
}

/** A stored (v2) HPA as autoscaling/v1 shows it: its CPU utilization target, if it has one. */
export function hpaV2ToV1(o: Obj): Obj {
  const spec = isObj(o.spec) ? o.spec : {};
  const { metrics, behavior: _behavior, ...restSpec } = spec;
  const cpu = (Array.isArray(metrics) ? metrics : [])
    .filter(isObj)
    .find((m) => m.type === 'Resource' && isObj(m.resource) && m.resource.name === 'cpu');
  const target = cpu && isObj(cpu.resource) && isObj(cpu.resource.target) ? cpu.resource.target : undefined;
  const out: Obj = { ...o, apiVersion: 'autoscaling/v1', spec: { ...restSpec } };
  if (target?.type === 'Utilization' && typeof target.averageUtilization === 'number')
    (out.spec as Obj).targetCPUUtilizationPercentage = target.averageUtilization;
  const status = isObj(o.status) ? o.status : undefined;
  if (status) {
    const { currentMetrics, conditions: _conditions, ...restStatus } = status;
    const current = (Array.isArray(currentMetrics) ? currentMetrics : [])
      .filter(isObj)
      .find((m) => m.type === 'Resource' && isObj(m.resource) && m.resource.name === 'cpu');
    const util =
      current && isObj(current.resource) && isObj(current.resource.current)
        ? current.resource.current.averageUtilization
        : undefined;
    out.status = {
      ...restStatus,
      ...(typeof util === 'number' ? { currentCPUUtilizationPercentage: util } : {}),
    };
  }
  return out;
}
