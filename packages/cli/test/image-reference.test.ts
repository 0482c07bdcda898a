// Image references as Docker normalizes them, and the ones it refuses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatReference, parseReference } from '../src/image/reference.js';

test('references normalize as Docker names them', () => {
  const cases: [string, string][] = [
    ['nginx', 'docker.io/library/nginx:latest'],
    ['nginx:1.25', 'docker.io/library/nginx:1.25'],
    ['user/app:v1', 'docker.io/user/app:v1'],
    ['docker.io/library/busybox', 'docker.io/library/busybox:latest'],
    ['127.0.0.1:5000/a/b:1', '127.0.0.1:5000/a/b:1'],
    ['localhost/x', 'localhost/x:latest'],
    [`quay.io/org/app@sha256:${'a'.repeat(64)}`, `quay.io/org/app@sha256:${'a'.repeat(64)}`],
  ];
  for (const [ref, want] of cases) assert.equal(formatReference(parseReference(ref)), want, ref);
});

test("what is not a reference gets Docker's reason", () => {
  assert.throws(() => parseReference('Nginx'), /"Nginx" is not an image reference: .*must be lowercase/);
  assert.throws(() => parseReference('a:b:c'), /invalid reference format/);
  assert.throws(() => parseReference('app:bad tag'), /bad tag/);
  assert.throws(() => parseReference('app@sha256:xyz'), /bad digest/);
  assert.throws(() => parseReference(''), /invalid reference format/);
  assert.throws(() => parseReference('a//b'), /invalid reference format/);
});
