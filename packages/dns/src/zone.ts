// The cluster zone in memory: every Service's records indexed by owner name,
// kept up to date one Service at a time from the informers' events, so that a
// query is a map lookup. `lookup` decides each answer as the specification and
// RFC 2308 / RFC 8020 say: records, NODATA (the name exists, not with that
// type; the SOA in authority), NXDOMAIN (no such name), or "not ours" (forward).
import { type EndpointSlice, SERVICE_NAME_LABEL, type Service } from '@kubit/api';
import { ancestorsBelow, canonicalName, ipFromDashed, REVERSE_ZONE } from './names.js';
import { type OwnedRecord, type RecordData, serviceRecords } from './records.js';

/** The schema version of the specification this server implements (its §1). */
export const DNS_SCHEMA_VERSION = '1.0.1';

export interface ZoneOptions {
  /** The cluster domain, e.g. cluster.local. */
  zone: string;
  /** TTL of every record, and the SOA's minimum (so negative answers are cached as long). */
  ttl: number;
}

/** A record as it goes on the wire (dns-packet's answer shape). */
export type WireRecord =
  | { name: string; type: 'A' | 'CNAME' | 'PTR' | 'NS'; ttl: number; class: 'IN'; data: string }
  | { name: string; type: 'TXT'; ttl: number; class: 'IN'; data: string[] }
  | {
      name: string;
      type: 'SRV';
      ttl: number;
      class: 'IN';
      data: { priority: number; weight: number; port: number; target: string };
    }
  | {
      name: string;
      type: 'SOA';
      ttl: number;
      class: 'IN';
      data: {
        mname: string;
        rname: string;
        serial: number;
        refresh: number;
        retry: number;
        expire: number;
        minimum: number;
      };
    };

export type LookupResult =
  /** Not in the cluster zone (nor a reverse name we hold): ask the upstream resolvers. */
  | { kind: 'forward' }
  | {
      kind: 'answer';
      rcode: 'NOERROR' | 'NXDOMAIN';
      answers: WireRecord[];
      authorities: WireRecord[];
      additionals: WireRecord[];
      /** An ExternalName's target outside the zone, to be resolved upstream and appended. */
      chase?: { name: string; type: string };
    };

function serviceKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** The Service an EndpointSlice belongs to (its service-name label), or undefined. */
export function sliceServiceKey(slice: EndpointSlice): string | undefined {
  const svc = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
  const ns = slice.metadata?.namespace;
  return svc && ns ? serviceKey(ns, svc) : undefined;
}

export class ClusterZone {
  readonly zone: string;
  private readonly ttl: number;
  private readonly services = new Map<string, Service>();
  /** Service key → slice key → slice. */
  private readonly slices = new Map<string, Map<string, EndpointSlice>>();
  /** Owner name → records (with the Service that contributed each). */
  private readonly records = new Map<string, { source: string; record: RecordData }[]>();
  /** Names that own nothing but have names below them (empty non-terminals, RFC 8020: NODATA). */
  private readonly nonTerminals = new Map<string, number>();
  /** What each Service contributed, to take back on its next change. */
  private readonly contributed = new Map<string, OwnedRecord[]>();
  private serial = 1;
  /** Bumped on every change: answer caches keyed on it stay right. */
  generation = 0;

  constructor(o: ZoneOptions) {
    this.zone = canonicalName(o.zone);
    this.ttl = o.ttl;
  }

  upsertService(svc: Service): void {
    const ns = svc.metadata?.namespace;
    const name = svc.metadata?.name;
    if (!ns || !name) return;
    const key = serviceKey(ns, name);
    this.services.set(key, svc);
    this.rebuild(key);
  }

  deleteService(svc: Service): void {
    const ns = svc.metadata?.namespace;
    const name = svc.metadata?.name;
    if (!ns || !name) return;
    const key = serviceKey(ns, name);
    this.services.delete(key);
    this.rebuild(key);
  }

  upsertSlice(slice: EndpointSlice, previous?: EndpointSlice): void {
    // A slice relabelled to another Service leaves its old one.
    if (previous) {
      const oldKey = sliceServiceKey(previous);
      if (oldKey && oldKey !== sliceServiceKey(slice)) this.deleteSlice(previous);
    }
    const key = sliceServiceKey(slice);
    const sliceName = slice.metadata?.name;
    if (!key || !sliceName) return;
    let m = this.slices.get(key);
    if (!m) {
      m = new Map();
      this.slices.set(key, m);
    }
    m.set(sliceName, slice);
    this.rebuild(key);
  }

  deleteSlice(slice: EndpointSlice): void {
    const key = sliceServiceKey(slice);
    const sliceName = slice.metadata?.name;
    if (!key || !sliceName) return;
    const m = this.slices.get(key);
    if (!m?.delete(sliceName)) return;
    if (m.size === 0) this.slices.delete(key);
    this.rebuild(key);
  }

  /** How many owner names hold records (for a gauge). */
  get names(): number {
    return this.records.size;
  }

  private rebuild(key: string): void {
    const svc = this.services.get(key);
    const recs = svc ? serviceRecords(svc, [...(this.slices.get(key)?.values() ?? [])], this.zone) : [];
    const before = this.contributed.get(key) ?? [];
    // Most updates (status, annotations, a slice's unrelated fields) change no record:
    // then the answer cache, which a new generation empties, stays warm.
    if (JSON.stringify(before) === JSON.stringify(recs)) return;
    for (const r of before) this.remove(key, r);
    this.contributed.delete(key);
    for (const r of recs) this.add(key, r);
    if (recs.length > 0) this.contributed.set(key, recs);
    this.generation++;
    this.serial = (this.serial + 1) >>> 0 || 1;
  }

  private add(source: string, r: OwnedRecord): void {
    let list = this.records.get(r.name);
    if (!list) {
      list = [];
      this.records.set(r.name, list);
    }
    const { name: _owner, ...record } = r;
    list.push({ source, record: record as RecordData });
    for (const a of this.ancestorsOf(r.name)) this.nonTerminals.set(a, (this.nonTerminals.get(a) ?? 0) + 1);
  }

  private remove(source: string, r: OwnedRecord): void {
    const list = this.records.get(r.name);
    if (list) {
      const i = list.findIndex((e) => e.source === source && sameRecord(e.record, r));
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0) this.records.delete(r.name);
    }
    for (const a of this.ancestorsOf(r.name)) {
      const n = (this.nonTerminals.get(a) ?? 0) - 1;
      if (n <= 0) this.nonTerminals.delete(a);
      else this.nonTerminals.set(a, n);
    }
  }

  private ancestorsOf(name: string): string[] {
    if (name.endsWith(`.${REVERSE_ZONE}`)) return ancestorsBelow(name, REVERSE_ZONE);
    return ancestorsBelow(name, this.zone);
  }

  private wire(name: string, r: RecordData): WireRecord {
    return { name, ttl: this.ttl, class: 'IN', ...r } as WireRecord;
  }

  /** The zone's SOA (also the authority of every negative answer). */
  soa(): WireRecord {
    return {
      name: this.zone,
      type: 'SOA',
      ttl: this.ttl,
      class: 'IN',
      data: {
        mname: `ns.dns.${this.zone}`,
        rname: `hostmaster.${this.zone}`,
        serial: this.serial,
        refresh: 7200,
        retry: 1800,
        expire: 86400,
        minimum: this.ttl,
      },
    };
  }

  private answer(answers: WireRecord[], additionals: WireRecord[] = []): LookupResult {
    if (answers.length === 0) return this.negative('NOERROR');
    return { kind: 'answer', rcode: 'NOERROR', answers, authorities: [], additionals };
  }

  private negative(rcode: 'NOERROR' | 'NXDOMAIN'): LookupResult {
    return { kind: 'answer', rcode, answers: [], authorities: [this.soa()], additionals: [] };
  }

  /**
   * The answer to `qname` (as the client spelled it: answers echo its case) and
   * `qtype` ("A", "SRV", ... or "ANY").
   */
  lookup(qname: string, qtype: string): LookupResult {
    const name = canonicalName(qname);
    const owner = qname.endsWith('.') ? qname.slice(0, -1) : qname;
    if (name.endsWith(`.${REVERSE_ZONE}`)) {
      // PTRs for cluster IPs and headless endpoints; any other reverse name is
      // the upstream's (the default Corefile's `fallthrough in-addr.arpa`).
      const list = this.records.get(name);
      if (!list) return { kind: 'forward' };
      return this.answer(this.matching(owner, list, qtype));
    }
    if (!(name === this.zone || name.endsWith(`.${this.zone}`))) return { kind: 'forward' };
    if (name === this.zone) {
      const out: WireRecord[] = [];
      if (qtype === 'SOA' || qtype === 'ANY') out.push({ ...this.soa(), name: owner });
      if (qtype === 'NS' || qtype === 'ANY') {
        out.push({ name: owner, type: 'NS', ttl: this.ttl, class: 'IN', data: `ns.dns.${this.zone}` });
      }
      return this.answer(out);
    }
    if (name === `dns-version.${this.zone}`) {
      // 2.2: the schema version as a TXT record.
      if (qtype !== 'TXT' && qtype !== 'ANY') return this.negative('NOERROR');
      return this.answer([
        { name: owner, type: 'TXT', ttl: this.ttl, class: 'IN', data: [DNS_SCHEMA_VERSION] },
      ]);
    }
    const pod = this.podRecord(name, owner, qtype);
    if (pod) return pod;
    const list = this.records.get(name);
    if (list) {
      const cname = list.find((e) => e.record.type === 'CNAME');
      if (cname && qtype !== 'CNAME') return this.followCname(owner, cname.record.data as string, qtype);
      const answers = this.matching(owner, list, qtype);
      return this.answer(answers, qtype === 'SRV' ? this.targetsOf(answers) : []);
    }
    // svc.<zone> and pod.<zone> always exist (their children are what the zone is for).
    if (this.nonTerminals.has(name) || name === `svc.${this.zone}` || name === `pod.${this.zone}`) {
      return this.negative('NOERROR');
    }
    return this.negative('NXDOMAIN');
  }

  private matching(owner: string, list: { record: RecordData }[], qtype: string): WireRecord[] {
    const out: WireRecord[] = [];
    for (const e of list)
      if (qtype === 'ANY' || e.record.type === qtype) out.push(this.wire(owner, e.record));
    return out;
  }

  /** The A records of SRV targets, for the additional section (2.3.2, 2.4.2 "may include"). */
  private targetsOf(srvs: WireRecord[]): WireRecord[] {
    const out: WireRecord[] = [];
    const seen = new Set<string>();
    for (const s of srvs) {
      if (s.type !== 'SRV' || seen.has(s.data.target)) continue;
      seen.add(s.data.target);
      for (const e of this.records.get(s.data.target) ?? []) {
        if (e.record.type === 'A') out.push(this.wire(s.data.target, e.record));
      }
    }
    return out;
  }

  /** 2.5: the CNAME, then the target's records: ours when it is in the zone, else the upstream's. */
  private followCname(owner: string, target: string, qtype: string): LookupResult {
    const cname: WireRecord = { name: owner, type: 'CNAME', ttl: this.ttl, class: 'IN', data: target };
    if (target === this.zone || target.endsWith(`.${this.zone}`)) {
      const inner = this.records.get(target);
      const more =
        inner && !inner.some((e) => e.record.type === 'CNAME') ? this.matching(target, inner, qtype) : [];
      return {
        kind: 'answer',
        rcode: 'NOERROR',
        answers: [cname, ...more],
        authorities: [],
        additionals: [],
      };
    }
    return {
      kind: 'answer',
      rcode: 'NOERROR',
      answers: [cname],
      authorities: [],
      additionals: [],
      chase: { name: target, type: qtype },
    };
  }

  /** 2.6 (deprecated, still required): `<a>-<b>-<c>-<d>.<ns>.pod.<zone>` is A <a>.<b>.<c>.<d>. */
  private podRecord(name: string, owner: string, qtype: string): LookupResult | undefined {
    const suffix = `.pod.${this.zone}`;
    if (!name.endsWith(suffix)) return undefined;
    const labels = name.slice(0, -suffix.length).split('.');
    if (labels.length === 1) return this.negative('NOERROR'); // <ns>.pod.<zone>: a non-terminal
    if (labels.length !== 2) return this.negative('NXDOMAIN');
    const ip = ipFromDashed(labels[0]);
    if (!ip) return this.negative('NXDOMAIN');
    if (qtype !== 'A' && qtype !== 'ANY') return this.negative('NOERROR');
    return this.answer([{ name: owner, type: 'A', ttl: this.ttl, class: 'IN', data: ip }]);
  }
}

function sameRecord(a: RecordData, b: RecordData): boolean {
  return a.type === b.type && JSON.stringify(a.data) === JSON.stringify(b.data);
}
