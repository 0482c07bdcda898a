// Resource quantities as the scheduler needs them: whole numbers of milli-units
// (cpu) or units (bytes, pods). Kept local so the hot path stays allocation-free;
// the parse follows Kubernetes' quantity grammar (SI and binary suffixes, exponents).

const suffixes: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const quantityRe = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

const memo = new Map<string, number>();

/** The quantity in milli-units, rounded up as Kubernetes' MilliValue does. Throws on bad input. */
export function parseMilli(q: string | number): number {
  if (typeof q === 'number') return Math.ceil(q * 1000);
  const hit = memo.get(q);
  if (hit !== undefined) return hit;
  const m = quantityRe.exec(q.trim());
  if (!m)
    throw new Error(
      `invalid quantity "${q}": expected a number with an optional suffix such as 100m, 2Gi or 1e3`,
    );
  const num = Number(m[1]);
  const scale = m[2] !== undefined ? 10 ** Number(m[2].slice(1)) : suffixes[m[3] ?? ''];
  // Scale before multiplying by 1000 in two steps to keep exact integers for common inputs.
  const milli = Math.ceil(Math.round(num * scale * 1000 * 1e6) / 1e6);
  if (memo.size < 10_000) memo.set(q, milli);
  return milli;
}

/** The quantity in whole units, rounded up (Kubernetes' Value). */
export function parseValue(q: string | number): number {
  return Math.ceil(parseMilli(q) / 1000);
}
