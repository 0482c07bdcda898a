// Readiness probes the launcher polls: plain HTTP (store health, registry) and
// HTTPS with the admin certificate (apiserver /readyz, the node list). containerd
// needs no probe of its own: each kubelet waits for its runtime.
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface HttpResult {
  status: number;
  body: string;
}

export interface ClientTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

export function loadClientTls(caFile: string, certFile: string, keyFile: string): ClientTls {
  return { ca: readFileSync(caFile), cert: readFileSync(certFile), key: readFileSync(keyFile) };
}

/** One GET with a short timeout; HTTPS when `tls` is given. Never throws on a status code. */
export function get(url: string, tls?: ClientTls, timeoutMs = 2000): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = (tls ? httpsRequest : httpRequest)(
      url,
      { method: 'GET', ...(tls ? { ca: tls.ca, cert: tls.cert, key: tls.key } : {}), agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`GET ${url}: no answer in ${timeoutMs} ms`)));
    req.end();
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `check` every `intervalMs` until it returns true. `failed` is asked
 * first on every round: a process that died makes the wait fail at once with
 * its reason instead of running into the timeout.
 */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  opts: { timeoutMs: number; intervalMs?: number; failed?: () => string | undefined },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let last = '';
  for (;;) {
    const dead = opts.failed?.();
    if (dead) throw new Error(`while waiting for ${what}: ${dead}`);
    try {
      if (await check()) return;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${opts.timeoutMs / 1000} s waiting for ${what}${last ? ` (last error: ${last})` : ''}`,
      );
    }
    await sleep(opts.intervalMs ?? 100);
  }
}

export interface NodeView {
  name: string;
  ready: boolean;
  /** When the kubelet last posted the Ready condition (ms since the epoch). */
  readySince?: number;
  podCidr?: string;
}

/** The nodes as the apiserver sees them: name, Ready condition, spec.podCIDR. */
export async function listNodes(apiserverUrl: string, tls: ClientTls): Promise<NodeView[]> {
  const res = await get(`${apiserverUrl}/api/v1/nodes`, tls);
  if (res.status !== 200) throw new Error(`GET /api/v1/nodes: HTTP ${res.status} ${res.body.slice(0, 200)}`);
  return parseNodeList(JSON.parse(res.body) as unknown);
}

export function parseNodeList(list: unknown): NodeView[] {
  const items = (list as { items?: unknown[] })?.items ?? [];
  return items.map((raw) => {
    const n = raw as {
      metadata?: { name?: string };
      spec?: { podCIDR?: string; podCIDRs?: string[] };
      status?: { conditions?: { type?: string; status?: string; lastHeartbeatTime?: string }[] };
    };
    const readyCond = (n.status?.conditions ?? []).find((c) => c.type === 'Ready');
    const ready = readyCond?.status === 'True';
    const heartbeat = readyCond?.lastHeartbeatTime ? Date.parse(readyCond.lastHeartbeatTime) : Number.NaN;
    const podCidr = n.spec?.podCIDR ?? n.spec?.podCIDRs?.[0];
    return {
      name: n.metadata?.name ?? '',
      ready,
      ...(Number.isNaN(heartbeat) ? {} : { readySince: heartbeat }),
      ...(podCidr ? { podCidr } : {}),
    };
  });
}
