// IPv4 CIDR arithmetic for the node IPAM controller: parse a cluster CIDR and
// hand out its fixed-size subnets by index. The address arithmetic is @kubit/api's.
import { type Cidr, formatCidr, maskOf, parseCidr } from '@kubit/api';

export type { Cidr } from '@kubit/api';
export { formatCidr, parseCidr } from '@kubit/api';

/**
 * Subnets of size /maskSize inside a cluster CIDR, numbered 0..count-1, with a
 * bitmap of which are taken. Mirrors what a node's podCIDR can be.
 */
export class SubnetSet {
  readonly count: number;
  private readonly used: Uint8Array;
  private next = 0;

  constructor(
    readonly cluster: Cidr,
    readonly maskSize: number,
  ) {
    if (maskSize < cluster.prefix) {
      throw new Error(
        `--node-cidr-mask-size ${maskSize} must not be smaller than the cluster CIDR's /${cluster.prefix}`,
      );
    }
    if (maskSize > 30)
      throw new Error(`--node-cidr-mask-size ${maskSize} leaves no room for pods (at most 30)`);
    if (maskSize - cluster.prefix > 24) {
      throw new Error(
        `--node-cidr-mask-size ${maskSize} makes too many subnets of /${cluster.prefix} (at most 2^24)`,
      );
    }
    this.count = 2 ** (maskSize - cluster.prefix);
    this.used = new Uint8Array(this.count);
  }

  subnet(i: number): string {
    const size = 2 ** (32 - this.maskSize);
    return formatCidr({ base: (this.cluster.base + i * size) >>> 0, prefix: this.maskSize });
  }

  /** The index of a subnet string if it is one of ours, else undefined. */
  indexOf(s: string): number | undefined {
    let c: Cidr;
    try {
      c = parseCidr(s);
    } catch {
      return undefined;
    }
    if (c.prefix !== this.maskSize) return undefined;
    if ((c.base & maskOf(this.cluster.prefix)) >>> 0 !== this.cluster.base) return undefined;
    return (c.base - this.cluster.base) / 2 ** (32 - this.maskSize);
  }

  occupy(i: number): void {
    this.used[i] = 1;
  }

  release(i: number): void {
    this.used[i] = 0;
  }

  isUsed(i: number): boolean {
    return this.used[i] === 1;
  }

  /** The next free subnet (round-robin from the last one handed out), or undefined when full. */
  allocate(): number | undefined {
    for (let k = 0; k < this.count; k++) {
      const i = (this.next + k) % this.count;
      if (!this.used[i]) {
        this.used[i] = 1;
        this.next = (i + 1) % this.count;
        return i;
      }
    }
    return undefined;
  }
}
