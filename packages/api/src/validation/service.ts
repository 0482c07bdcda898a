// Services, Endpoints and EndpointSlices: the rules Kubernetes' validation applies to
// each (pkg/apis/core/validation ValidateService, ValidateServiceUpdate,
// ValidateEndpoints; pkg/apis/discovery/validation), with its field paths and words.
// Objects arrive defaulted, as the apiserver defaults before it validates. What depends
// on the cluster (the service range, the node port range, which IP families it has)
// is the apiserver's allocator's, not this file's.

import { isIP } from 'node:net';
import { type FieldError, fieldErrors } from '../field-errors.js';
import { immutable, validateLabels } from './meta.js';
import {
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidPortName,
  isValidPortNum,
} from './names.js';
import { arrAt, boolAt, intAt, isObj, nameErrors, type Obj, objAt, oneOf, own, strAt } from './util.js';

export const SERVICE_TYPES = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'] as const;
export const SERVICE_PROTOCOLS = ['SCTP', 'TCP', 'UDP'] as const;
export const SESSION_AFFINITIES = ['ClientIP', 'None'] as const;
export const TRAFFIC_POLICIES = ['Cluster', 'Local'] as const;
export const IP_FAMILIES = ['IPv4', 'IPv6'] as const;
export const IP_FAMILY_POLICIES = ['PreferDualStack', 'RequireDualStack', 'SingleStack'] as const;
export const ADDRESS_TYPES = ['FQDN', 'IPv4', 'IPv6'] as const;
/** The longest ClientIP affinity Kubernetes allows (a day). */
export const MAX_CLIENT_IP_AFFINITY_SECONDS = 86400;
export const CLUSTER_IP_NONE = 'None';

const IP_MESSAGE = 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)';

// ---- small shared checks -------------------------------------------------------------

function dns1123Label(v: string, path: string, errs: FieldError[]): void {
  nameErrors(v, isDNS1123Label(v), path, errs);
}

function portNumber(v: unknown, path: string, errs: FieldError[]): number | undefined {
  const n = intAt(v, path, errs);
  if (n !== undefined) for (const m of isValidPortNum(n)) errs.push(fieldErrors.invalid(path, n, m));
  return n;
}

function protocol(v: unknown, path: string, errs: FieldError[]): string | undefined {
  const p = strAt(v, path, errs);
  if (p === undefined || p === '') errs.push(fieldErrors.required(path));
  else oneOf(p, SERVICE_PROTOCOLS, path, errs);
  return p;
}

function appProtocol(v: unknown, path: string, errs: FieldError[]): void {
  const s = strAt(v, path, errs);
  if (s !== undefined) nameErrors(s, isQualifiedName(s), path, errs);
}

/** A port given as a number (1..65535) or as an IANA service name (a named container port). */
function portNumOrName(v: unknown, path: string, errs: FieldError[]): void {
  if (typeof v === 'number') portNumber(v, path, errs);
  else if (typeof v === 'string') nameErrors(v, isValidPortName(v), path, errs);
  else if (v !== undefined && v !== null)
    errs.push(fieldErrors.typeInvalid(path, v, 'must be an integer or a string'));
}

function validIP(ip: string, path: string, errs: FieldError[]): boolean {
  if (isIP(ip) !== 0) return true;
  errs.push(fieldErrors.invalid(path, ip, IP_MESSAGE));
  return false;
}

/** Addresses an endpoint may not have (Kubernetes' ValidateEndpointIP). */
function endpointIP(ip: string, path: string, errs: FieldError[]): void {
  const v4 = isIP(ip) === 4 ? ip.split('.').map(Number) : undefined;
  const lower = ip.toLowerCase();
  if (ip === '0.0.0.0' || lower === '::')
    errs.push(fieldErrors.invalid(path, ip, 'may not be unspecified (0.0.0.0)'));
  if (v4?.[0] === 127 || lower === '::1')
    errs.push(fieldErrors.invalid(path, ip, 'may not be in the loopback range (127.0.0.0/8, ::1/128)'));
  if ((v4 && v4[0] === 169 && v4[1] === 254) || /^fe[89ab]/.test(lower))
    errs.push(
      fieldErrors.invalid(path, ip, 'may not be in the link-local range (169.254.0.0/16, fe80::/10)'),
    );
  if ((v4 && v4[0] === 224 && v4[1] === 0 && v4[2] === 0) || lower.startsWith('ff02:'))
    errs.push(
      fieldErrors.invalid(path, ip, 'may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)'),
    );
}

function strings(v: unknown, path: string, errs: FieldError[]): string[] {
  const out: string[] = [];
  arrAt(v, path, errs).forEach((s, i) => {
    const t = strAt(s, `${path}[${i}]`, errs);
    if (t !== undefined) out.push(t);
  });
  return out;
}

// ---- Service ---------------------------------------------------------------------------

/** What a Service's spec says, read once (wrong types already reported). */
interface ServiceView {
  type: string;
  clusterIP: string;
  clusterIPs: string[];
  ipFamilies: string[];
  ipFamilyPolicy: string | undefined;
  headless: boolean;
}

function view(spec: Obj, errs: FieldError[]): ServiceView {
  const type = strAt(own(spec, 'type'), 'spec.type', errs) ?? '';
  const clusterIP = strAt(own(spec, 'clusterIP'), 'spec.clusterIP', errs) ?? '';
  return {
    type,
    clusterIP,
    clusterIPs: strings(own(spec, 'clusterIPs'), 'spec.clusterIPs', errs),
    ipFamilies: strings(own(spec, 'ipFamilies'), 'spec.ipFamilies', errs),
    ipFamilyPolicy: strAt(own(spec, 'ipFamilyPolicy'), 'spec.ipFamilyPolicy', errs),
    headless: clusterIP === CLUSTER_IP_NONE,
  };
}

/** Node ports exist for these types (the others may not hold any). */
export function needsNodePorts(type: string): boolean {
  return type === 'NodePort' || type === 'LoadBalancer';
}

/** A LoadBalancer with externalTrafficPolicy Local gets a health check node port. */
export function needsHealthCheck(spec: Obj): boolean {
  return own(spec, 'type') === 'LoadBalancer' && own(spec, 'externalTrafficPolicy') === 'Local';
}

/** Reachable from outside the cluster: node ports, a load balancer or external IPs. */
function externallyAccessible(spec: Obj, type: string): boolean {
  const external = own(spec, 'externalIPs');
  return needsNodePorts(type) || (type === 'ClusterIP' && Array.isArray(external) && external.length > 0);
}

export function validateService(svc: Obj, errs: FieldError[]): void {
  const spec = objAt(own(svc, 'spec'), 'spec', errs);
  if (!spec) {
    errs.push(fieldErrors.required('spec'));
    return;
  }
  const v = view(spec, errs);
  if (v.type === '') errs.push(fieldErrors.required('spec.type'));
  else oneOf(v.type, SERVICE_TYPES, 'spec.type', errs);

  const ports = arrAt(own(spec, 'ports'), 'spec.ports', errs);
  if (ports.length === 0 && !v.headless && v.type !== 'ExternalName')
    errs.push(fieldErrors.required('spec.ports'));
  validateTypeRules(spec, v, errs);
  validateServicePorts(ports, v, errs);
  const selector = own(spec, 'selector');
  if (selector !== undefined && selector !== null) validateLabels(selector, 'spec.selector', errs);
  validateSessionAffinity(spec, errs);
  validateClusterIPFields(v, errs);
  validateExternalIPs(spec, errs);
  validateLoadBalancerFields(spec, v, errs);
  validateTrafficPolicies(spec, v, errs);
  boolAt(own(spec, 'publishNotReadyAddresses'), 'spec.publishNotReadyAddresses', errs);
}

function validateTypeRules(spec: Obj, v: ServiceView, errs: FieldError[]): void {
  switch (v.type) {
    case 'LoadBalancer':
    case 'NodePort':
      if (v.headless) {
        errs.push(
          fieldErrors.invalid(
            'spec.clusterIPs[0]',
            v.clusterIPs[0] ?? v.clusterIP,
            `may not be set to 'None' for ${v.type} services`,
          ),
        );
      }
      break;
    case 'ExternalName': {
      if (v.clusterIPs.length > 0 || v.clusterIP !== '')
        errs.push(fieldErrors.forbidden('spec.clusterIPs', 'may not be set for ExternalName services'));
      if (v.ipFamilies.length > 0)
        errs.push(fieldErrors.forbidden('spec.ipFamilies', 'may not be set for ExternalName services'));
      if (v.ipFamilyPolicy !== undefined)
        errs.push(fieldErrors.forbidden('spec.ipFamilyPolicy', 'may not be set for ExternalName services'));
      // The name (a CNAME target) may end in a dot to say it is fully qualified.
      const name = (strAt(own(spec, 'externalName'), 'spec.externalName', errs) ?? '').replace(/\.$/, '');
      if (name === '') errs.push(fieldErrors.required('spec.externalName'));
      else nameErrors(name, isDNS1123Subdomain(name), 'spec.externalName', errs);
      break;
    }
  }
}

function validateServicePorts(ports: unknown[], v: ServiceView, errs: FieldError[]): void {
  const names = new Set<string>();
  const portProtocol = new Set<string>();
  const nodePortProtocol = new Set<string>();
  ports.forEach((raw, i) => {
    const path = `spec.ports[${i}]`;
    const p = objAt(raw, path, errs);
    if (!p) return;
    const name = strAt(own(p, 'name'), `${path}.name`, errs) ?? '';
    if (name === '' && ports.length > 1) errs.push(fieldErrors.required(`${path}.name`));
    else if (name !== '') {
      dns1123Label(name, `${path}.name`, errs);
      if (names.has(name)) errs.push(fieldErrors.duplicate(`${path}.name`, name));
      names.add(name);
    }
    const port = portNumber(own(p, 'port'), `${path}.port`, errs);
    if (port === undefined) errs.push(fieldErrors.required(`${path}.port`));
    const proto = protocol(own(p, 'protocol'), `${path}.protocol`, errs);
    portNumOrName(own(p, 'targetPort'), `${path}.targetPort`, errs);
    appProtocol(own(p, 'appProtocol'), `${path}.appProtocol`, errs);
    const nodePort = intAt(own(p, 'nodePort'), `${path}.nodePort`, errs) ?? 0;
    if (nodePort !== 0) {
      if (v.type === 'ClusterIP' || v.type === 'ExternalName') {
        errs.push(fieldErrors.forbidden(`${path}.nodePort`, `may not be used when \`type\` is '${v.type}'`));
      } else {
        for (const m of isValidPortNum(nodePort))
          errs.push(fieldErrors.invalid(`${path}.nodePort`, nodePort, m));
      }
      // One node port may serve a TCP and a UDP port, never two ports of one protocol.
      const key = `${proto}/${nodePort}`;
      if (nodePortProtocol.has(key)) errs.push(fieldErrors.duplicate(`${path}.nodePort`, nodePort));
      nodePortProtocol.add(key);
    }
    const key = `${proto}/${port}`;
    if (portProtocol.has(key)) errs.push(fieldErrors.duplicate(path, { protocol: proto, port }));
    portProtocol.add(key);
  });
}

function validateSessionAffinity(spec: Obj, errs: FieldError[]): void {
  const affinity = strAt(own(spec, 'sessionAffinity'), 'spec.sessionAffinity', errs);
  const configPath = 'spec.sessionAffinityConfig';
  const config = objAt(own(spec, 'sessionAffinityConfig'), configPath, errs);
  if (affinity === undefined || affinity === '') {
    errs.push(fieldErrors.required('spec.sessionAffinity'));
    return;
  }
  oneOf(affinity, SESSION_AFFINITIES, 'spec.sessionAffinity', errs);
  if (affinity === 'None' && config !== undefined) {
    errs.push(fieldErrors.invalid(configPath, config, 'must not be set when session affinity is None'));
  }
  if (affinity !== 'ClientIP') return;
  const when = 'when session affinity type is ClientIP';
  if (!config) {
    errs.push(fieldErrors.required(configPath, when));
    return;
  }
  const clientIP = objAt(own(config, 'clientIP'), `${configPath}.clientIP`, errs);
  if (!clientIP) {
    errs.push(fieldErrors.required(`${configPath}.clientIP`, when));
    return;
  }
  const timeoutPath = `${configPath}.clientIP.timeoutSeconds`;
  const timeout = intAt(own(clientIP, 'timeoutSeconds'), timeoutPath, errs);
  if (timeout === undefined) errs.push(fieldErrors.required(timeoutPath, when));
  else if (timeout <= 0 || timeout > MAX_CLIENT_IP_AFFINITY_SECONDS) {
    errs.push(
      fieldErrors.invalid(
        timeoutPath,
        timeout,
        `must be greater than 0 and less than ${MAX_CLIENT_IP_AFFINITY_SECONDS}`,
      ),
    );
  }
}

/** clusterIP, clusterIPs, ipFamilies and ipFamilyPolicy on their own and against each other. */
function validateClusterIPFields(v: ServiceView, errs: FieldError[]): void {
  if (v.type === 'ExternalName') return;
  const ipsPath = 'spec.clusterIPs';
  // clusterIP and clusterIPs[0] say the same thing: the apiserver fills one from the other.
  if (v.clusterIP !== '') {
    if (v.clusterIPs.length === 0) errs.push(fieldErrors.required(ipsPath));
    else if (v.clusterIPs[0] !== v.clusterIP)
      errs.push(fieldErrors.invalid(ipsPath, v.clusterIPs, 'first value must match `clusterIP`'));
  } else if (v.clusterIPs.length > 0) {
    errs.push(fieldErrors.invalid(ipsPath, v.clusterIPs, 'must be empty when `clusterIP` is not specified'));
  }
  const seen = new Set<string>();
  v.ipFamilies.forEach((f, i) => {
    oneOf(f, IP_FAMILIES, `spec.ipFamilies[${i}]`, errs);
    if (seen.has(f)) errs.push(fieldErrors.duplicate(`spec.ipFamilies[${i}]`, f));
    seen.add(f);
  });
  if (v.ipFamilies.length > 2)
    errs.push(fieldErrors.invalid('spec.ipFamilies', v.ipFamilies, 'may only hold up to 2 values'));
  oneOf(v.ipFamilyPolicy, IP_FAMILY_POLICIES, 'spec.ipFamilyPolicy', errs);
  let validIPs = true;
  v.clusterIPs.forEach((ip, i) => {
    if (i === 0 && ip === CLUSTER_IP_NONE) {
      if (v.clusterIPs.length > 1) {
        validIPs = false;
        errs.push(fieldErrors.invalid(ipsPath, v.clusterIPs, "'None' must be the first and only value"));
      }
      return;
    }
    validIPs = validIP(ip, `${ipsPath}[${i}]`, errs) && validIPs;
  });
  if (v.clusterIPs.length > 2)
    errs.push(fieldErrors.invalid(ipsPath, v.clusterIPs, 'may only hold up to 2 values'));
  if (!validIPs || v.headless) return;
  if (v.clusterIPs.length === 2 && isIP(v.clusterIPs[0]) === isIP(v.clusterIPs[1])) {
    errs.push(
      fieldErrors.invalid(ipsPath, v.clusterIPs, 'may specify no more than one IP for each IP family'),
    );
  }
  v.clusterIPs.forEach((ip, i) => {
    const family = v.ipFamilies[i];
    const is = isIP(ip) === 6 ? 'IPv6' : 'IPv4';
    if (family !== undefined && family !== is && (IP_FAMILIES as readonly string[]).includes(family)) {
      errs.push(
        fieldErrors.invalid(
          `${ipsPath}[${i}]`,
          ip,
          `expected an ${family} value as indicated by \`ipFamilies[${i}]\``,
        ),
      );
    }
  });
}

function validateExternalIPs(spec: Obj, errs: FieldError[]): void {
  strings(own(spec, 'externalIPs'), 'spec.externalIPs', errs).forEach((ip, i) => {
    const path = `spec.externalIPs[${i}]`;
    if (validIP(ip, path, errs)) endpointIP(ip, path, errs);
  });
}

function validateLoadBalancerFields(spec: Obj, v: ServiceView, errs: FieldError[]): void {
  const lb = v.type === 'LoadBalancer';
  const allocate = boolAt(
    own(spec, 'allocateLoadBalancerNodePorts'),
    'spec.allocateLoadBalancerNodePorts',
    errs,
  );
  if (lb && allocate === undefined) errs.push(fieldErrors.required('spec.allocateLoadBalancerNodePorts'));
  if (!lb && allocate !== undefined)
    errs.push(
      fieldErrors.forbidden(
        'spec.allocateLoadBalancerNodePorts',
        "may only be used when `type` is 'LoadBalancer'",
      ),
    );
  const ranges = strings(own(spec, 'loadBalancerSourceRanges'), 'spec.loadBalancerSourceRanges', errs);
  if (ranges.length > 0 && !lb) {
    errs.push(
      fieldErrors.forbidden(
        'spec.loadBalancerSourceRanges',
        "may only be used when `type` is 'LoadBalancer'",
      ),
    );
  }
  ranges.forEach((r, i) => {
    const [ip, bits, ...rest] = r.trim().split('/');
    const max = isIP(ip ?? '') === 6 ? 128 : 32;
    const prefix = /^\d{1,3}$/.test(bits ?? '') ? Number(bits) : Number.NaN;
    if (isIP(ip ?? '') === 0 || rest.length > 0 || !(prefix >= 0 && prefix <= max)) {
      errs.push(
        fieldErrors.invalid(
          `spec.loadBalancerSourceRanges[${i}]`,
          r,
          'must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 ',
        ),
      );
    }
  });
  const lbIP = strAt(own(spec, 'loadBalancerIP'), 'spec.loadBalancerIP', errs);
  if (lbIP !== undefined && lbIP !== '') {
    if (!lb)
      errs.push(
        fieldErrors.forbidden('spec.loadBalancerIP', "may only be used when `type` is 'LoadBalancer'"),
      );
    else validIP(lbIP, 'spec.loadBalancerIP', errs);
  }
  const cls = strAt(own(spec, 'loadBalancerClass'), 'spec.loadBalancerClass', errs);
  if (cls !== undefined) {
    if (!lb)
      errs.push(
        fieldErrors.forbidden('spec.loadBalancerClass', "may only be used when `type` is 'LoadBalancer'"),
      );
    else nameErrors(cls, isQualifiedName(cls), 'spec.loadBalancerClass', errs);
  }
}

function validateTrafficPolicies(spec: Obj, v: ServiceView, errs: FieldError[]): void {
  const external = strAt(own(spec, 'externalTrafficPolicy'), 'spec.externalTrafficPolicy', errs) ?? '';
  if (!externallyAccessible(spec, v.type)) {
    if (external !== '') {
      errs.push(
        fieldErrors.invalid(
          'spec.externalTrafficPolicy',
          external,
          'may only be set for externally-accessible services',
        ),
      );
    }
  } else if (external === '') errs.push(fieldErrors.required('spec.externalTrafficPolicy'));
  else oneOf(external, TRAFFIC_POLICIES, 'spec.externalTrafficPolicy', errs);

  const hc = intAt(own(spec, 'healthCheckNodePort'), 'spec.healthCheckNodePort', errs) ?? 0;
  if (!needsHealthCheck(spec)) {
    if (hc !== 0) {
      errs.push(
        fieldErrors.invalid(
          'spec.healthCheckNodePort',
          hc,
          "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
        ),
      );
    }
  } else if (hc === 0) errs.push(fieldErrors.required('spec.healthCheckNodePort'));
  else for (const m of isValidPortNum(hc)) errs.push(fieldErrors.invalid('spec.healthCheckNodePort', hc, m));

  const internal = strAt(own(spec, 'internalTrafficPolicy'), 'spec.internalTrafficPolicy', errs);
  if (internal === undefined) {
    if (v.type !== 'ExternalName' && v.type !== '')
      errs.push(fieldErrors.required('spec.internalTrafficPolicy'));
  } else oneOf(internal, TRAFFIC_POLICIES, 'spec.internalTrafficPolicy', errs);
}

/**
 * What an update may not do: change a cluster IP once set (unless the Service turns into
 * or out of ExternalName, which has none), or change its primary IP family.
 */
export function validateServiceUpdate(svc: Obj, old: Obj, errs: FieldError[]): void {
  const spec = isObj(own(svc, 'spec')) ? (own(svc, 'spec') as Obj) : {};
  const oldSpec = isObj(own(old, 'spec')) ? (own(old, 'spec') as Obj) : {};
  const quiet: FieldError[] = [];
  const n = view(spec, quiet);
  const o = view(oldSpec, quiet);
  if (n.type === 'ExternalName' || o.type === 'ExternalName') return;
  if (n.headless && o.headless) return;
  const path = 'spec.clusterIPs';
  if (o.clusterIPs.length === n.clusterIPs.length) {
    o.clusterIPs.forEach((ip, i) => {
      if (ip !== n.clusterIPs[i])
        errs.push(fieldErrors.invalid(`${path}[${i}]`, n.clusterIPs, 'may not change once set'));
    });
  } else if (o.clusterIPs.length > n.clusterIPs.length) {
    if (n.clusterIPs.length === 0) {
      errs.push(fieldErrors.invalid(`${path}[0]`, n.clusterIPs, 'primary clusterIP can not be unset'));
    } else if (n.clusterIPs[0] !== o.clusterIPs[0]) {
      errs.push(fieldErrors.invalid(`${path}[0]`, n.clusterIPs, 'may not change once set'));
    }
  } else if (o.clusterIPs.length > 0 && n.clusterIPs[0] !== o.clusterIPs[0]) {
    errs.push(fieldErrors.invalid(`${path}[0]`, n.clusterIPs, 'may not change once set'));
  }
  if (o.ipFamilies.length > 0 && n.ipFamilies.length > 0 && o.ipFamilies[0] !== n.ipFamilies[0]) {
    errs.push(fieldErrors.invalid('spec.ipFamilies[0]', n.ipFamilies[0], 'may not change once set'));
  }
}

// ---- Endpoints -------------------------------------------------------------------------

function validateEndpointAddress(raw: unknown, path: string, errs: FieldError[]): void {
  const a = objAt(raw, path, errs);
  if (!a) return;
  const ip = strAt(own(a, 'ip'), `${path}.ip`, errs) ?? '';
  if (validIP(ip, `${path}.ip`, errs)) endpointIP(ip, `${path}.ip`, errs);
  const hostname = strAt(own(a, 'hostname'), `${path}.hostname`, errs);
  if (hostname) dns1123Label(hostname, `${path}.hostname`, errs);
  const node = strAt(own(a, 'nodeName'), `${path}.nodeName`, errs);
  if (node !== undefined) nameErrors(node, isDNS1123Subdomain(node), `${path}.nodeName`, errs);
}

export function validateEndpoints(ep: Obj, errs: FieldError[]): void {
  arrAt(own(ep, 'subsets'), 'subsets', errs).forEach((raw, i) => {
    const path = `subsets[${i}]`;
    const subset = objAt(raw, path, errs);
    if (!subset) return;
    const ready = arrAt(own(subset, 'addresses'), `${path}.addresses`, errs);
    const notReady = arrAt(own(subset, 'notReadyAddresses'), `${path}.notReadyAddresses`, errs);
    if (ready.length === 0 && notReady.length === 0) {
      errs.push(fieldErrors.required(path, 'must specify `addresses` or `notReadyAddresses`'));
    }
    ready.forEach((a, j) => {
      validateEndpointAddress(a, `${path}.addresses[${j}]`, errs);
    });
    notReady.forEach((a, j) => {
      validateEndpointAddress(a, `${path}.notReadyAddresses[${j}]`, errs);
    });
    const ports = arrAt(own(subset, 'ports'), `${path}.ports`, errs);
    ports.forEach((rp, j) => {
      const pp = `${path}.ports[${j}]`;
      const p = objAt(rp, pp, errs);
      if (!p) return;
      const name = strAt(own(p, 'name'), `${pp}.name`, errs) ?? '';
      if (name === '' && ports.length > 1) errs.push(fieldErrors.required(`${pp}.name`));
      else if (name !== '') dns1123Label(name, `${pp}.name`, errs);
      portNumber(own(p, 'port'), `${pp}.port`, errs);
      protocol(own(p, 'protocol'), `${pp}.protocol`, errs);
      appProtocol(own(p, 'appProtocol'), `${pp}.appProtocol`, errs);
    });
  });
}

// ---- EndpointSlice -----------------------------------------------------------------------

const MAX_SLICE_ENDPOINTS = 1000;
const MAX_ENDPOINT_ADDRESSES = 100;
const MAX_SLICE_PORTS = 20000;

function sliceAddress(addressType: string, address: string, path: string, errs: FieldError[]): void {
  if (addressType === 'IPv4') {
    if (isIP(address) !== 4) errs.push(fieldErrors.invalid(path, address, 'must be a valid IPv4 address'));
    else endpointIP(address, path, errs);
  } else if (addressType === 'IPv6') {
    if (isIP(address) !== 6) errs.push(fieldErrors.invalid(path, address, 'must be a valid IPv6 address'));
    else endpointIP(address, path, errs);
  } else if (addressType === 'FQDN') {
    const name = address.replace(/\.$/, '');
    nameErrors(address, isDNS1123Subdomain(name), path, errs);
  }
}

export function validateEndpointSlice(slice: Obj, errs: FieldError[]): void {
  const addressType = strAt(own(slice, 'addressType'), 'addressType', errs);
  if (addressType === undefined || addressType === '') errs.push(fieldErrors.required('addressType'));
  else oneOf(addressType, ADDRESS_TYPES, 'addressType', errs);
  const endpoints = arrAt(own(slice, 'endpoints'), 'endpoints', errs);
  if (endpoints.length > MAX_SLICE_ENDPOINTS)
    errs.push(fieldErrors.tooMany('endpoints', endpoints.length, MAX_SLICE_ENDPOINTS));
  else {
    endpoints.forEach((raw, i) => {
      const path = `endpoints[${i}]`;
      const e = objAt(raw, path, errs);
      if (!e) return;
      const addresses = strings(own(e, 'addresses'), `${path}.addresses`, errs);
      if (addresses.length === 0)
        errs.push(fieldErrors.required(`${path}.addresses`, 'must contain at least 1 address'));
      else if (addresses.length > MAX_ENDPOINT_ADDRESSES)
        errs.push(fieldErrors.tooMany(`${path}.addresses`, addresses.length, MAX_ENDPOINT_ADDRESSES));
      else {
        addresses.forEach((a, j) => {
          sliceAddress(addressType ?? '', a, `${path}.addresses[${j}]`, errs);
        });
      }
      const conditions = objAt(own(e, 'conditions'), `${path}.conditions`, errs);
      for (const c of ['ready', 'serving', 'terminating'])
        boolAt(own(conditions, c), `${path}.conditions.${c}`, errs);
      const node = strAt(own(e, 'nodeName'), `${path}.nodeName`, errs);
      if (node !== undefined) nameErrors(node, isDNS1123Subdomain(node), `${path}.nodeName`, errs);
      const hostname = strAt(own(e, 'hostname'), `${path}.hostname`, errs);
      if (hostname !== undefined) dns1123Label(hostname, `${path}.hostname`, errs);
      const topology = own(e, 'deprecatedTopology');
      if (topology !== undefined && topology !== null)
        validateLabels(topology, `${path}.deprecatedTopology`, errs);
    });
  }
  const ports = arrAt(own(slice, 'ports'), 'ports', errs);
  if (ports.length > MAX_SLICE_PORTS) {
    errs.push(fieldErrors.tooMany('ports', ports.length, MAX_SLICE_PORTS));
    return;
  }
  const names = new Set<string>();
  ports.forEach((rp, j) => {
    const path = `ports[${j}]`;
    const p = objAt(rp, path, errs);
    if (!p) return;
    const name = strAt(own(p, 'name'), `${path}.name`, errs) ?? '';
    if (name !== '') dns1123Label(name, `${path}.name`, errs);
    if (names.has(name)) errs.push(fieldErrors.duplicate(`${path}.name`, name));
    names.add(name);
    if (own(p, 'port') !== undefined && own(p, 'port') !== null)
      portNumber(own(p, 'port'), `${path}.port`, errs);
    protocol(own(p, 'protocol'), `${path}.protocol`, errs);
    appProtocol(own(p, 'appProtocol'), `${path}.appProtocol`, errs);
  });
}

export function validateEndpointSliceUpdate(slice: Obj, old: Obj, errs: FieldError[]): void {
  immutable(own(slice, 'addressType'), own(old, 'addressType'), 'addressType', errs);
}
