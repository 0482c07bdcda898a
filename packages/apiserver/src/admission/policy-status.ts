// The status of ValidatingAdmissionPolicies: Kubernetes' type-checking controller
// (in kube-apiserver) writes status.observedGeneration once it has checked a
// generation of the policy. Here the expressions are checked as the policy is
// written, and the write itself sets observedGeneration (kinds/admissionpolicies.ts).
// This is the fallback for a policy whose status says otherwise (a status update
// that set another observedGeneration, an object written past the API): it gets its
// observedGeneration (and an empty typeChecking: no warnings) once the cache shows it.
import type { Logger } from '@kubit/daemon';
import { obj, str } from '../kinds/types.js';
import type { KObject, Store } from '../storage.js';
import type { Subscription, WatchCache } from '../watchcache.js';

export class PolicyStatus {
  private sub: Subscription | undefined;
  private stopped = false;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly cache: WatchCache,
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  start(): void {
    if (this.sub) return;
    this.stopped = false;
    // The policies there are now, then every change: read and subscribe in the same turn.
    const current = [...this.cache.objects.values()];
    const sub = this.cache.subscribe(() => true, 'now', false);
    this.sub = sub;
    for (const p of current) this.enqueue(p);
    void this.loop(sub);
  }

  private enqueue(p: KObject): void {
    this.chain = this.chain.then(() =>
      this.observe(p).catch((err: unknown) => {
        this.log.warn(
          { policy: str(p.metadata?.name), err: (err as Error).message },
          'validatingadmissionpolicy status: write failed; retrying at its next change or restart',
        );
      }),
    );
  }

  private async loop(sub: Subscription): Promise<void> {
    while (!sub.closed) {
      for (const ev of await sub.next()) if (ev.type !== 'DELETED') this.enqueue(ev.object);
      await this.chain;
    }
    if (!this.stopped) {
      // The cache closed us (fell behind, reloaded): start over from its current objects.
      this.sub = undefined;
      this.start();
    }
  }

  private async observe(p: KObject): Promise<void> {
    const generation = p.metadata?.generation;
    if (typeof generation !== 'number' || obj(p.status).observedGeneration === generation) return;
    const key = `/registry/validatingadmissionpolicies/${str(p.metadata?.name)}`;
    for (let attempt = 0; attempt < 5; attempt++) {
      const cur = await this.store.get(key);
      if (!cur) return;
      const gen = cur.obj.metadata?.generation;
      if (obj(cur.obj.status).observedGeneration === gen) return;
      const status = { ...obj(cur.obj.status), observedGeneration: gen, typeChecking: {} };
      if ((await this.store.update(key, { ...cur.obj, status }, cur.rev)).ok) return;
    }
    throw new Error('the policy kept changing while its status was written');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.sub?.close('server stopping');
    this.sub = undefined;
    await this.chain;
  }
}
