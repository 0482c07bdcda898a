// Resource quantities ("250m", "64Mi", "1e3", "1.5G") parsed, printed, compared and
// added exactly as Kubernetes does. A quantity is held as a BigInt count of nano-units,
// the finest precision Kubernetes keeps, so no float ever touches the arithmetic; the
// numbers the scheduler wants in hot loops (milli-CPU, bytes) are computed once and cached.

/** How a quantity prints: "1.5Gi"-style, "1500M"-style or "15e8"-style. */
export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

/** Kubernetes' own wording for text that is not a quantity at all. */
export const QUANTITY_FORMAT_MESSAGE =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const NUMERIC_MESSAGE = 'unable to parse numeric part of quantity';
const SUFFIX_MESSAGE = "unable to parse quantity's suffix";

/** Kubernetes caps quantities at the largest int64. */
const MAX_VALUE = 2n ** 63n - 1n;
const NANO = 1_000_000_000n;
const MAX_NANOS = MAX_VALUE * NANO;
/** Significant digits beyond this are refused rather than fed to BigInt. */
const MAX_SIGNIFICANT_DIGITS = 4096;

export class QuantityParseError extends Error {
  constructor(
    readonly text: string,
    readonly reason: string,
  ) {
    const shown = text.length > 64 ? `${text.slice(0, 64)}...` : text;
    super(`cannot parse '${shown}': ${reason}`);
    this.name = 'QuantityParseError';
  }
}

const DECIMAL_SUFFIXES: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_SUFFIXES: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL_BY_EXPONENT = new Map<number, string>(Object.entries(DECIMAL_SUFFIXES).map(([s, e]) => [e, s]));
const BINARY_NAMES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const SUFFIX_CHARS = new Set('eEinumkKMGTP');

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

/** Divides rounding away from zero, as Kubernetes rounds sub-nano amounts "up". */
function divRoundUp(a: bigint, b: bigint): bigint {
  const q = a / b;
  if (q * b === a) return q;
  return a < 0n ? q - 1n : q + 1n;
}

function clampNanos(n: bigint): bigint {
  if (n > MAX_NANOS) return MAX_NANOS;
  if (n < -MAX_NANOS) return -MAX_NANOS;
  return n;
}

/** An immutable, exact resource quantity. */
export class Quantity {
  private cachedMilli: number | undefined;
  private cachedValue: number | undefined;
  private cachedString: string | undefined;

  private constructor(
    /** The amount in units of 10^-9. */
    readonly nanos: bigint,
    readonly format: QuantityFormat,
  ) {}

  static fromNanos(nanos: bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(clampNanos(nanos), format);
  }

  /** e.g. Quantity.fromMilli(250) is "250m". */
  static fromMilli(milli: number | bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
    return Quantity.fromNanos(toBigInt(milli) * 1_000_000n, format);
  }

  /** e.g. Quantity.fromValue(64 * 1024 * 1024, 'BinarySI') is "64Mi". */
  static fromValue(value: number | bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
    return Quantity.fromNanos(toBigInt(value) * NANO, format);
  }

  static zero(format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(0n, format);
  }

  /** The amount in thousandths, rounded up (CPU millis). */
  milliValue(): number {
    if (this.cachedMilli === undefined) this.cachedMilli = Number(divRoundUp(this.nanos, 1_000_000n));
    return this.cachedMilli;
  }

  /** The amount in whole units, rounded up (bytes for memory). */
  value(): number {
    if (this.cachedValue === undefined) this.cachedValue = Number(divRoundUp(this.nanos, NANO));
    return this.cachedValue;
  }

  /** Exact whole units as a BigInt, rounded up. */
  bigValue(): bigint {
    return divRoundUp(this.nanos, NANO);
  }

  /** Exact thousandths as a BigInt, rounded up. */
  bigMilliValue(): bigint {
    return divRoundUp(this.nanos, 1_000_000n);
  }

  isZero(): boolean {
    return this.nanos === 0n;
  }

  sign(): -1 | 0 | 1 {
    return this.nanos === 0n ? 0 : this.nanos < 0n ? -1 : 1;
  }

  /** -1, 0 or 1 as this is less than, equal to or greater than other. */
  cmp(other: Quantity): -1 | 0 | 1 {
    return this.nanos < other.nanos ? -1 : this.nanos > other.nanos ? 1 : 0;
  }

  equals(other: Quantity): boolean {
    return this.nanos === other.nanos;
  }

  add(other: Quantity): Quantity {
    return Quantity.fromNanos(this.nanos + other.nanos, this.format);
  }

  sub(other: Quantity): Quantity {
    return Quantity.fromNanos(this.nanos - other.nanos, this.format);
  }

  neg(): Quantity {
    return new Quantity(-this.nanos, this.format);
  }

  /** The canonical text, as Kubernetes prints it. */
  toString(): string {
    if (this.cachedString === undefined) this.cachedString = formatNanos(this.nanos, this.format);
    return this.cachedString;
  }

  toJSON(): string {
    return this.toString();
  }
}

function toBigInt(n: number | bigint): bigint {
  if (typeof n === 'bigint') return n;
  if (!Number.isSafeInteger(n)) throw new RangeError(`quantity amount ${n} is not a safe integer`);
  return BigInt(n);
}

function formatNanos(nanos: bigint, format: QuantityFormat): string {
  if (nanos === 0n) return '0';
  const negative = nanos < 0n;
  const abs = negative ? -nanos : nanos;
  const sign = negative ? '-' : '';

  // Binary form only for whole numbers of at least 1024; anything else would lose
  // precision or read oddly, so Kubernetes falls back to decimal.
  if (format === 'BinarySI' && abs % NANO === 0n && abs >= 1024n * NANO) {
    let whole = abs / NANO;
    let step = 0;
    while (step < 6 && whole % 1024n === 0n) {
      whole /= 1024n;
      step++;
    }
    return `${sign}${whole}${BINARY_NAMES[step]}`;
  }

  // Largest exponent that is a multiple of 3 and still leaves an integer mantissa.
  let mantissa = abs;
  let exponent = -9;
  while (mantissa % 10n === 0n) {
    mantissa /= 10n;
    exponent++;
  }
  const down = ((exponent % 3) + 3) % 3;
  if (down > 0) {
    mantissa *= pow10(down);
    exponent -= down;
  }
  if (format === 'DecimalExponent') {
    return exponent === 0 ? `${sign}${mantissa}` : `${sign}${mantissa}e${exponent}`;
  }
  const suffix = DECIMAL_BY_EXPONENT.get(exponent);
  // Exponents past "E" cannot occur under the int64 cap; keep a sane fallback anyway.
  return suffix === undefined ? `${sign}${mantissa}e${exponent}` : `${sign}${mantissa}${suffix}`;
}

interface Suffix {
  base: 10 | 2;
  exponent: number;
  format: QuantityFormat;
}

function parseSuffix(text: string, suffix: string): Suffix {
  for (let i = 0; i < suffix.length; i++) {
    const c = suffix[i];
    if (!SUFFIX_CHARS.has(c)) {
      // After the letters only an optional sign and digits may follow.
      const rest = suffix.slice(i);
      const signLen = rest[0] === '+' || rest[0] === '-' ? 1 : 0;
      for (let j = signLen; j < rest.length; j++) {
        if (!isDigit(rest.charCodeAt(j))) throw new QuantityParseError(text, QUANTITY_FORMAT_MESSAGE);
      }
      break;
    }
  }
  if (Object.hasOwn(DECIMAL_SUFFIXES, suffix)) {
    return { base: 10, exponent: DECIMAL_SUFFIXES[suffix], format: 'DecimalSI' };
  }
  if (Object.hasOwn(BINARY_SUFFIXES, suffix)) {
    return { base: 2, exponent: BINARY_SUFFIXES[suffix], format: 'BinarySI' };
  }
  if (suffix.length >= 2 && (suffix[0] === 'e' || suffix[0] === 'E')) {
    const digits = suffix.slice(1);
    // An exponent with more than 9 digits does not fit an int32 and is refused.
    if (/^[+-]?[0-9]{1,9}$/.test(digits)) {
      return { base: 10, exponent: Number.parseInt(digits, 10), format: 'DecimalExponent' };
    }
  }
  throw new QuantityParseError(text, SUFFIX_MESSAGE);
}

function parseUncached(text: string): Quantity {
  if (typeof text !== 'string' || text.length === 0)
    throw new QuantityParseError(String(text), QUANTITY_FORMAT_MESSAGE);
  let i = 0;
  let negative = false;
  if (text[0] === '+' || text[0] === '-') {
    negative = text[0] === '-';
    i = 1;
  }
  const numberStart = i;
  let dot = -1;
  let dots = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (isDigit(c)) {
      i++;
    } else if (c === 46 /* . */) {
      if (dots === 0) dot = i;
      dots++;
      i++;
    } else {
      break;
    }
  }
  if (i === numberStart) throw new QuantityParseError(text, QUANTITY_FORMAT_MESSAGE);
  const numberEnd = i;
  const suffix = parseSuffix(text, text.slice(numberEnd));
  if (dots > 1 || numberEnd - numberStart === dots) throw new QuantityParseError(text, NUMERIC_MESSAGE);

  let intPart = dot < 0 ? text.slice(numberStart, numberEnd) : text.slice(numberStart, dot);
  let fracPart = dot < 0 ? '' : text.slice(dot + 1, numberEnd);
  // Zeros that change nothing are dropped before any BigInt sees the digits.
  let s = 0;
  while (s < intPart.length && intPart.charCodeAt(s) === 48) s++;
  intPart = intPart.slice(s);
  let e = fracPart.length;
  while (e > 0 && fracPart.charCodeAt(e - 1) === 48) e--;
  fracPart = fracPart.slice(0, e);

  let digits = intPart + fracPart;
  let z = 0;
  while (z < digits.length && digits.charCodeAt(z) === 48) z++;
  digits = digits.slice(z);
  if (digits.length === 0) return Quantity.zero(suffix.format);

  // value = digits * 10^(exp10) * 2^(exp2), with exp10 counted in nano-units.
  const exp10 = (suffix.base === 10 ? suffix.exponent : 0) - fracPart.length;
  const exp2 = suffix.base === 2 ? suffix.exponent : 0;
  // The leading digit's place value: at 10^19 or more the amount is past the int64 cap.
  if (digits.length - 1 + exp10 >= 19) {
    return Quantity.fromNanos(negative ? -MAX_NANOS : MAX_NANOS, suffix.format);
  }
  if (digits.length > MAX_SIGNIFICANT_DIGITS) throw new QuantityParseError(text, NUMERIC_MESSAGE);
  let nanos: bigint;
  const scale = exp10 + 9;
  const mantissa = BigInt(digits) << BigInt(exp2);
  if (scale >= 0) {
    nanos = mantissa * pow10(scale);
  } else if (-scale > digits.length + 19) {
    // Far below one nano-unit: Kubernetes rounds any non-zero amount up to 1n.
    nanos = 1n;
  } else {
    nanos = divRoundUp(mantissa, pow10(-scale));
  }
  return Quantity.fromNanos(negative ? -nanos : nanos, suffix.format);
}

// Quantities repeat endlessly across pods ("100m", "128Mi"); parsed values are immutable,
// so a bounded cache lets hot loops skip parsing entirely.
const CACHE_LIMIT = 4096;
const cache = new Map<string, Quantity>();

/** Parses a quantity, throwing QuantityParseError (text quoted) on malformed input. */
export function parseQuantity(text: string): Quantity {
  const hit = cache.get(text);
  if (hit) return hit;
  const q = parseUncached(text);
  if (text.length <= 64) {
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(text, q);
  }
  return q;
}

/** Like parseQuantity, but returns undefined instead of throwing. */
export function tryParseQuantity(text: string): Quantity | undefined {
  try {
    return parseQuantity(text);
  } catch {
    return undefined;
  }
}

/** Accepts a quantity given as text, as a JSON number (YAML `cpu: 2`) or already parsed. */
export function toQuantity(v: string | number | Quantity): Quantity {
  if (v instanceof Quantity) return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new QuantityParseError(String(v), QUANTITY_FORMAT_MESSAGE);
    return parseQuantity(String(v).replace(/e\+?/, 'e'));
  }
  return parseQuantity(v);
}

/** Canonical form of a quantity text ("1000m" -> "1", "1024Mi" -> "1Gi"). */
export function formatQuantity(v: string | number | Quantity): string {
  return toQuantity(v).toString();
}

export function compareQuantities(a: string | Quantity, b: string | Quantity): -1 | 0 | 1 {
  return toQuantity(a).cmp(toQuantity(b));
}

export function addQuantities(a: string | Quantity, b: string | Quantity): Quantity {
  return toQuantity(a).add(toQuantity(b));
}

export function subtractQuantities(a: string | Quantity, b: string | Quantity): Quantity {
  return toQuantity(a).sub(toQuantity(b));
}

/** Milli-units of a quantity text, rounded up ("250m" -> 250, "1" -> 1000). */
export function toMilli(v: string | number | Quantity): number {
  return toQuantity(v).milliValue();
}

/** Whole units of a quantity text, rounded up ("64Mi" -> 67108864). */
export function toNumber(v: string | number | Quantity): number {
  return toQuantity(v).value();
}
