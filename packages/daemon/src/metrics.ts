import { collectDefaultMetrics, Registry } from 'prom-client';

export { Counter, Gauge, Histogram, Registry, Summary } from 'prom-client';

/** A fresh registry with Node's process metrics (memory, CPU, event loop lag). */
export function createRegistry(prefix = ''): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix });
  return registry;
}
