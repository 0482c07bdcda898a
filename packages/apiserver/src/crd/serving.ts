// Serving CustomResourceDefinitions: the apiserver watches its own CRD cache
// and, for each CRD, adds a KindDef per served version to the KindRegistry
// (with one watch cache for the CRD's storage), then marks it NamesAccepted
// and Established. A CRD being deleted stops being served, its objects are
// deleted from the store, and its cleanup finalizer is removed, which ends it.
import { CRD_CLEANUP_FINALIZER } from '@kubit/api';
import type { Logger } from '@kubit/daemon';
import type { KindRegistry } from '../kinds/index.js';
import { arr, type KindDef, obj, str } from '../kinds/types.js';
import { nowRfc3339 } from '../objects.js';
import type { KObject, Store } from '../storage.js';
import type { Subscription, WatchCache } from '../watchcache.js';
import { WatchCache as Cache } from '../watchcache.js';
import { crdStorageResource, kindsOfCrd } from './kind.js';

interface Served {
  /** The spec it was built from: a change rebuilds the kinds. */
  spec: string;
  defs: KindDef[];
  storageResource: string;
}

type Condition = {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime?: string;
};

const ESTABLISHED: Condition[] = [
  { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found' },
  {
    type: 'Established',
    status: 'True',
    reason: 'InitialNamesAccepted',
    message: 'the initial names have been accepted',
  },
];
const TERMINATING: Condition = {
  type: 'Terminating',
  status: 'True',
  reason: 'InstanceDeletionInProgress',
  message: 'CustomResource deletion is in progress',
};

export class CrdServing {
  private readonly served = new Map<string, Served>();
  private sub: Subscription | undefined;
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly kinds: KindRegistry,
    private readonly caches: Map<string, WatchCache>,
    private readonly log: Logger,
    private readonly cacheOptions: { historySize?: number } = {},
  ) {}

  private get crdCache(): WatchCache {
    const c = this.caches.get('customresourcedefinitions');
    if (!c) throw new Error('no watch cache for customresourcedefinitions');
    return c;
  }

  /** Serves the CRDs the cache holds now (resolved once they are served), then follows changes. */
  async start(): Promise<void> {
    if (this.sub) return;
    this.stopped = false;
    // The CRDs there are now, then every change after them: read and subscribe in the
    // same turn, so nothing falls between. (Waiting for a first batch of events would
    // wait for ever on a cluster that has no CRD yet.)
    const current = [...this.crdCache.objects.values()];
    const sub = this.crdCache.subscribe(() => true, 'now', false);
    this.sub = sub;
    for (const crd of current) await this.handle('ADDED', crd);
    void this.loop(sub);
  }

  private async loop(sub: Subscription): Promise<void> {
    while (!sub.closed) {
      const evs = await sub.next();
      for (const ev of evs) {
        this.chain = this.chain.then(() => this.handle(ev.type, ev.object));
      }
      await this.chain;
    }
    if (!this.stopped) {
      // The cache closed us (fell behind, reloaded): start over from its current objects.
      this.sub = undefined;
      await this.start().catch((err: unknown) =>
        this.log.warn({ err: String(err) }, 'crd serving restart failed'),
      );
    }
  }

  private async handle(type: string, crd: KObject): Promise<void> {
    const name = str(crd.metadata?.name);
    try {
      if (type === 'DELETED') await this.unserve(name);
      else if (crd.metadata?.deletionTimestamp) await this.finalize(crd);
      else await this.serve(crd);
    } catch (err) {
      this.log.warn(
        { crd: name, err: (err as Error).message },
        'customresourcedefinition: reconcile failed; retrying',
      );
      setTimeout(() => {
        const cur = this.crdCache.objects.get(`/registry/customresourcedefinitions/${name}`);
        if (cur && !this.stopped) this.chain = this.chain.then(() => this.handle('MODIFIED', cur));
      }, 1000).unref();
    }
  }

  private async serve(crd: KObject): Promise<void> {
    const name = str(crd.metadata?.name);
    const spec = JSON.stringify(crd.spec);
    const have = this.served.get(name);
    if (!have || have.spec !== spec) {
      const spec0 = obj(crd.spec);
      const sr = crdStorageResource(str(spec0.group), str(obj(spec0.names).plural));
      const defs = kindsOfCrd(crd);
      // A resource another kind already serves (a built-in one) is not taken over.
      const taken = defs.find((d) => {
        const other = this.kinds.lookup(d.group, d.version, d.resource);
        return other !== undefined && !have?.defs.includes(other);
      });
      if (taken) {
        await this.writeStatus(name, (status) => {
          status.conditions = withConditions(arr(status.conditions).map(obj) as Condition[], [
            {
              type: 'NamesAccepted',
              status: 'False',
              reason: 'PluralConflict',
              message: `"${taken.resource}" is already in use`,
            },
            {
              type: 'Established',
              status: 'False',
              reason: 'NotAccepted',
              message: 'not all names are accepted',
            },
          ]);
        });
        return;
      }
      if (!this.caches.has(sr)) {
        const cache = new Cache(this.store, `/registry/${sr}/`, this.log, this.cacheOptions);
        await cache.start();
        this.caches.set(sr, cache);
      }
      if (have) for (const d of have.defs) this.kinds.remove(d);
      if (have && have.storageResource !== sr) await this.dropCache(have.storageResource);
      for (const d of defs) this.kinds.add(d);
      this.served.set(name, { spec, defs, storageResource: sr });
      this.log.info({ crd: name, versions: defs.map((d) => d.version) }, 'serving custom resource');
    }
    await this.writeStatus(name, (status) => {
      const storage = arr(obj(crd.spec).versions)
        .map(obj)
        .find((v) => v.storage === true);
      const stored = arr(status.storedVersions).map(str);
      if (storage && !stored.includes(str(storage.name))) stored.push(str(storage.name));
      status.storedVersions = stored;
      status.acceptedNames = acceptedNames(crd);
      status.conditions = withConditions(arr(status.conditions).map(obj) as Condition[], ESTABLISHED);
    });
  }

  private async dropCache(sr: string): Promise<void> {
    const c = this.caches.get(sr);
    this.caches.delete(sr);
    await c?.stop();
  }

  private async unserve(name: string): Promise<void> {
    const have = this.served.get(name);
    if (!have) return;
    for (const d of have.defs) this.kinds.remove(d);
    this.served.delete(name);
    await this.dropCache(have.storageResource);
    this.log.info({ crd: name }, 'stopped serving custom resource');
  }

  /** The cleanup finalizer's work: stop serving, delete every object, then let the CRD go. */
  private async finalize(crd: KObject): Promise<void> {
    const name = str(crd.metadata?.name);
    if (!arr(crd.metadata?.finalizers).includes(CRD_CLEANUP_FINALIZER)) return;
    await this.writeStatus(name, (status) => {
      status.conditions = withConditions(arr(status.conditions).map(obj) as Condition[], [TERMINATING]);
    });
    await this.unserve(name);
    const spec = obj(crd.spec);
    const prefix = `/registry/${crdStorageResource(str(spec.group), str(obj(spec.names).plural))}/`;
    for (;;) {
      const { entries } = await this.store.rawRange(prefix);
      if (entries.length === 0) break;
      for (const e of entries) await this.store.rawDelete(e.key, e.modRevision);
    }
    const key = `/registry/customresourcedefinitions/${name}`;
    for (let attempt = 0; attempt < 10; attempt++) {
      const cur = await this.store.get(key);
      if (!cur) return;
      const m = cur.obj.metadata ?? {};
      const fins = arr(m.finalizers)
        .map(str)
        .filter((f) => f !== CRD_CLEANUP_FINALIZER);
      const w =
        fins.length === 0
          ? await this.store.delete(key, cur.rev)
          : await this.store.update(key, { ...cur.obj, metadata: { ...m, finalizers: fins } }, cur.rev);
      if (w.ok) return;
    }
    throw new Error('the CRD kept changing while its finalizer was removed');
  }

  /** A guarded write of the CRD's status, skipped when nothing changes. */
  private async writeStatus(name: string, change: (status: Record<string, unknown>) => void): Promise<void> {
    const key = `/registry/customresourcedefinitions/${name}`;
    for (let attempt = 0; attempt < 10; attempt++) {
      const cur = await this.store.get(key);
      if (!cur) return;
      const before = JSON.stringify(cur.obj.status ?? {});
      const status = structuredClone(obj(cur.obj.status));
      change(status);
      if (JSON.stringify(status) === before) return;
      const w = await this.store.update(key, { ...cur.obj, status }, cur.rev);
      if (w.ok) return;
    }
    throw new Error('the CRD kept changing while its status was written');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.sub?.close('server stopping');
    this.sub = undefined;
    await this.chain.catch(() => undefined);
    for (const s of this.served.values()) await this.dropCache(s.storageResource);
  }
}

function acceptedNames(crd: KObject): Record<string, unknown> {
  const n = obj(obj(crd.spec).names);
  return Object.fromEntries(
    ['plural', 'singular', 'shortNames', 'kind', 'listKind', 'categories']
      .filter((k) => n[k] !== undefined)
      .map((k) => [k, n[k]]),
  );
}

/** Sets conditions by type, keeping the transition time of those whose status did not change. */
function withConditions(current: Condition[], set: Condition[]): Condition[] {
  const out = [...current];
  for (const c of set) {
    const i = out.findIndex((o) => o.type === c.type);
    if (i >= 0 && out[i].status === c.status && out[i].reason === c.reason) continue;
    const next = { ...c, lastTransitionTime: nowRfc3339() };
    if (i >= 0) out[i] = next;
    else out.push(next);
  }
  return out;
}
