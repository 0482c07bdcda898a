// The structured description of what kubit-proxy wants in the kernel: one nft
// table of chains (each an ordered list of rule texts), sets and verdict maps
// with their elements. The planner builds one; the differ compares two and
// writes the nft script that turns the first into the second. Keeping the
// elements as strings keyed by their nft text makes the comparison exact and
// cheap: two rulesets are equal exactly when the kernel would hold the same thing.

/** The table kube-proxy names `ip kube-proxy`; ours (--nft-table: several clusters on one machine each have one). */
export const TABLE_FAMILY = 'ip';
export const TABLE_NAME = 'kubit-proxy';

/** `ip <name>`, as nft statements name a table. */
export function tableRef(name: string): string {
  return `${TABLE_FAMILY} ${name}`;
}

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
  /** The table's name (its family is TABLE_FAMILY). */
  table: string;
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

export function emptyRuleset(table: string = TABLE_NAME): Ruleset {
  return {
    table,
    chains: new Map(),
    sets: new Map(),
    maps: new Map(),
    stats: { servicePorts: 0, endpoints: 0 },
    udp: new Map(),
  };
}

export function chainDecl(t: string, name: string, c: ChainDef): string {
  if (!c.base) return `add chain ${t} ${name}`;
  const { type, hook, priority } = c.base;
  return `add chain ${t} ${name} { type ${type} hook ${hook} priority ${priority} ; }`;
}

/** A set's declaration without its table and name: equal exactly when two sets are declared alike. */
export function setSpec(s: SetDef): string {
  const parts = [`type ${s.type} ;`];
  if (s.flags?.length) parts.push(`flags ${s.flags.join(',')} ;`);
  if (s.timeoutSeconds !== undefined) parts.push(`timeout ${s.timeoutSeconds}s ;`);
  return parts.join(' ');
}

export function setDecl(t: string, name: string, s: SetDef): string {
  return `add set ${t} ${name} { ${setSpec(s)} }`;
}

/** A map's declaration without its table and name. */
export function mapSpec(m: MapDef): string {
  const parts = [`type ${m.type} ;`];
  if (m.flags?.length) parts.push(`flags ${m.flags.join(',')} ;`);
  return parts.join(' ');
}

export function mapDecl(t: string, name: string, m: MapDef): string {
  return `add map ${t} ${name} { ${mapSpec(m)} }`;
}

export function ruleLine(t: string, chain: string, rule: string): string {
  return `add rule ${t} ${chain} ${rule}`;
}

/** Elements are written in batches: one nft statement per few hundred keeps the script small and fast to parse. */
const ELEMENT_BATCH = 500;

export function elementLines(verb: 'add' | 'delete', t: string, name: string, items: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < items.length; i += ELEMENT_BATCH) {
    out.push(`${verb} element ${t} ${name} { ${items.slice(i, i + ELEMENT_BATCH).join(', ')} }`);
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
  const t = tableRef(r.table);
  const lines: string[] = [
    `add table ${t}`,
    `delete table ${t}`,
    `add table ${t} { comment "rules for kubit-proxy" ; }`,
  ];
  lines.push(...declarations(r));
  for (const [name, c] of r.chains) for (const rule of c.rules) lines.push(ruleLine(t, name, rule));
  lines.push(...elementsOf(r));
  return `${lines.join('\n')}\n`;
}

/** Sets, maps and chains, declared before any rule or element refers to them. */
export function declarations(r: Ruleset): string[] {
  const t = tableRef(r.table);
  const lines: string[] = [];
  for (const [name, s] of r.sets) lines.push(setDecl(t, name, s));
  for (const [name, m] of r.maps) lines.push(mapDecl(t, name, m));
  for (const [name, c] of r.chains) lines.push(chainDecl(t, name, c));
  return lines;
}

function elementsOf(r: Ruleset): string[] {
  const t = tableRef(r.table);
  const lines: string[] = [];
  for (const [name, s] of r.sets)
    if (s.elements.size) lines.push(...elementLines('add', t, name, [...s.elements]));
  for (const [name, m] of r.maps)
    if (m.elements.size) lines.push(...elementLines('add', t, name, mapItems(m.elements)));
  return lines;
}

/** Removes the table (--cleanup): `add` first so that a missing table is not an error. */
export function deleteTableScript(table: string = TABLE_NAME): string {
  const t = tableRef(table);
  return `add table ${t}\ndelete table ${t}\n`;
}
