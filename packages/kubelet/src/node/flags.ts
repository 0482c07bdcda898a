// Parsers for the node flags kubit-kubelet and kubit-hollow share.
import { StartupError } from '@kubit/daemon';
import type { Taint } from 'kubernetes-types/core/v1.js';

/** key=value,... as kubelet's --node-labels. */
export function parseNodeLabels(list: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of list) {
    const i = item.indexOf('=');
    if (i <= 0) throw new StartupError(`--node-labels: "${item}" is not key=value`);
    out[item.slice(0, i)] = item.slice(i + 1);
  }
  return out;
}

/** key=value:Effect or key:Effect, as kubelet's --register-with-taints. */
export function parseTaints(list: string[]): Taint[] {
  return list.map((item) => {
    const m = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(item);
    if (!m) throw new StartupError(`--register-with-taints: "${item}" is not key[=value]:Effect`);
    return { key: m[1], ...(m[2] !== undefined ? { value: m[2] } : {}), effect: m[3] };
  });
}
