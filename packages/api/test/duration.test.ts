// humanDuration against the boundaries of Kubernetes' duration.HumanDuration:
// each row is the last value of one rendering and the first of the next.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { humanDuration } from '../src/duration.js';

const s = 1000;
const m = 60 * s;
const h = 60 * m;
const d = 24 * h;
const y = 365 * d;

describe('humanDuration', () => {
  const cases: [number, string][] = [
    [-2 * s, '<invalid>'],
    [-1.5 * s, '0s'], // toward zero, as Go truncates: -1 s, within the tolerated drift
    [-1 * s, '0s'],
    [0, '0s'],
    [999, '0s'],
    [45 * s, '45s'],
    [119 * s, '119s'],
    [2 * m, '2m'],
    [3 * m + 20 * s, '3m20s'],
    [9 * m + 59 * s, '9m59s'],
    [10 * m + 30 * s, '10m'],
    [179 * m, '179m'],
    [3 * h, '3h'],
    [5 * h + 1 * m, '5h1m'],
    [7 * h + 59 * m, '7h59m'],
    [8 * h + 30 * m, '8h'],
    [47 * h, '47h'],
    [2 * d, '2d'],
    [3 * d + 4 * h, '3d4h'],
    [7 * d + 23 * h, '7d23h'],
    [8 * d + 5 * h, '8d'],
    [729 * d, '729d'],
    [2 * y, '2y'],
    [2 * y + 3 * d, '2y3d'],
    [7 * y + 364 * d, '7y364d'],
    [8 * y + 100 * d, '8y'],
    [30 * y, '30y'],
  ];
  for (const [ms, want] of cases) {
    it(`${ms} ms is ${want}`, () => assert.equal(humanDuration(ms), want));
  }
});
