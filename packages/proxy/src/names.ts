// Stable, nft-safe chain and set names, derived as kube-proxy's nftables mode
// derives them: a short hash of the full name in front (so two names that differ
// only near the end stay distinct and visibly different, and a truncated name
// stays unique), then the readable name. nft names may hold [A-Za-z0-9_./-],
// which every Kubernetes namespace, name, port name and IPv4 address fits.
import { createHash } from 'node:crypto';

/** Longest base name; with the longest prefix ("affinity-") well inside nft's 256-byte limit. */
const BASE_MAX = 240;

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** The first 8 characters of the base32 (RFC 4648) encoding of sha256(name). */
function hash8(name: string): string {
  const h = createHash('sha256').update(name).digest();
  // 8 base32 characters are 40 bits: the first five bytes.
  let bits = 0n;
  for (let i = 0; i < 5; i++) bits = (bits << 8n) | BigInt(h[i]);
  let out = '';
  for (let i = 7; i >= 0; i--) out += B32[Number((bits >> BigInt(i * 5)) & 31n)];
  return out;
}

export function hashAndTruncate(name: string): string {
  const full = `${hash8(name)}-${name}`;
  return full.length > BASE_MAX ? `${full.slice(0, BASE_MAX - 3)}...` : full;
}

export interface ServicePortId {
  namespace: string;
  name: string;
  /** "tcp", "udp" or "sctp" */
  protocol: string;
  /** The Service port's name, or its number when unnamed (kube-proxy's readable form). */
  port: string;
}

function portBase(sp: ServicePortId): string {
  return `${sp.namespace}/${sp.name}/${sp.protocol}/${sp.port}`;
}

/** All endpoints of a service port (the Cluster policy). */
export function serviceChain(sp: ServicePortId): string {
  return `service-${hashAndTruncate(portBase(sp))}`;
}

/** Only this node's endpoints (a Local policy). */
export function localChain(sp: ServicePortId): string {
  return `local-${hashAndTruncate(portBase(sp))}`;
}

/** Node ports and load-balancer IPs enter here: masquerade choice, then the right endpoint chain. */
export function externalChain(sp: ServicePortId): string {
  return `external-${hashAndTruncate(portBase(sp))}`;
}

function endpointBase(sp: ServicePortId, ip: string, port: number): string {
  return `${portBase(sp)}__${ip}/${port}`;
}

/** The ClientIP affinity set of one endpoint: client addresses recently sent to it. */
export function affinitySet(sp: ServicePortId, ip: string, port: number): string {
  return `affinity-${hashAndTruncate(endpointBase(sp, ip, port))}`;
}
