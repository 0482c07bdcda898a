// The environment variables Kubernetes gives every container for the Services it
// can see (pkg/kubelet/envvars): <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT, one
// <NAME>_SERVICE_PORT_<PORT> per named port, and the Docker-link style
// <NAME>_PORT_<port>_<PROTO>_* variables. The `kubernetes` Service of `default`
// is always there; the pod's own namespace's Services unless enableServiceLinks is false.
import type { Pod, Service } from 'kubernetes-types/core/v1.js';

/** Where Services come from (the daemon: an informer's store). */
export interface ServiceSource {
  /** The Services of one namespace, as last seen. */
  list(namespace: string): Service[];
}

export const MASTER_SERVICE_NAMESPACE = 'default';

const envName = (s: string): string => s.toUpperCase().replace(/-/g, '_');

function hasClusterIP(svc: Service): boolean {
  const ip = svc.spec?.clusterIP;
  return !!ip && ip !== 'None';
}

/** The Services a pod's environment names, by name: its namespace's win over `default`'s `kubernetes`. */
export function visibleServices(pod: Pod, source: ServiceSource): Service[] {
  const ns = pod.metadata?.namespace ?? 'default';
  const byName = new Map<string, Service>();
  for (const svc of source.list(MASTER_SERVICE_NAMESPACE)) {
    if (svc.metadata?.name === 'kubernetes' && hasClusterIP(svc)) byName.set('kubernetes', svc);
  }
  if (pod.spec?.enableServiceLinks !== false) {
    for (const svc of source.list(ns)) if (hasClusterIP(svc)) byName.set(svc.metadata?.name ?? '', svc);
  }
  return [...byName.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, s]) => s);
}

/** The variables of the given Services, in Kubernetes' order. */
export function serviceEnv(services: Service[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const svc of services) {
    const name = envName(svc.metadata?.name ?? '');
    const ip = svc.spec?.clusterIP ?? '';
    const ports = svc.spec?.ports ?? [];
    if (ports.length === 0) continue;
    out.set(`${name}_SERVICE_HOST`, ip);
    out.set(`${name}_SERVICE_PORT`, String(ports[0].port));
    for (const p of ports) if (p.name) out.set(`${name}_SERVICE_PORT_${envName(p.name)}`, String(p.port));
    ports.forEach((p, i) => {
      const proto = (p.protocol ?? 'TCP').toLowerCase();
      const url = `${proto}://${ip}:${p.port}`;
      const prefix = `${name}_PORT_${p.port}_${proto.toUpperCase()}`;
      if (i === 0) out.set(`${name}_PORT`, url);
      out.set(prefix, url);
      out.set(`${prefix}_PROTO`, proto);
      out.set(`${prefix}_PORT`, String(p.port));
      out.set(`${prefix}_ADDR`, ip);
    });
  }
  return out;
}
