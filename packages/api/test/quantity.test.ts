import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  addQuantities,
  compareQuantities,
  formatQuantity,
  parseQuantity,
  Quantity,
  QuantityParseError,
  subtractQuantities,
  toMilli,
  toNumber,
  toQuantity,
} from '../src/index.js';

const FORMAT_MSG =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

describe('quantity parse and canonical format', () => {
  const table: [string, string, number, number][] = [
    // text, canonical, milli, value
    ['250m', '250m', 250, 1],
    ['0.5', '500m', 500, 1],
    ['1500m', '1500m', 1500, 2],
    ['1000m', '1', 1000, 1],
    ['2', '2', 2000, 2],
    ['64Mi', '64Mi', 64 * 1024 * 1024 * 1000, 64 * 1024 * 1024],
    ['1Gi', '1Gi', 1073741824000, 1073741824],
    ['1024Mi', '1Gi', 1073741824000, 1073741824],
    ['1536Mi', '1536Mi', 1610612736000, 1610612736],
    ['1.5Ki', '1536', 1536000, 1536],
    ['0.5Ki', '512', 512000, 512],
    ['1Ki', '1Ki', 1024000, 1024],
    ['1e3', '1e3', 1000000, 1000],
    ['12e2', '1200', 1200000, 1200],
    ['1.5G', '1500M', 1.5e12, 1.5e9],
    ['100k', '100k', 1e8, 1e5],
    ['1000k', '1M', 1e9, 1e6],
    ['0.1m', '100u', 1, 1],
    ['0.1n', '1n', 1, 1],
    ['1E', '1E', 1e21, 1e18],
    ['+5', '5', 5000, 5],
    ['-1.5', '-1500m', -1500, -2],
    ['-0', '0', 0, 0],
    ['0.000', '0', 0, 0],
    ['.5', '500m', 500, 1],
    ['5.', '5', 5000, 5],
    ['00001', '1', 1000, 1],
    ['0.0000000001Ki', '103n', 1, 1],
    ['1e100', '9223372036854775807', Number(9223372036854775807000n), Number(9223372036854775807n)],
    [
      '9223372036854775808',
      '9223372036854775807',
      Number(9223372036854775807000n),
      Number(9223372036854775807n),
    ],
    ['1e-100', '1e-9', 1, 1],
  ];
  for (const [text, canonical, milli, value] of table) {
    it(`${text} -> ${canonical}`, () => {
      const q = parseQuantity(text);
      assert.equal(q.toString(), canonical);
      assert.equal(q.milliValue(), milli);
      assert.equal(q.value(), value);
      assert.equal(formatQuantity(text), canonical);
      // The canonical text parses back to the same amount.
      assert.ok(parseQuantity(canonical).equals(q));
    });
  }

  it('keeps the format of the text', () => {
    assert.equal(parseQuantity('1Mi').format, 'BinarySI');
    assert.equal(parseQuantity('1M').format, 'DecimalSI');
    assert.equal(parseQuantity('1e6').format, 'DecimalExponent');
  });

  const bad: [string, string][] = [
    ['', FORMAT_MSG],
    ['abc', FORMAT_MSG],
    ['1x', FORMAT_MSG],
    ['1 ', FORMAT_MSG],
    [' 1', FORMAT_MSG],
    ['--1', FORMAT_MSG],
    ['1Kb', FORMAT_MSG],
    ['１', FORMAT_MSG],
    ['1µ', FORMAT_MSG],
    ['1.2.3', 'unable to parse numeric part of quantity'],
    ['.', 'unable to parse numeric part of quantity'],
    ['1K', "unable to parse quantity's suffix"],
    ['1e', "unable to parse quantity's suffix"],
    ['1k3', "unable to parse quantity's suffix"],
    ['1e1234567890', "unable to parse quantity's suffix"],
    ['1MiMi', "unable to parse quantity's suffix"],
  ];
  for (const [text, reason] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      assert.throws(
        () => parseQuantity(text),
        (e: unknown) =>
          e instanceof QuantityParseError &&
          e.message === `cannot parse '${text}': ${reason}` &&
          e.text === text,
      );
    });
  }

  it('huge strings fail fast or cap, never hang', () => {
    const digits = '9'.repeat(1_000_000);
    assert.equal(parseQuantity(digits).toString(), '9223372036854775807');
    assert.throws(() => parseQuantity(`0.${digits}`), /unable to parse numeric part of quantity/);
    assert.throws(
      () => parseQuantity(`${'1'.repeat(1_000_000)}x`),
      /^QuantityParseError: cannot parse '1{64}\.\.\.'/,
    );
    assert.equal(parseQuantity(`0.${'0'.repeat(100_000)}1`).toString(), '1n');
    assert.equal(parseQuantity(`${'0'.repeat(100_000)}1.${'0'.repeat(100_000)}`).toString(), '1');
    assert.equal(parseQuantity('1e-999999999').toString(), '1e-9');
    assert.equal(parseQuantity('1e999999999').bigValue(), 9223372036854775807n);
  });
});

describe('quantity arithmetic', () => {
  it('adds and subtracts exactly', () => {
    assert.equal(addQuantities('100m', '200m').toString(), '300m');
    assert.equal(addQuantities('0.1', '0.2').toString(), '300m');
    assert.equal(addQuantities('1Gi', '1Gi').toString(), '2Gi');
    assert.equal(addQuantities('1Gi', '1M').toString(), '1074741824');
    assert.equal(subtractQuantities('1', '250m').toString(), '750m');
    assert.equal(subtractQuantities('250m', '1').toString(), '-750m');
    assert.equal(compareQuantities('1', '1000m'), 0);
    assert.equal(compareQuantities('1Ki', '1k'), 1);
    assert.equal(compareQuantities('999m', '1'), -1);
    assert.equal(toMilli('2'), 2000);
    assert.equal(toNumber('64Mi'), 67108864);
    assert.equal(toMilli(0.5), 500);
    assert.equal(toQuantity(1e21).toString(), '9223372036854775807');
    assert.equal(Quantity.fromMilli(250).toString(), '250m');
    assert.equal(Quantity.fromValue(64 * 1024 * 1024, 'BinarySI').toString(), '64Mi');
    assert.throws(() => toQuantity(Number.NaN), /cannot parse 'NaN'/);
    assert.throws(() => Quantity.fromValue(2 ** 60), /not a safe integer/);
  });

  it('sums of many small amounts do not drift', () => {
    let total = Quantity.zero();
    for (let i = 0; i < 1000; i++) total = total.add(parseQuantity('0.001'));
    assert.equal(total.toString(), '1');
  });

  it('property: canonical text round-trips', () => {
    const suffixes = ['', 'n', 'u', 'm', 'k', 'M', 'G', 'T', 'Ki', 'Mi', 'Gi', 'Ti', 'e3', 'e-2', 'E'];
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 12n }),
        fc.nat({ max: 6 }),
        fc.constantFrom(...suffixes),
        fc.boolean(),
        (int, fracDigits, suffix, neg) => {
          const s = int.toString();
          const text =
            (neg ? '-' : '') +
            (fracDigits > 0 && s.length > fracDigits
              ? `${s.slice(0, s.length - fracDigits)}.${s.slice(s.length - fracDigits)}`
              : s) +
            suffix;
          const q = parseQuantity(text);
          const again = parseQuantity(q.toString());
          assert.ok(again.equals(q), `${text} -> ${q} -> ${again}`);
          assert.equal(again.toString(), q.toString());
        },
      ),
    );
  });

  it('property: addition matches BigInt arithmetic on millis', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e9, max: 1e9 }), fc.integer({ min: -1e9, max: 1e9 }), (a, b) => {
        const sum = Quantity.fromMilli(a).add(Quantity.fromMilli(b));
        assert.equal(sum.milliValue(), a + b);
        assert.equal(parseQuantity(sum.toString()).milliValue(), a + b);
      }),
    );
  });
});
