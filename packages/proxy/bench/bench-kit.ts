// What the proxy's benchmarks share: creating many objects a few at a time,
// reading one value from kubit-proxy's /metrics, and waiting for its first sync.
import { waitFor } from '@kubit/testkit';

/** Creates objects `concurrency` at a time. */
export async function createAll<T>(
  items: T[],
  concurrency: number,
  create: (t: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await create(items[next++]);
    }),
  );
}

/** One unlabelled sample from kubit-proxy's Prometheus text, or undefined. */
export async function metric(port: number, name: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : undefined;
}

/** Waits until kubit-proxy has written its rules once (its last-sync timestamp is set). */
export async function waitSynced(metricsPort: number, timeoutMs: number, check?: () => void): Promise<void> {
  await waitFor(
    'kubit-proxy to sync',
    async () => {
      check?.();
      return (
        ((await metric(metricsPort, 'kubeproxy_sync_proxy_rules_last_timestamp_seconds').catch(() => 0)) ??
          0) > 0
      );
    },
    timeoutMs,
    20,
  );
}
