// A Service's cluster IP and node ports, as Kubernetes' service registry hands them
// out (pkg/registry/core/service/storage/alloc.go): IP families defaulted for this
// single-stack IPv4 cluster, requested values checked against the ranges and against
// the other Services, missing ones picked at random. Each allocation is a claim key
// written in the Service's own Txn (rest.ts), so the store, not this process's memory,
// decides who holds what: many apiservers and restarts cannot hand out one value twice.
import { type FieldError, fieldErrors, formatIPv4, internalError, invalid, parseIPv4 } from '@kubit/api';
import {
  arr,
  type Claim,
  type ClaimReader,
  type ClaimsDef,
  meta,
  type Obj,
  obj,
  str,
} from '../kinds/types.js';
import type { KObject } from '../storage.js';
import {
  type Band,
  cidrText,
  ipInRange,
  ipKey,
  NODE_PORTS_PREFIX,
  nodePortKey,
  pickFree,
  pickRandom,
  SERVICE_IPS_PREFIX,
  type ServiceNetworking,
} from './networking.js';

const NONE = 'None';

/** Who holds a claim key: the Service's namespace, name and uid. */
export interface ClaimOwner {
  namespace: string;
  name: string;
  uid: string;
}

export function ownerOf(svc: KObject): ClaimOwner {
  const m = meta(svc);
  return { namespace: str(m.namespace), name: str(m.name), uid: str(m.uid) };
}

export function parseOwner(value: string | undefined): ClaimOwner | undefined {
  if (value === undefined) return undefined;
  try {
    const o = JSON.parse(value) as Partial<ClaimOwner>;
    return { namespace: str(o.namespace), name: str(o.name), uid: str(o.uid) };
  } catch {
    return { namespace: '', name: '', uid: '' };
  }
}

export const needsClusterIP = (spec: Obj): boolean => str(spec.type) !== 'ExternalName';
export const needsNodePorts = (spec: Obj): boolean =>
  spec.type === 'NodePort' || spec.type === 'LoadBalancer';
export const needsHealthCheckPort = (spec: Obj): boolean =>
  spec.type === 'LoadBalancer' && spec.externalTrafficPolicy === 'Local';

const strings = (v: unknown): string[] => arr(v).filter((x): x is string => typeof x === 'string');
const intOf = (v: unknown): number => (typeof v === 'number' && Number.isInteger(v) ? v : 0);

/** The cluster IPs a Service holds (a headless or ExternalName one holds none). */
export function heldIPs(spec: Obj): string[] {
  if (!needsClusterIP(spec)) return [];
  return strings(spec.clusterIPs).filter((ip) => ip !== NONE && parseIPv4(ip) !== undefined);
}

/** The node ports a Service holds: its ports' and its health check's, each once. */
export function heldNodePorts(spec: Obj): number[] {
  const out = new Set<number>();
  if (needsNodePorts(spec)) {
    for (const p of arr(spec.ports).map(obj)) if (intOf(p.nodePort) > 0) out.add(intOf(p.nodePort));
  }
  if (needsHealthCheckPort(spec) && intOf(spec.healthCheckNodePort) > 0)
    out.add(intOf(spec.healthCheckNodePort));
  return [...out];
}

export function heldKeys(svc: KObject): string[] {
  const spec = obj(svc.spec);
  return [...heldIPs(spec).map(ipKey), ...heldNodePorts(spec).map(nodePortKey)];
}

function invalidService(svc: KObject, errs: FieldError[]) {
  return invalid({ group: '', kind: 'Service' }, str(meta(svc).name), errs);
}

export class ServiceClaims implements ClaimsDef {
  constructor(readonly net: ServiceNetworking) {}

  held(o: KObject): string[] {
    return heldKeys(o);
  }

  async assign(o: KObject, old: KObject | undefined, reader: ClaimReader, attempt: number): Promise<Claim[]> {
    const spec = obj(o.spec);
    o.spec = spec;
    const owner = JSON.stringify(ownerOf(o));
    const oldSpec = old ? obj(old.spec) : undefined;
    const claims: Claim[] = [];
    this.initIPFamilies(o, spec);
    claims.push(...(await this.assignClusterIP(o, spec, oldSpec, owner, reader, attempt)));
    claims.push(...(await this.assignNodePorts(o, spec, oldSpec, owner, reader, attempt)));
    return claims;
  }

  /**
   * ipFamilyPolicy and ipFamilies for a cluster of one family, IPv4: SingleStack unless
   * the client asked otherwise; PreferDualStack gets the one family it can; IPv6 or
   * RequireDualStack cannot be had here (Kubernetes' words for each).
   */
  private initIPFamilies(o: KObject, spec: Obj): void {
    if (!needsClusterIP(spec)) return;
    const ips = strings(spec.clusterIPs);
    let families = strings(spec.ipFamilies);
    if (typeof spec.ipFamilyPolicy !== 'string') {
      spec.ipFamilyPolicy = ips.length === 2 || families.length === 2 ? 'RequireDualStack' : 'SingleStack';
    }
    const policy = spec.ipFamilyPolicy;
    const errs: FieldError[] = [];
    if (policy === 'SingleStack') {
      if (ips.length === 2) {
        errs.push(
          fieldErrors.invalid(
            'spec.ipFamilyPolicy',
            policy,
            "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
          ),
        );
      }
      if (families.length === 2) {
        errs.push(
          fieldErrors.invalid(
            'spec.ipFamilyPolicy',
            policy,
            "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
          ),
        );
      }
    }
    // Families the client left out follow its cluster IPs; an IPv6 one cannot be had.
    ips.forEach((ip, i) => {
      if (ip === NONE || i < families.length) return;
      if (parseIPv4(ip) !== undefined) families = [...families, 'IPv4'];
      else if (ip.includes(':')) {
        errs.push(
          fieldErrors.invalid(`spec.clusterIPs[${i}]`, ips, 'IPv6 is not configured on this cluster'),
        );
      }
    });
    if (errs.length > 0) throw invalidService(o, errs);
    const headlessWithoutSelector = spec.clusterIP === NONE && Object.keys(obj(spec.selector)).length === 0;
    if (headlessWithoutSelector) {
      // Such a Service holds no address: Kubernetes lets it name both families anywhere.
      if (families.length === 0) families = ['IPv4'];
      if (families.length < 2 && policy !== 'SingleStack')
        families = [...families, families[0] === 'IPv4' ? 'IPv6' : 'IPv4'];
      spec.ipFamilies = families;
      return;
    }
    if (policy === 'RequireDualStack') {
      errs.push(
        fieldErrors.invalid(
          'spec.ipFamilyPolicy',
          policy,
          'this cluster is not configured for dual-stack services',
        ),
      );
    }
    families.forEach((f, i) => {
      if (f !== 'IPv4')
        errs.push(fieldErrors.invalid(`spec.ipFamilies[${i}]`, f, 'not configured on this cluster'));
    });
    if (errs.length > 0) throw invalidService(o, errs);
    spec.ipFamilies = families.length > 0 ? families : ['IPv4'];
  }

  private async assignClusterIP(
    o: KObject,
    spec: Obj,
    oldSpec: Obj | undefined,
    owner: string,
    reader: ClaimReader,
    attempt: number,
  ): Promise<Claim[]> {
    if (!needsClusterIP(spec)) return [];
    const ips = strings(spec.clusterIPs);
    if (ips[0] === NONE) return [];
    const held = new Set(oldSpec ? heldIPs(oldSpec) : []);
    const requested = ips[0];
    if (requested !== undefined && requested !== '') {
      // Not an IPv4 address at all: validation says so.
      if (parseIPv4(requested) === undefined) return [];
      if (held.has(requested)) return [{ key: ipKey(requested), value: owner }];
      const fail = (why: string) =>
        invalidService(o, [
          fieldErrors.invalid('spec.clusterIPs', ips, `failed to allocate IP ${requested}: ${why}`),
        ]);
      if (!ipInRange(this.net, requested)) {
        throw fail(
          `the provided IP (${requested}) is not in the valid range. The range of valid IPs is ${cidrText(this.net)}`,
        );
      }
      const alreadyAllocated = fail('provided IP is already allocated');
      if ((await reader.holder(ipKey(requested))) !== undefined) throw alreadyAllocated;
      return [{ key: ipKey(requested), value: owner, takenError: alreadyAllocated }];
    }
    const ip = formatIPv4(
      await this.pick(this.net.ips, SERVICE_IPS_PREFIX, reader, attempt, new Set(), 'serviceIP'),
    );
    spec.clusterIP = ip;
    spec.clusterIPs = [ip];
    return [{ key: ipKey(ip), value: owner }];
  }

  private async assignNodePorts(
    o: KObject,
    spec: Obj,
    oldSpec: Obj | undefined,
    owner: string,
    reader: ClaimReader,
    attempt: number,
  ): Promise<Claim[]> {
    const held = new Set(oldSpec ? heldNodePorts(oldSpec) : []);
    const claims = new Map<number, Claim>();
    const range = this.net.nodePorts;
    const request = async (port: number, field: string, prefix: string): Promise<void> => {
      if (claims.has(port)) return;
      if (held.has(port)) {
        claims.set(port, { key: nodePortKey(port), value: owner });
        return;
      }
      const fail = (why: string) => invalidService(o, [fieldErrors.invalid(field, port, `${prefix}${why}`)]);
      if (port < range.first || port > range.last) {
        throw fail(
          `provided port is not in the valid range. The range of valid ports is ${this.net.nodePortRangeText}`,
        );
      }
      const taken = fail('provided port is already allocated');
      if ((await reader.holder(nodePortKey(port))) !== undefined) throw taken;
      claims.set(port, { key: nodePortKey(port), value: owner, takenError: taken });
    };
    const next = async (): Promise<number> => {
      const port = await this.pick(
        range,
        NODE_PORTS_PREFIX,
        reader,
        attempt,
        new Set(claims.keys()),
        'nodePort',
      );
      claims.set(port, { key: nodePortKey(port), value: owner });
      return port;
    };
    if (needsNodePorts(spec)) {
      const ports = arr(spec.ports).map(obj);
      // A LoadBalancer may go without node ports, but one it asks for is still its own.
      const allocate = !(spec.type === 'LoadBalancer' && spec.allocateLoadBalancerNodePorts === false);
      // Ports of one number (TCP and UDP 53) share one node port, as Kubernetes gives them.
      const byServicePort = new Map<number, number>();
      for (const [i, p] of ports.entries()) {
        const wanted = intOf(p.nodePort);
        if (wanted > 0) {
          await request(wanted, `spec.ports[${i}].nodePort`, '');
          byServicePort.set(intOf(p.port), byServicePort.get(intOf(p.port)) ?? wanted);
        }
      }
      for (const p of ports) {
        if (intOf(p.nodePort) > 0 || !allocate) continue;
        const shared = byServicePort.get(intOf(p.port));
        p.nodePort = shared ?? (await next());
        byServicePort.set(intOf(p.port), intOf(p.nodePort));
      }
    }
    if (needsHealthCheckPort(spec)) {
      const wanted = intOf(spec.healthCheckNodePort);
      if (wanted > 0) {
        await request(
          wanted,
          'spec.healthCheckNodePort',
          `failed to allocate requested HealthCheck NodePort ${wanted}: `,
        );
      } else spec.healthCheckNodePort = await next();
    }
    return [...claims.values()];
  }

  /**
   * A value for the object to hold. The first try is a random one, unchecked: in a
   * range of a million addresses it is almost always free, and the Txn's guard catches
   * the rare clash. A retry reads what is taken and picks among the rest.
   */
  private async pick(
    band: Band,
    prefix: string,
    reader: ClaimReader,
    attempt: number,
    alsoTaken: Set<number>,
    what: string,
  ): Promise<number> {
    if (attempt === 0) {
      for (let i = 0; i < 4; i++) {
        const v = pickRandom(band);
        if (!alsoTaken.has(v)) return v;
      }
    }
    const taken = new Set(alsoTaken);
    for (const key of await reader.keys(prefix)) {
      const text = key.slice(prefix.length);
      const v =
        prefix === SERVICE_IPS_PREFIX ? parseIPv4(text) : /^\d+$/.test(text) ? Number(text) : undefined;
      if (v !== undefined) taken.add(v);
    }
    const v = pickFree(band, (x) => taken.has(x));
    if (v === undefined) throw internalError(new Error(`failed to allocate a ${what}: range is full`));
    return v;
  }
}
