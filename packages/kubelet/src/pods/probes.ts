// Startup, liveness and readiness probes of one running container instance:
// exec (through the runtime's ExecSync), httpGet and tcpSocket, with Kubernetes'
// delays, periods, timeouts and thresholds.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { ContainerRuntime } from '@kubit/cri';
import type { Container, Probe } from 'kubernetes-types/core/v1.js';

export type ProbeKind = 'Startup' | 'Liveness' | 'Readiness';

export interface ProbeOutcome {
  ok: boolean;
  message: string;
}

function resolvePort(container: Container, port: number | string): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = container.ports?.find((p) => p.name === port);
  if (!named) throw new Error(`port "${port}" is not a named port of container ${container.name}`);
  return named.containerPort;
}

function httpProbe(
  probe: Probe,
  container: Container,
  podIP: string,
  timeoutMs: number,
): Promise<ProbeOutcome> {
  const get = probe.httpGet;
  if (!get) return Promise.resolve({ ok: false, message: 'no httpGet' });
  const port = resolvePort(container, get.port);
  const host = get.host || podIP;
  const secure = get.scheme === 'HTTPS';
  const headers: Record<string, string> = { 'User-Agent': 'kube-probe/1.32', Accept: '*/*' };
  for (const h of get.httpHeaders ?? []) headers[h.name] = h.value;
  return new Promise((resolve) => {
    const req = (secure ? httpsRequest : httpRequest)(
      {
        host,
        port,
        path: get.path || '/',
        method: 'GET',
        headers,
        timeout: timeoutMs,
        rejectUnauthorized: false,
      },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve(
          code >= 200 && code < 400
            ? { ok: true, message: '' }
            : { ok: false, message: `HTTP probe failed with statuscode: ${code}` },
        );
      },
    );
    req.on('timeout', () => {
      req.destroy();
      resolve({
        ok: false,
        message: `Get "http://${host}:${port}${get.path ?? '/'}": context deadline exceeded`,
      });
    });
    req.on('error', (err) =>
      resolve({ ok: false, message: `Get "http://${host}:${port}${get.path ?? '/'}": ${err.message}` }),
    );
    req.end();
  });
}

function tcpProbe(
  probe: Probe,
  container: Container,
  podIP: string,
  timeoutMs: number,
): Promise<ProbeOutcome> {
  const tcp = probe.tcpSocket;
  if (!tcp) return Promise.resolve({ ok: false, message: 'no tcpSocket' });
  const port = resolvePort(container, tcp.port);
  const host = tcp.host || podIP;
  return new Promise((resolve) => {
    const sock = connect({ host, port, timeout: timeoutMs }, () => {
      sock.destroy();
      resolve({ ok: true, message: '' });
    });
    sock.on('timeout', () => {
      sock.destroy();
      resolve({ ok: false, message: `dial tcp ${host}:${port}: i/o timeout` });
    });
    sock.on('error', (err) => resolve({ ok: false, message: `dial tcp ${host}:${port}: ${err.message}` }));
  });
}

/** Runs one probe once. */
export async function runProbe(
  probe: Probe,
  container: Container,
  containerId: string,
  podIP: string,
  runtime: ContainerRuntime,
): Promise<ProbeOutcome> {
  const timeoutSeconds = probe.timeoutSeconds ?? 1;
  try {
    if (probe.exec) {
      const r = await runtime.execSync(containerId, probe.exec.command ?? [], timeoutSeconds);
      if (r.exitCode === 0) return { ok: true, message: '' };
      const out = `${r.stdout.toString()}${r.stderr.toString()}`.trim();
      return { ok: false, message: out || `command exited with ${r.exitCode}` };
    }
    if (probe.httpGet) return await httpProbe(probe, container, podIP, timeoutSeconds * 1000);
    if (probe.tcpSocket) return await tcpProbe(probe, container, podIP, timeoutSeconds * 1000);
    return { ok: false, message: 'probe has no handler (Kubit supports exec, httpGet, tcpSocket)' };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

export interface ProbeCallbacks {
  /** A probe's result changed (readiness or startup), so the pod's status may have. */
  changed(): void;
  /** A probe failed once (for the Unhealthy event). */
  failed(kind: ProbeKind, message: string): void;
}

/** The probes of one container instance, run until stop(). */
export class ContainerProbes {
  /** True once the startup probe succeeded (or when there is none). */
  started: boolean;
  /** Readiness: false until the readiness probe succeeds (true when there is none). */
  ready: boolean;
  /** Set when liveness (or startup) failed failureThreshold times in a row: the container must restart. */
  unhealthy: ProbeKind | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly container: Container,
    private readonly containerId: string,
    private readonly podIP: string,
    private readonly runtime: ContainerRuntime,
    private readonly callbacks: ProbeCallbacks,
    /** ms since the container started, to honor initialDelaySeconds after an adoption. */
    runningForMs = 0,
  ) {
    this.started = !container.startupProbe;
    this.ready = !container.readinessProbe && this.started;
    if (container.startupProbe) this.loop('Startup', container.startupProbe, runningForMs);
    else this.startAfterStartup(runningForMs);
  }

  private startAfterStartup(runningForMs: number): void {
    if (this.container.livenessProbe) this.loop('Liveness', this.container.livenessProbe, runningForMs);
    if (this.container.readinessProbe) this.loop('Readiness', this.container.readinessProbe, runningForMs);
  }

  private loop(kind: ProbeKind, probe: Probe, runningForMs: number): void {
    const period = Math.max(1, probe.periodSeconds ?? 10) * 1000;
    const successThreshold = Math.max(1, probe.successThreshold ?? 1);
    const failureThreshold = Math.max(1, probe.failureThreshold ?? 3);
    let successes = 0;
    let failures = 0;
    const tick = async () => {
      if (this.stopped) return;
      const r = await runProbe(probe, this.container, this.containerId, this.podIP, this.runtime);
      if (this.stopped) return;
      if (r.ok) {
        successes++;
        failures = 0;
      } else {
        failures++;
        successes = 0;
        this.callbacks.failed(kind, r.message);
      }
      if (kind === 'Readiness') {
        const ready = r.ok
          ? successes >= successThreshold || this.ready
          : failures < failureThreshold && this.ready;
        if (ready !== this.ready) {
          this.ready = ready;
          this.callbacks.changed();
        }
      } else if (kind === 'Startup') {
        if (r.ok) {
          this.started = true;
          if (!this.container.readinessProbe) this.ready = true;
          this.callbacks.changed();
          this.startAfterStartup(0);
          return; // the startup probe stops once it succeeded
        }
        if (failures >= failureThreshold) {
          this.unhealthy = 'Startup';
          this.callbacks.changed();
          return;
        }
      } else if (!r.ok && failures >= failureThreshold) {
        this.unhealthy = 'Liveness';
        this.callbacks.changed();
        return;
      }
      this.schedule(tick, period);
    };
    const delay = Math.max(0, (probe.initialDelaySeconds ?? 0) * 1000 - runningForMs);
    this.schedule(tick, delay);
  }

  private schedule(fn: () => Promise<void>, ms: number): void {
    if (this.stopped) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      void fn();
    }, ms);
    t.unref();
    this.timers.add(t);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
