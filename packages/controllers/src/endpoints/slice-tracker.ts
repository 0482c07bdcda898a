// What the EndpointSlice controller wrote last, per Service, so it never acts
// on an informer cache that has not caught up with its own writes (a slice it
// just created would otherwise be created again). Kubernetes keeps the same
// tracker by generation; EndpointSlices have no generation here, so it keeps
// resourceVersions, which in Kubit (and etcd) are the store's revisions and grow.
import type { EndpointSlice } from '@kubit/api';

const DELETED = 'deleted';

const rvOf = (s: EndpointSlice) => BigInt(s.metadata?.resourceVersion || '0');

export class SliceTracker {
  /** Service uid → slice name → the resourceVersion written, or DELETED. */
  private readonly byService = new Map<string, Map<string, string>>();

  wrote(serviceUid: string, s: EndpointSlice): void {
    this.forService(serviceUid).set(s.metadata?.name ?? '', s.metadata?.resourceVersion ?? '0');
  }

  deleted(serviceUid: string, name: string): void {
    this.forService(serviceUid).set(name, DELETED);
  }

  /** Whether this informer event is the echo of our own write (no resync needed). */
  isOwnWrite(serviceUid: string, s: EndpointSlice, deletedEvent: boolean): boolean {
    const want = this.byService.get(serviceUid)?.get(s.metadata?.name ?? '');
    if (want === undefined) return false;
    if (deletedEvent) return want === DELETED;
    return want !== DELETED && BigInt(want) === rvOf(s);
  }

  /** The cache saw a slice deleted (by us or anyone): nothing more to wait for about it. */
  observedDeletion(serviceUid: string, name: string): void {
    this.byService.get(serviceUid)?.delete(name);
  }

  /**
   * Whether the cached slices are older than what was written: a slice written
   * is missing or has an older resourceVersion, or one deleted is still there.
   */
  stale(serviceUid: string, cached: readonly EndpointSlice[]): boolean {
    const m = this.byService.get(serviceUid);
    if (!m) return false;
    const byName = new Map(cached.map((s) => [s.metadata?.name ?? '', s]));
    for (const [name, want] of m) {
      const s = byName.get(name);
      if (want === DELETED) {
        if (s) return true;
        continue;
      }
      if (!s || rvOf(s) < BigInt(want)) return true;
    }
    return false;
  }

  forget(serviceUid: string): void {
    this.byService.delete(serviceUid);
  }

  private forService(uid: string): Map<string, string> {
    let m = this.byService.get(uid);
    if (!m) {
      m = new Map();
      this.byService.set(uid, m);
    }
    return m;
  }
}
