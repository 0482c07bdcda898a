// The repair loop of Service allocations, after Kubernetes' repair controllers
// (pkg/registry/core/service/ipallocator/controller, portallocator/controller): at
// start and every minute, the claim keys and the Services are read at one revision;
// a key no Service holds is deleted (guarded on its revision, so a key claimed again
// meanwhile stays), and a value a Service holds without its key gets the key back,
// with a warning, since that should never happen.
import type { Counter, Logger } from '@kubit/daemon';
import type { Store } from '../storage.js';
import { heldKeys, ownerOf, parseOwner } from './allocator.js';
import { NODE_PORTS_PREFIX, SERVICE_IPS_PREFIX } from './networking.js';

const SERVICES_PREFIX = '/registry/services/';
export const REPAIR_INTERVAL_MS = 60_000;

export interface RepairResult {
  /** Keys deleted: no Service held them. */
  released: string[];
  /** Keys written back for a Service that held the value without its key. */
  restored: string[];
}

export class AllocationRepair {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly repairs?: Counter<'action'>,
  ) {}

  start(intervalMs = REPAIR_INTERVAL_MS): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.runOnce()
        .catch((err: unknown) =>
          this.log.warn({ err: (err as Error).message }, 'service allocation repair failed'),
        )
        .finally(() => {
          this.running = undefined;
        });
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  async runOnce(): Promise<RepairResult> {
    const ips = await this.store.rawRange(SERVICE_IPS_PREFIX);
    // Everything at the revision of the first read: a Service written with its keys
    // after it is seen by neither read, never by one alone.
    const rev = ips.revision;
    const ports = await this.store.rawRange(NODE_PORTS_PREFIX, rev);
    const services = await this.store.range(SERVICES_PREFIX, { revision: rev });
    const holders = new Map<string, string>();
    for (const s of services.items) {
      const owner = ownerOf(s.obj);
      for (const key of heldKeys(s.obj)) {
        const other = holders.get(key);
        if (other !== undefined && other !== owner.uid) {
          this.log.warn(
            { key, service: `${owner.namespace}/${owner.name}` },
            'a service allocation is held by two services',
          );
        }
        holders.set(key, owner.uid);
      }
    }
    const result: RepairResult = { released: [], restored: [] };
    const present = new Set<string>();
    for (const e of [...ips.entries, ...ports.entries]) {
      present.add(e.key);
      const holder = holders.get(e.key);
      if (holder !== undefined && holder === parseOwner(e.value)?.uid) continue;
      if (holder !== undefined) continue; // held, under an older owner record: harmless
      if (await this.store.rawDelete(e.key, e.modRevision)) {
        this.log.info({ key: e.key, owner: e.value }, 'released a service allocation no service holds');
        this.repairs?.inc({ action: 'released' });
        result.released.push(e.key);
      }
    }
    for (const s of services.items) {
      for (const key of heldKeys(s.obj)) {
        if (present.has(key)) continue;
        const owner = ownerOf(s.obj);
        this.log.warn(
          { key, service: `${owner.namespace}/${owner.name}` },
          'a service holds an allocation without its key; writing the key back',
        );
        if (await this.store.rawCreate(key, JSON.stringify(owner))) {
          this.repairs?.inc({ action: 'restored' });
          result.restored.push(key);
        }
        present.add(key);
      }
    }
    return result;
  }
}
