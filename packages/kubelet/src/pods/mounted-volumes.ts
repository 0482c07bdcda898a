// One pod's volumes as its worker keeps them mounted: set up on the first sync,
// and again when the pod changed or VOLUME_REFRESH_MS passed.
import type { Pod } from 'kubernetes-types/core/v1.js';
import { type PodRef, podKey } from './labels.js';
import { MountError } from './volumes.js';
import type { WorkerContext } from './worker-context.js';

/** How often the contents of configMap and secret volumes are refreshed from the apiserver. */
const VOLUME_REFRESH_MS = 10_000;

export class MountedVolumes {
  private paths: Map<string, string> | undefined;
  private setUpAt = 0;
  private setUpFor: Pod | undefined;

  constructor(
    private readonly ctx: WorkerContext,
    private readonly ref: PodRef,
  ) {}

  /**
   * The host path of each volume, by name. configMap and secret contents follow
   * their objects. A refresh that cannot reach the apiserver keeps what is
   * mounted: running pods must not depend on the control plane being there.
   */
  async setUp(pod: Pod): Promise<Map<string, string>> {
    const fresh = this.setUpFor === pod && Date.now() - this.setUpAt < VOLUME_REFRESH_MS;
    if (this.paths && fresh) return this.paths;
    try {
      this.paths = await this.ctx.volumes.setUp(pod);
    } catch (err) {
      if (err instanceof MountError || !this.paths) throw err;
      this.ctx.log.debug(
        { pod: podKey(this.ref), err: (err as Error).message },
        'volume refresh failed; keeping the mounted contents',
      );
    }
    this.setUpAt = Date.now();
    this.setUpFor = pod;
    return this.paths;
  }
}
