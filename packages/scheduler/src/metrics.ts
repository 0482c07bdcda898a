// The scheduler's Prometheus metrics, named as kube-scheduler names them.
import { Counter, Gauge, Histogram, type Registry } from '@kubit/daemon';
import type { QueueSizes } from './queue.js';

export interface SchedulerMetrics {
  attempt(result: 'scheduled' | 'unschedulable' | 'error', profile: string, seconds: number): void;
  podScheduled(e2eSeconds: number, attempts: number): void;
  bindingDone(seconds: number, ok: boolean): void;
  /** A preemption that chose victims, with how many. */
  preempted(victims: number): void;
  /** PostFilter ran for a pod that fits nowhere (whatever it found). */
  preemptionAttempt(): void;
}

export function createSchedulerMetrics(registry: Registry, queueSizes: () => QueueSizes): SchedulerMetrics {
  const attempts = new Counter({
    name: 'scheduler_schedule_attempts_total',
    help: 'Number of attempts to schedule pods, by the result. "unschedulable" means a pod could not be scheduled, while "error" means an internal scheduler problem.',
    labelNames: ['result', 'profile'],
    registers: [registry],
  });
  const attemptDuration = new Histogram({
    name: 'scheduler_scheduling_attempt_duration_seconds',
    help: 'Scheduling attempt latency in seconds (scheduling algorithm + binding start)',
    labelNames: ['result', 'profile'],
    buckets: [0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1],
    registers: [registry],
  });
  const e2e = new Histogram({
    name: 'scheduler_pod_scheduling_sli_duration_seconds',
    help: 'E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might involve multiple scheduling attempts.',
    labelNames: ['attempts'],
    buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60],
    registers: [registry],
  });
  const binding = new Histogram({
    name: 'scheduler_binding_duration_seconds',
    help: 'Binding latency in seconds',
    labelNames: ['result'],
    buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 5],
    registers: [registry],
  });
  const preemptionAttempts = new Counter({
    name: 'scheduler_preemption_attempts_total',
    help: 'Total preemption attempts in the cluster till now',
    registers: [registry],
  });
  const preemptionVictims = new Histogram({
    name: 'scheduler_preemption_victims',
    help: 'Number of selected preemption victims',
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers: [registry],
  });
  new Gauge({
    name: 'scheduler_pending_pods',
    help: 'Number of pending pods, by the queue type. "active" means number of pods in activeQ; "backoff" means number of pods in backoffQ; "unschedulable" means number of pods in unschedulablePods.',
    labelNames: ['queue'],
    registers: [registry],
    collect() {
      const s = queueSizes();
      this.set({ queue: 'active' }, s.active);
      this.set({ queue: 'backoff' }, s.backoff);
      this.set({ queue: 'unschedulable' }, s.unschedulable);
    },
  });
  // prom-client hashes the label object on every observe; each pod observes three
  // histograms, so the labelled children are looked up once and kept.
  const attemptChildren = new Map<string, { inc(): void; observe(v: number): void }>();
  const attemptChild = (result: string, profile: string) => {
    const key = `${result}\0${profile}`;
    let c = attemptChildren.get(key);
    if (!c) {
      const counter = attempts.labels({ result, profile });
      const histogram = attemptDuration.labels({ result, profile });
      c = { inc: () => counter.inc(), observe: (v) => histogram.observe(v) };
      attemptChildren.set(key, c);
    }
    return c;
  };
  const e2eByAttempts: ReturnType<typeof e2e.labels>[] = [];
  const bindingOk = binding.labels({ result: 'success' });
  const bindingError = binding.labels({ result: 'error' });
  return {
    attempt(result, profile, seconds) {
      const c = attemptChild(result, profile);
      c.inc();
      c.observe(seconds);
    },
    podScheduled(e2eSeconds, n) {
      const i = Math.min(n, 16);
      e2eByAttempts[i] ??= e2e.labels({ attempts: n >= 16 ? '16+' : String(n) });
      e2eByAttempts[i].observe(e2eSeconds);
    },
    bindingDone(seconds, ok) {
      (ok ? bindingOk : bindingError).observe(seconds);
    },
    preempted(victims) {
      preemptionVictims.observe(victims);
    },
    preemptionAttempt() {
      preemptionAttempts.inc();
    },
  };
}

export const noMetrics: SchedulerMetrics = {
  attempt() {},
  podScheduled() {},
  bindingDone() {},
  preempted() {},
  preemptionAttempt() {},
};
