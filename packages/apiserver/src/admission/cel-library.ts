// The Kubernetes CEL libraries admission expressions count on, beyond what
// @marcbachmann/cel-js has built in (strings' split, join, trim, lowerAscii,
// indexOf, matches; optionals; durations and timestamps): Kubernetes' quantity
// library over @kubit/api's Quantity, and the list and string functions of its
// lists and strings extensions.
import { parseQuantity, Quantity, tryParseQuantity } from '@kubit/api';
import type { Environment } from '@marcbachmann/cel-js';

type Num = bigint | number;

/** The CEL int of a JavaScript number, refusing what an int64 cannot hold. */
function int64(n: bigint): bigint {
  if (n > 9223372036854775807n || n < -9223372036854775808n) throw new Error('integer overflow');
  return n;
}

function listFold(list: unknown[], pick: (a: Num, b: Num) => boolean): Num {
  if (list.length === 0) throw new Error('min/max of an empty list');
  let best = list[0] as Num;
  for (const x of list.slice(1) as Num[]) if (pick(x, best)) best = x;
  return best;
}

/** Registers the library on `env` (before it is used or cloned). */
export function registerKubernetesLibrary(env: Environment): void {
  env.registerType('Quantity', Quantity as never);
  env
    .registerFunction('quantity(string): Quantity', (s: string) => parseQuantity(s))
    .registerFunction('isQuantity(string): bool', (s: string) => tryParseQuantity(s) !== undefined)
    .registerFunction('Quantity.isGreaterThan(Quantity): bool', (a: Quantity, b: Quantity) => a.cmp(b) > 0)
    .registerFunction('Quantity.isLessThan(Quantity): bool', (a: Quantity, b: Quantity) => a.cmp(b) < 0)
    .registerFunction('Quantity.compareTo(Quantity): int', (a: Quantity, b: Quantity) => BigInt(a.cmp(b)))
    .registerFunction('Quantity.add(Quantity): Quantity', (a: Quantity, b: Quantity) => a.add(b))
    .registerFunction('Quantity.add(int): Quantity', (a: Quantity, b: bigint) => a.add(Quantity.fromValue(b)))
    .registerFunction('Quantity.sub(Quantity): Quantity', (a: Quantity, b: Quantity) => a.sub(b))
    .registerFunction('Quantity.sub(int): Quantity', (a: Quantity, b: bigint) => a.sub(Quantity.fromValue(b)))
    .registerFunction('Quantity.sign(): int', (a: Quantity) => BigInt(a.sign()))
    .registerFunction('Quantity.isInteger(): bool', (a: Quantity) => a.bigMilliValue() % 1000n === 0n)
    .registerFunction('Quantity.asInteger(): int', (a: Quantity) => {
      if (a.bigMilliValue() % 1000n !== 0n) throw new Error('cannot convert value to integer');
      return int64(a.bigValue());
    })
    .registerFunction('Quantity.asApproximateFloat(): double', (a: Quantity) => a.milliValue() / 1000);
  env
    .registerFunction('list.sum(): dyn', (l: Num[]) => {
      if (l.length === 0) return 0n;
      return l.reduce((x, y) =>
        typeof x === 'bigint' && typeof y === 'bigint' ? int64(x + y) : Number(x) + Number(y),
      );
    })
    .registerFunction('list.min(): dyn', (l: Num[]) => listFold(l, (a, b) => a < b))
    .registerFunction('list.max(): dyn', (l: Num[]) => listFold(l, (a, b) => a > b))
    .registerFunction('list.isSorted(): bool', (l: (Num | string)[]) =>
      l.every((x, i) => i === 0 || l[i - 1] <= x),
    )
    .registerFunction('list.indexOf(dyn): int', (l: unknown[], v: unknown) => BigInt(l.indexOf(v)))
    .registerFunction('list.lastIndexOf(dyn): int', (l: unknown[], v: unknown) => BigInt(l.lastIndexOf(v)))
    .registerFunction('string.replace(string, string): string', (s: string, a: string, b: string) =>
      s.split(a).join(b),
    )
    .registerFunction(
      'string.replace(string, string, int): string',
      (s: string, a: string, b: string, n: bigint) => {
        // n < 0 replaces all, as the strings extension does.
        if (n < 0n) return s.split(a).join(b);
        let out = s;
        let from = 0;
        for (let i = 0n; i < n; i++) {
          const at = out.indexOf(a, from);
          if (at < 0) break;
          out = out.slice(0, at) + b + out.slice(at + a.length);
          from = at + b.length;
        }
        return out;
      },
    );
}
