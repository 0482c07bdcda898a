// What one sync did to a pod's containers, and so what the runtime runs after
// it: the containers it created, started or stopped, and the status it may
// report for the ones it started before ContainerStatus confirms it.
import type { ContainerConfig, ContainerRuntime, ContainerStatus, Image } from '@kubit/cri';
import { isNotFound } from '@kubit/cri';
import { type Observed, observePod, startedStatus, statusSignatureOf, withStatuses } from './observed.js';
import type { Tracer } from './trace.js';

/**
 * A container is reported Running before ContainerStatus confirms it only when
 * StartContainer took at most this long (ns): status times are whole seconds, so
 * a guess within ±100 ms of the real start names the right second more than 90
 * times in 100, while on a loaded runtime (StartContainer taking seconds) it
 * would mostly be wrong, and each wrong guess costs a second PATCH.
 */
const EARLY_STATUS_MAX_START_NS = 200_000_000;

export const nowNs = () => Math.round((performance.timeOrigin + performance.now()) * 1e6);

export class SyncChanges {
  /** Containers this sync created, started or stopped: their state is no longer what the observation says. */
  private readonly touched = new Set<string>();
  /** A container was stopped during this sync: only a full observation tells what is left. */
  private stoppedSome = false;
  /**
   * Containers this sync created and started, with the status the runtime is
   * bound to report for them: published at once, before ContainerStatus confirms it.
   */
  private readonly assumed = new Map<string, ContainerStatus>();

  constructor(
    private readonly runtime: ContainerRuntime,
    private readonly uid: string,
    private readonly trace: Tracer | undefined,
  ) {}

  clear(): void {
    this.touched.clear();
    this.stoppedSome = false;
    this.assumed.clear();
  }

  touch(id: string): void {
    this.touched.add(id);
  }

  stopped(): void {
    this.stoppedSome = true;
  }

  /**
   * A container this sync created returned from StartContainer. The container
   * started somewhere between the call and its return; only when that span is
   * short is its middle almost always the second the runtime reports.
   */
  started(
    id: string,
    created: { config: ContainerConfig; createdAt: number },
    image: Image,
    span: [number, number],
  ) {
    const [requestedAt, returnedAt] = span;
    if (returnedAt - requestedAt > EARLY_STATUS_MAX_START_NS) return;
    const startedAt = Math.round((requestedAt + returnedAt) / 2);
    this.assumed.set(id, startedStatus(id, created.config, created.createdAt, startedAt, image));
  }

  /**
   * `obs` with the status the runtime will confirm, when every container this
   * sync touched was created and started by it (nothing stopped) quickly enough
   * to know when: the pod can show Running the moment StartContainer returns.
   * The confirmed status follows (refreshed) and is written only if it differs.
   * Undefined when there is no such status to report early.
   */
  early(obs: Observed): Observed | undefined {
    if (this.assumed.size === 0 || this.stoppedSome) return undefined;
    if (![...this.touched].every((id) => this.assumed.has(id))) return undefined;
    return withStatuses(obs, [...this.assumed.values()], new Map(obs.instances));
  }

  /**
   * What the runtime runs after this sync's actions. Nothing done: `obs` holds.
   * Only creations and starts: the status of those containers alone (one CRI
   * call each) instead of listing everything again, so the status goes out
   * the moment a container started.
   */
  async refreshed(obs: Observed): Promise<Observed> {
    const touched = [...this.touched];
    this.touched.clear();
    const stopped = this.stoppedSome;
    this.stoppedSome = false;
    if (stopped) return observePod(this.runtime, this.uid);
    if (touched.length === 0) return obs;
    const fresh = await Promise.all(
      touched.map((id) =>
        this.runtime.containerStatus(id).catch((err) => {
          if (isNotFound(err)) return undefined;
          throw err;
        }),
      ),
    );
    if (fresh.some((s) => s === undefined)) return observePod(this.runtime, this.uid);
    const confirmed = fresh.filter((s) => s !== undefined);
    for (const s of confirmed) {
      const guess = this.assumed.get(s.id);
      const [was, is] = guess ? [statusSignatureOf(guess), statusSignatureOf(s)] : [];
      if (was !== is) this.trace?.(this.uid, 'status-corrected', `${was} → ${is}`);
    }
    return withStatuses(obs, confirmed, obs.instances);
  }
}
