// networking.k8s.io/v1 NetworkPolicy: Kubernetes' ValidateNetworkPolicy
// (pkg/apis/networking/validation) with its field paths and messages: selectors,
// ports (protocol, number or name, endPort), peers (exactly one kind of peer when
// ipBlock is used, at least one), ipBlock (cidr, each except strictly inside it)
// and policyTypes.
import { isIP } from 'node:net';
import { type FieldError, fieldErrors } from '../field-errors.js';
import { isValidPortName, isValidPortNum } from './names.js';
import { validateLabelSelector } from './policy.js';
import { arrAt, type Obj, objAt, own, strAt } from './util.js';

export const NETWORK_POLICY_PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const;
export const NETWORK_POLICY_TYPES = ['Ingress', 'Egress'] as const;

const CIDR_MESSAGE = 'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)';

/** An IPv4 or IPv6 prefix as a number of `bits` bits (network address, prefix length). */
export interface AnyCidr {
  bits: 32 | 128;
  base: bigint;
  prefix: number;
}

function ipv6ToBigInt(s: string): bigint {
  let text = s;
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    // An embedded IPv4 address (::ffff:1.2.3.4) stands for the last two groups.
    const o = text
      .slice(lastColon + 1)
      .split('.')
      .map(Number);
    tail = [(o[0] << 8) | o[1], (o[2] << 8) | o[3]];
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [head, rest] = text.includes('::') ? text.split('::') : [text, undefined];
  const a = head ? head.split(':') : [];
  const b = rest !== undefined && rest !== '' ? rest.split(':') : [];
  const missing = 8 - a.length - b.length;
  const groups = [...a, ...Array(rest === undefined ? 0 : missing).fill('0'), ...b].map((g) =>
    Number.parseInt(g, 16),
  );
  if (tail.length) groups.splice(6, 2, ...tail);
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

/** Parses "a.b.c.d/n" or an IPv6 prefix; undefined when it is not a CIDR (as Go's ParseCIDR refuses). */
export function parseAnyCidr(v: string): AnyCidr | undefined {
  const slash = v.indexOf('/');
  if (slash < 0) return undefined;
  const ip = v.slice(0, slash);
  const bitsText = v.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(bitsText)) return undefined;
  const prefix = Number(bitsText);
  const family = isIP(ip);
  if (family === 4 && prefix <= 32) {
    const n = ip.split('.').reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n);
    return { bits: 32, base: mask(n, 32, prefix), prefix };
  }
  if (family === 6 && prefix <= 128) return { bits: 128, base: mask(ipv6ToBigInt(ip), 128, prefix), prefix };
  return undefined;
}

function mask(n: bigint, bits: number, prefix: number): bigint {
  const all = (1n << BigInt(bits)) - 1n;
  const host = (1n << BigInt(bits - prefix)) - 1n;
  return n & (all ^ host);
}

/** Whether `inner` is a strictly smaller prefix inside `outer` (Kubernetes' rule for `except`). */
export function isStrictSubnet(inner: AnyCidr, outer: AnyCidr): boolean {
  return (
    inner.bits === outer.bits &&
    inner.prefix > outer.prefix &&
    mask(inner.base, outer.bits, outer.prefix) === outer.base
  );
}

function validatePort(port: Obj, path: string, errs: FieldError[]): void {
  const protocol = own(port, 'protocol');
  if (
    protocol !== undefined &&
    protocol !== null &&
    !(NETWORK_POLICY_PROTOCOLS as readonly unknown[]).includes(protocol)
  ) {
    errs.push(fieldErrors.notSupported(`${path}.protocol`, protocol, [...NETWORK_POLICY_PROTOCOLS]));
  }
  const p = own(port, 'port');
  const endPort = own(port, 'endPort');
  const hasEnd = endPort !== undefined && endPort !== null;
  if (hasEnd && !(typeof endPort === 'number' && Number.isSafeInteger(endPort))) {
    errs.push(fieldErrors.typeInvalid(`${path}.endPort`, endPort, 'must be an integer'));
    return;
  }
  if (p === undefined || p === null) {
    if (hasEnd)
      errs.push(
        fieldErrors.invalid(`${path}.endPort`, endPort, 'may not be specified when `port` is not specified'),
      );
    return;
  }
  if (typeof p === 'number' && Number.isSafeInteger(p)) {
    for (const msg of isValidPortNum(p)) errs.push(fieldErrors.invalid(`${path}.port`, p, msg));
    if (hasEnd) {
      if ((endPort as number) < p)
        errs.push(fieldErrors.invalid(`${path}.endPort`, endPort, 'must be greater than or equal to `port`'));
      for (const msg of isValidPortNum(endPort as number))
        errs.push(fieldErrors.invalid(`${path}.endPort`, endPort, msg));
    }
    return;
  }
  if (typeof p === 'string') {
    if (hasEnd)
      errs.push(
        fieldErrors.invalid(`${path}.endPort`, endPort, 'may not be specified when `port` is non-numeric'),
      );
    for (const msg of isValidPortName(p)) errs.push(fieldErrors.invalid(`${path}.port`, p, msg));
    return;
  }
  errs.push(fieldErrors.typeInvalid(`${path}.port`, p, 'must be an integer or a string'));
}

function validateIPBlock(block: Obj, path: string, errs: FieldError[]): void {
  const cidrText = strAt(own(block, 'cidr'), `${path}.cidr`, errs);
  if (!cidrText) {
    errs.push(fieldErrors.required(`${path}.cidr`));
    return;
  }
  const cidr = parseAnyCidr(cidrText);
  if (!cidr) {
    errs.push(fieldErrors.invalid(`${path}.cidr`, cidrText, CIDR_MESSAGE));
    return;
  }
  for (const [i, e] of arrAt(own(block, 'except'), `${path}.except`, errs).entries()) {
    const p = `${path}.except[${i}]`;
    const text = strAt(e, p, errs);
    if (text === undefined) continue;
    const except = parseAnyCidr(text);
    if (!except) errs.push(fieldErrors.invalid(p, text, CIDR_MESSAGE));
    else if (!isStrictSubnet(except, cidr))
      errs.push(fieldErrors.invalid(p, text, 'must be a strict subset of `cidr`'));
  }
}

function validatePeer(peer: Obj, path: string, errs: FieldError[]): void {
  let kinds = 0;
  const podSelector = own(peer, 'podSelector');
  const namespaceSelector = own(peer, 'namespaceSelector');
  const ipBlock = own(peer, 'ipBlock');
  if (podSelector !== undefined && podSelector !== null) {
    kinds++;
    validateLabelSelector(podSelector, `${path}.podSelector`, errs);
  }
  if (namespaceSelector !== undefined && namespaceSelector !== null) {
    kinds++;
    validateLabelSelector(namespaceSelector, `${path}.namespaceSelector`, errs);
  }
  const block = objAt(ipBlock, `${path}.ipBlock`, errs);
  if (ipBlock !== undefined && ipBlock !== null) {
    kinds++;
    if (block) validateIPBlock(block, `${path}.ipBlock`, errs);
  }
  if (kinds === 0) errs.push(fieldErrors.required(path, 'must specify a peer'));
  else if (kinds > 1 && ipBlock !== undefined && ipBlock !== null)
    errs.push(fieldErrors.forbidden(path, 'may not specify both ipBlock and another peer'));
}

function validateRules(spec: Obj, direction: 'ingress' | 'egress', errs: FieldError[]): void {
  const peersField = direction === 'ingress' ? 'from' : 'to';
  for (const [i, r] of arrAt(own(spec, direction), `spec.${direction}`, errs).entries()) {
    const rulePath = `spec.${direction}[${i}]`;
    const rule = objAt(r, rulePath, errs);
    if (!rule) continue;
    for (const [j, port] of arrAt(own(rule, 'ports'), `${rulePath}.ports`, errs).entries()) {
      const o = objAt(port, `${rulePath}.ports[${j}]`, errs);
      if (o) validatePort(o, `${rulePath}.ports[${j}]`, errs);
    }
    for (const [j, peer] of arrAt(own(rule, peersField), `${rulePath}.${peersField}`, errs).entries()) {
      const o = objAt(peer, `${rulePath}.${peersField}[${j}]`, errs);
      if (o) validatePeer(o, `${rulePath}.${peersField}[${j}]`, errs);
    }
  }
}

export function validateNetworkPolicy(np: Obj, errs: FieldError[]): void {
  const spec = objAt(own(np, 'spec'), 'spec', errs) ?? {};
  validateLabelSelector(own(spec, 'podSelector'), 'spec.podSelector', errs);
  validateRules(spec, 'ingress', errs);
  validateRules(spec, 'egress', errs);
  const types = arrAt(own(spec, 'policyTypes'), 'spec.policyTypes', errs);
  if (types.length > NETWORK_POLICY_TYPES.length) {
    errs.push(fieldErrors.invalid('spec.policyTypes', types, 'may not specify more than two policyTypes'));
    return;
  }
  for (const [i, t] of types.entries()) {
    if (!(NETWORK_POLICY_TYPES as readonly unknown[]).includes(t))
      errs.push(fieldErrors.notSupported(`spec.policyTypes[${i}]`, t, [...NETWORK_POLICY_TYPES]));
  }
}
