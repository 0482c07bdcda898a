// The structured description of what kubit-proxy wants in the kernel: one nft
// table of chains (each an ordered list of rule texts), sets and verdict maps
// with their elements. The planner builds one; the differ compares two and
// writes the nft script that turns the first into the second. Keeping the
// elements as strings keyed by their nft text makes the comparison exact and
// cheap: two rulesets are equal exactly when the kernel would hold the same thing.

/** The table kube-proxy names `ip kube-proxy`; ours. */
export const TABLE_FAMILY = 'ip';
export const TABLE_NAME = 'kubit-proxy';

export interface BaseChainSpec {
  type: 'filter' | 'nat';
  hook: 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting';
  priority: number;
}

export interface ChainDef {
  /** Present for the chains hooked into the kernel's packet path. */
  base?: BaseChainSpec;
  /** Rule texts in order, as written after `add rule ip kubit-proxy <chain>`. */
  rules: string[];
}

export interface SetDef {
  /** nft type, e.g. "ipv4_addr". */
  type: string;
  flags?: string[];
  /** Element timeout in seconds (affinity sets). */
  timeoutSeconds?: number;
  /**
   * The elements we own. A dynamic set (`flags dynamic`, filled by the packet
   * path's `update` statements) has none of ours: its contents are the kernel's.
   */
  elements: Set<string>;
}

export interface MapDef {
  /** nft type, e.g. "ipv4_addr . inet_proto . inet_service : verdict". */
  type: string;
  flags?: string[];
  /** key text → value text ("10.96.0.10 . tcp . 53" → "goto service-…"). */
  elements: Map<string, string>;
}

export interface Ruleset {
  chains: Map<string, ChainDef>;
  sets: Map<string, SetDef>;
  maps: Map<string, MapDef>;
  /** What the planner programmed, for metrics and logs. */
  stats: { servicePorts: number; endpoints: number };
  /**
   * Each UDP service port's addresses and the endpoints it sends to, so that the
   * proxy can delete conntrack entries of endpoints that went (not kernel state: the differ ignores it).
   */
  udp: Map<string, UdpServicePort>;
}

export interface UdpServicePort {
  /** Cluster IP, LB ingress and external IPs. */
  ips: string[];
  nodePort?: number;
  /** Endpoint addresses traffic may be sent to. */
  endpointIPs: string[];
}

export function emptyRuleset(): Ruleset {
  return {
    chains: new Map(),
    sets: new Map(),
    maps: new Map(),
    stats: { servicePorts: 0, endpoints: 0 },
    udp: new Map(),
  };
}

const T = `${TABLE_FAMILY} ${TABLE_NAME}`;
export const tableRef = T;

export function chainDecl(name: string, c: ChainDef): string {
  if (!c.base) return `add chain ${T} ${name}`;
  const { type, hook, priority } = c.base;
  return `add chain ${T} ${name} { type ${type} hook ${hook} priority ${priority} ; }`;
}

export function setDecl(name: string, s: SetDef): string {
  const parts = [`type ${s.type} ;`];
  if (s.flags?.length) parts.push(`flags ${s.flags.join(',')} ;`);
  if (s.timeoutSeconds !== undefined) parts.push(`timeout ${s.timeoutSeconds}s ;`);
  return `add set ${T} ${name} { ${parts.join(' ')} }`;
}

export function mapDecl(name: string, m: MapDef): string {
  const parts = [`type ${m.type} ;`];
  if (m.flags?.length) parts.push(`flags ${m.flags.join(',')} ;`);
  return `add map ${T} ${name} { ${parts.join(' ')} }`;
}

export function ruleLine(chain: string, rule: string): string {
  return `add rule ${T} ${chain} ${rule}`;
}

/** Elements are written in batches: one nft statement per few hundred keeps the script small and fast to parse. */
const ELEMENT_BATCH = 500;

export function elementLines(verb: 'add' | 'delete', name: string, items: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < items.length; i += ELEMENT_BATCH) {
    out.push(`${verb} element ${T} ${name} { ${items.slice(i, i + ELEMENT_BATCH).join(', ')} }`);
  }
  return out;
}

export function mapItems(entries: Iterable<[string, string]>): string[] {
  return [...entries].map(([k, v]) => `${k} : ${v}`);
}

/**
 * The whole table, replaced in one transaction: `add table` (so the delete
 * never fails on a first start), `delete table` (whatever a previous run left,
 * duplicates included), then everything afresh. nft applies a script as one
 * transaction, so the packet path sees the old table or the new one, never none.
 */
export function fullScript(r: Ruleset): string {
  const lines: string[] = [
    `add table ${T}`,
    `delete table ${T}`,
    `add table ${T} { comment "rules for kubit-proxy" ; }`,
  ];
  lines.push(...declarations(r));
  for (const [name, c] of r.chains) for (const rule of c.rules) lines.push(ruleLine(name, rule));
  lines.push(...elementsOf(r));
  return `${lines.join('\n')}\n`;
}

/** Sets, maps and chains, declared before any rule or element refers to them. */
export function declarations(r: Ruleset): string[] {
  const lines: string[] = [];
  for (const [name, s] of r.sets) lines.push(setDecl(name, s));
  for (const [name, m] of r.maps) lines.push(mapDecl(name, m));
  for (const [name, c] of r.chains) lines.push(chainDecl(name, c));
  return lines;
}

function elementsOf(r: Ruleset): string[] {
  const lines: string[] = [];
  for (const [name, s] of r.sets)
    if (s.elements.size) lines.push(...elementLines('add', name, [...s.elements]));
  for (const [name, m] of r.maps)
    if (m.elements.size) lines.push(...elementLines('add', name, mapItems(m.elements)));
  return lines;
}

/** Removes the table (--cleanup): `add` first so that a missing table is not an error. */
export function deleteTableScript(): string {
  return `add table ${T}\ndelete table ${T}\n`;
}
