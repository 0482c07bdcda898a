// The incremental plan: the ruleset planRuleset would plan, kept up to date one
// Service at a time. It holds each Service's ServicePlan and who contributed what,
// so that re-planning a Service (planService, pure) replaces exactly its part and
// records what that changed as a RulesetDelta, the differ's input: an incremental
// sync costs the changed Services, not the whole ruleset. Deterministic bookkeeping,
// no I/O and no clock: after any sequence of updates, `ruleset` is what planRuleset
// plans from the same Services and slices (test/incremental.test.ts checks it).
//
// Where Services share something, the outcome is planRuleset's: an element of a
// shared set (cluster-ips, hairpin-ips) is there while any Service has it; a key of a
// shared map, or a chain or set name, that several Services claim holds the value of
// the last of them in key order (compareKeys), as planRuleset's merge leaves it.
import type { EndpointSlice, Service } from '@kubit/api';
import { type Change, emptyDelta, type RulesetDelta, sameChain } from './differ.js';
import {
  compareKeys,
  type PlannerOptions,
  planService,
  type ServicePlan,
  serviceKey,
  skeleton,
  sliceServiceKey,
} from './planner.js';
import { type ChainDef, type Ruleset, type SetDef, setSpec, type UdpServicePort } from './ruleset.js';

/** Values several owners (Service keys) may give one key; the greatest owner in key order wins. */
class Claims<V> {
  private readonly byKey = new Map<string, { owner: string; value: V; others?: Map<string, V> }>();

  get(key: string): V | undefined {
    return this.byKey.get(key)?.value;
  }

  /** Sets owner's claim; returns the key's value after. */
  put(key: string, owner: string, value: V): V {
    const e = this.byKey.get(key);
    if (!e) {
      this.byKey.set(key, { owner, value });
      return value;
    }
    if (e.owner === owner) {
      e.value = value;
    } else if (compareKeys(owner, e.owner) > 0) {
      e.others ??= new Map();
      e.others.set(e.owner, e.value);
      e.others.delete(owner);
      e.owner = owner;
      e.value = value;
    } else {
      e.others ??= new Map();
      e.others.set(owner, value);
    }
    return e.value;
  }

  /** Drops owner's claim; returns the key's value after (undefined: nobody claims it). */
  remove(key: string, owner: string): V | undefined {
    const e = this.byKey.get(key);
    if (!e) return undefined;
    if (e.owner !== owner) {
      e.others?.delete(owner);
      return e.value;
    }
    if (!e.others?.size) {
      this.byKey.delete(key);
      return undefined;
    }
    let next: string | undefined;
    for (const o of e.others.keys()) if (next === undefined || compareKeys(o, next) > 0) next = o;
    e.owner = next as string;
    e.value = e.others.get(e.owner) as V;
    e.others.delete(e.owner);
    return e.value;
  }
}

/** Records the first `before` and the last `after` of each key touched (nothing when not recording). */
function record<T>(
  into: Map<string, Change<T>> | undefined,
  key: string,
  before: T | undefined,
  after: T | undefined,
) {
  if (!into) return;
  const c = into.get(key);
  if (c) c.after = after;
  else into.set(key, { before, after });
}

const sameSet = (a: SetDef, b: SetDef) =>
  setSpec(a) === setSpec(b) &&
  a.elements.size === b.elements.size &&
  [...a.elements].every((e) => b.elements.has(e));

const sameUdp = (a: UdpServicePort, b: UdpServicePort) =>
  a.nodePort === b.nodePort &&
  a.ips.length === b.ips.length &&
  a.ips.every((x, i) => x === b.ips[i]) &&
  a.endpointIPs.length === b.endpointIPs.length &&
  a.endpointIPs.every((x, i) => x === b.endpointIPs[i]);

/** What an update changed: the delta for the differ, and the UDP service ports that changed (for conntrack). */
export interface IncrementalChange {
  delta: RulesetDelta;
  udp: Map<string, Change<UdpServicePort>>;
}

/** The change being recorded: shared-set elements as present before/after, turned into added/removed at the end. */
interface Journal extends IncrementalChange {
  elements: Map<string, Map<string, Change<true>>>;
}

export class IncrementalPlan {
  /** The ruleset as planRuleset would plan it; updated in place. */
  readonly ruleset: Ruleset;
  private readonly plans = new Map<string, ServicePlan>();
  private readonly chains = new Claims<ChainDef>();
  private readonly sets = new Claims<SetDef>();
  private readonly mapElements = new Map<string, Claims<string>>();
  /** Shared set → element → how many Services have it. */
  private readonly setElements = new Map<string, Map<string, number>>();
  private readonly udp = new Claims<UdpServicePort>();

  constructor(private readonly o: PlannerOptions) {
    this.ruleset = skeleton(o);
    for (const name of this.ruleset.maps.keys()) this.mapElements.set(name, new Claims());
    for (const name of this.ruleset.sets.keys()) this.setElements.set(name, new Map());
  }

  /** How many Services have rules. */
  get size(): number {
    return this.plans.size;
  }

  /** Plans every Service from scratch (in key order, so the chains are listed as planRuleset lists them). */
  static full(services: Service[], slices: EndpointSlice[], o: PlannerOptions): IncrementalPlan {
    const plan = new IncrementalPlan(o);
    const bySvc = new Map<string, EndpointSlice[]>();
    for (const s of slices) {
      const key = sliceServiceKey(s);
      if (key === undefined) continue;
      const list = bySvc.get(key);
      if (list) list.push(s);
      else bySvc.set(key, [s]);
    }
    const sorted = services
      .map((svc) => ({ svc, key: serviceKey(svc) }))
      .sort((a, b) => compareKeys(a.key, b.key));
    for (const { svc, key } of sorted) plan.set(key, planService(svc, bySvc.get(key) ?? [], plan.o));
    return plan;
  }

  /**
   * Re-plans the Services with these keys from their current objects (`service`
   * undefined: deleted) and slices; returns what changed.
   */
  update(
    keys: Iterable<string>,
    service: (key: string) => Service | undefined,
    slicesFor: (key: string) => EndpointSlice[],
  ): IncrementalChange {
    const j: Journal = { delta: emptyDelta(), udp: new Map(), elements: new Map() };
    for (const key of keys) {
      const svc = service(key);
      this.set(key, svc ? planService(svc, slicesFor(key), this.o) : undefined, j);
    }
    return settle(j);
  }

  /** Replaces the plan of Service `key`, recording into `j` when given. */
  private set(key: string, next: ServicePlan | undefined, j?: Journal): void {
    const prev = this.plans.get(key);
    if (!prev && !next) return;
    const r = this.ruleset;
    const d = j?.delta;

    for (const name of prev?.chains.keys() ?? []) {
      if (next?.chains.has(name)) continue;
      const before = r.chains.get(name);
      const after = this.chains.remove(name, key);
      if (after) r.chains.set(name, after);
      else r.chains.delete(name);
      record(d?.chains, name, before, after);
    }
    for (const [name, c] of next?.chains ?? []) {
      const before = r.chains.get(name);
      const after = this.chains.put(name, key, c);
      r.chains.set(name, after);
      record(d?.chains, name, before, after);
    }

    for (const name of prev?.sets.keys() ?? []) {
      if (next?.sets.has(name)) continue;
      const before = r.sets.get(name);
      const after = this.sets.remove(name, key);
      if (after) r.sets.set(name, after);
      else r.sets.delete(name);
      record(d?.sets, name, before, after);
    }
    for (const [name, s] of next?.sets ?? []) {
      const before = r.sets.get(name);
      const after = this.sets.put(name, key, s);
      r.sets.set(name, after);
      record(d?.sets, name, before, after);
    }

    for (const [name, counts] of this.setElements) {
      const was = prev?.setElements.get(name);
      const now = next?.setElements.get(name);
      if (!was && !now) continue;
      const elements = r.sets.get(name)?.elements;
      if (!elements) continue;
      let e = j?.elements.get(name);
      if (j && !e) {
        e = new Map();
        j.elements.set(name, e);
      }
      for (const el of now ?? []) {
        if (was?.has(el)) continue;
        const n = counts.get(el) ?? 0;
        counts.set(el, n + 1);
        if (n === 0) {
          elements.add(el);
          record(e, el, undefined, true);
        }
      }
      for (const el of was ?? []) {
        if (now?.has(el)) continue;
        const n = (counts.get(el) ?? 0) - 1;
        if (n > 0) counts.set(el, n);
        else {
          counts.delete(el);
          elements.delete(el);
          record(e, el, true, undefined);
        }
      }
    }

    for (const [name, claims] of this.mapElements) {
      const was = prev?.mapElements.get(name);
      const now = next?.mapElements.get(name);
      if (!was && !now) continue;
      const elements = r.maps.get(name)?.elements;
      if (!elements) continue;
      let changes = d?.mapElements.get(name);
      if (d && !changes) {
        changes = new Map();
        d.mapElements.set(name, changes);
      }
      for (const k of was?.keys() ?? []) {
        if (now?.has(k)) continue;
        const before = elements.get(k);
        const after = claims.remove(k, key);
        if (after === undefined) elements.delete(k);
        else elements.set(k, after);
        record(changes, k, before, after);
      }
      for (const [k, v] of now ?? []) {
        const before = elements.get(k);
        const after = claims.put(k, key, v);
        elements.set(k, after);
        record(changes, k, before, after);
      }
    }

    for (const k of prev?.udp.keys() ?? []) {
      if (next?.udp.has(k)) continue;
      const before = r.udp.get(k);
      const after = this.udp.remove(k, key);
      if (after) r.udp.set(k, after);
      else r.udp.delete(k);
      record(j?.udp, k, before, after);
    }
    for (const [k, u] of next?.udp ?? []) {
      const before = r.udp.get(k);
      const after = this.udp.put(k, key, u);
      r.udp.set(k, after);
      record(j?.udp, k, before, after);
    }

    r.stats.servicePorts += (next?.stats.servicePorts ?? 0) - (prev?.stats.servicePorts ?? 0);
    r.stats.endpoints += (next?.stats.endpoints ?? 0) - (prev?.stats.endpoints ?? 0);
    if (next) this.plans.set(key, next);
    else this.plans.delete(key);
  }
}

/** The journal as a change: what came back to what it was dropped (a Service re-planned to the same rules). */
function settle(j: Journal): IncrementalChange {
  const d = j.delta;
  const c: IncrementalChange = { delta: d, udp: j.udp };
  for (const [name, changes] of j.elements) {
    const added: string[] = [];
    const removed: string[] = [];
    for (const [el, ch] of changes) {
      if (ch.before === ch.after) continue;
      (ch.after ? added : removed).push(el);
    }
    if (added.length || removed.length) d.setElements.set(name, { added, removed });
  }
  for (const [name, ch] of d.chains) {
    if (ch.before === ch.after || (ch.before && ch.after && sameChain(ch.before, ch.after)))
      d.chains.delete(name);
  }
  for (const [name, ch] of d.sets) {
    if (ch.before === ch.after || (ch.before && ch.after && sameSet(ch.before, ch.after)))
      d.sets.delete(name);
  }
  for (const [name, changes] of d.mapElements) {
    for (const [k, ch] of changes) if (ch.before === ch.after) changes.delete(k);
    if (!changes.size) d.mapElements.delete(name);
  }
  for (const [k, ch] of c.udp) {
    if (ch.before === ch.after || (ch.before && ch.after && sameUdp(ch.before, ch.after))) c.udp.delete(k);
  }
  return c;
}
