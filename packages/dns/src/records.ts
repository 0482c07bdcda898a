// The records of one Service, as the Kubernetes DNS specification
// (kubernetes/dns docs/specification.md, schema 1.0.1) defines them, built from
// the Service and its EndpointSlices. Pure: no I/O, no clock.
import type { EndpointSlice, Service } from '@kubit/api';
import { canonicalName, dashedIP, isIPv4, reverseName } from './names.js';

/** One resource record's owner, type and data (the TTL is the zone's). */
export type RecordData =
  | { type: 'A'; data: string }
  | { type: 'CNAME'; data: string }
  | { type: 'PTR'; data: string }
  | { type: 'SRV'; data: { priority: number; weight: number; port: number; target: string } };

export type OwnedRecord = RecordData & { name: string };

/** The name a Service's records hang from: `<service>.<ns>.svc.<zone>`. */
export function serviceName(service: string, namespace: string, zone: string): string {
  return `${service}.${namespace}.svc.${zone}`.toLowerCase();
}

/** SRV priority and weight: the specification leaves them open; every target weighs the same. */
const SRV_PRIORITY = 0;
const SRV_WEIGHT = 100;

function srvOwner(port: { name?: string; protocol?: string }, base: string): string | undefined {
  if (!port.name) return undefined; // "Unnamed ports do not have an SRV record."
  return `_${port.name}._${(port.protocol ?? 'TCP').toLowerCase()}.${base}`.toLowerCase();
}

/** Whether the Service is headless (`clusterIP: None`). */
export function isHeadless(svc: Service): boolean {
  return svc.spec?.clusterIP === 'None';
}

/**
 * Every record the Service contributes. `slices` are the EndpointSlices that
 * name it (label kubernetes.io/service-name); only headless Services use them.
 */
export function serviceRecords(svc: Service, slices: readonly EndpointSlice[], zone: string): OwnedRecord[] {
  const name = svc.metadata?.name;
  const ns = svc.metadata?.namespace;
  if (!name || !ns) return [];
  const base = serviceName(name, ns, zone);
  const spec = svc.spec ?? {};
  if (spec.type === 'ExternalName') {
    // 2.5: a CNAME to the external name, whatever else the Service says.
    if (!spec.externalName) return [];
    return [{ name: base, type: 'CNAME', data: canonicalName(spec.externalName) }];
  }
  if (isHeadless(svc)) return headlessRecords(svc, slices, base);
  const ip = spec.clusterIP;
  // A Service whose cluster IP is not allocated yet has no records until it is.
  if (!isIPv4(ip)) return [];
  const out: OwnedRecord[] = [{ name: base, type: 'A', data: ip }];
  for (const port of spec.ports ?? []) {
    const owner = srvOwner(port, base);
    if (owner) {
      out.push({
        name: owner,
        type: 'SRV',
        data: { priority: SRV_PRIORITY, weight: SRV_WEIGHT, port: port.port, target: base },
      });
    }
  }
  out.push({ name: reverseName(ip), type: 'PTR', data: base });
  return out;
}

/** An endpoint counts when it is ready (nil means ready, as the EndpointSlice API says) or the Service publishes not-ready ones. */
function counts(ready: boolean | undefined, publishNotReady: boolean): boolean {
  return publishNotReady || ready !== false;
}

/** 2.4: an A record per endpoint address, per-endpoint hostname records, SRV per endpoint and named port, PTR. */
function headlessRecords(svc: Service, slices: readonly EndpointSlice[], base: string): OwnedRecord[] {
  const publishNotReady = svc.spec?.publishNotReadyAddresses === true;
  const out: OwnedRecord[] = [];
  const seen = new Set<string>();
  const add = (r: OwnedRecord) => {
    const key = `${r.name}|${r.type}|${JSON.stringify(r.data)}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push(r);
  };
  // Slices sorted by name so the records (and so the answers) come in a stable order.
  const sorted = [...slices].sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  for (const slice of sorted) {
    if (slice.addressType !== 'IPv4') continue;
    for (const ep of slice.endpoints ?? []) {
      if (!counts(ep.conditions?.ready, publishNotReady)) continue;
      for (const ip of ep.addresses ?? []) {
        if (!isIPv4(ip)) continue;
        // The endpoint's hostname, or (when it has none) the system-assigned name
        // CoreDNS gives: its address with dashes.
        const host = `${(ep.hostname ?? dashedIP(ip)).toLowerCase()}.${base}`;
        add({ name: base, type: 'A', data: ip });
        add({ name: host, type: 'A', data: ip });
        add({ name: reverseName(ip), type: 'PTR', data: host });
        for (const port of slice.ports ?? []) {
          const owner = srvOwner(port, base);
          if (!owner || port.port === undefined || port.port === null) continue;
          add({
            name: owner,
            type: 'SRV',
            data: { priority: SRV_PRIORITY, weight: SRV_WEIGHT, port: port.port, target: host },
          });
        }
      }
    }
  }
  return out;
}
