// The binder's pure decisions: which volume a claim binds to (the smallest that fits,
// class, access modes, volume mode, selector, pre-bound claimRef, node affinity), which
// claims a pod uses (protection), the claim an ephemeral volume gets, and when a claim
// has growth pending (expander).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PersistentVolume, PersistentVolumeClaim, Pod } from '@kubit/api';
import { ephemeralClaimFor } from '../src/volume/ephemeral.js';
import { pendingGrowth } from '../src/volume/expander.js';
import { findBestMatch, mismatch } from '../src/volume/matching.js';
import { claimInUse, claimsOfPod } from '../src/volume/protection.js';

function pv(
  name: string,
  size: string,
  extra: Partial<PersistentVolume['spec']> = {},
  labels = {},
): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, labels },
    spec: {
      capacity: { storage: size },
      accessModes: ['ReadWriteOnce', 'ReadOnlyMany'],
      storageClassName: 'manual',
      volumeMode: 'Filesystem',
      hostPath: { path: `/tmp/${name}` },
      ...extra,
    },
    status: { phase: 'Available' },
  };
}

function claim(size: string, extra: Partial<PersistentVolumeClaim['spec']> = {}): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'c', namespace: 'default', uid: 'u1' },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: size } },
      storageClassName: 'manual',
      volumeMode: 'Filesystem',
      ...extra,
    },
  };
}

const name = (v: PersistentVolume | undefined) => v?.metadata?.name;

test('the smallest volume that fits wins', () => {
  const vols = [pv('big', '10Gi'), pv('small', '1Gi'), pv('mid', '5Gi'), pv('mid2', '6Gi')];
  assert.equal(name(findBestMatch(claim('3Gi'), vols)), 'mid');
  assert.equal(name(findBestMatch(claim('1Gi'), vols)), 'small');
  assert.equal(name(findBestMatch(claim('1024Mi'), vols)), 'small');
  assert.equal(findBestMatch(claim('11Gi'), vols), undefined);
});

test('class, access modes, volume mode and selector must match', () => {
  assert.equal(
    mismatch(pv('a', '5Gi', { storageClassName: 'fast' }), claim('1Gi')),
    'storageClassName does not match',
  );
  assert.equal(
    mismatch(pv('a', '5Gi'), claim('1Gi', { accessModes: ['ReadWriteMany'] })),
    'incompatible accessMode',
  );
  assert.equal(mismatch(pv('a', '5Gi', { volumeMode: 'Block' }), claim('1Gi')), 'incompatible volumeMode');
  const sel = claim('1Gi', { selector: { matchLabels: { tier: 'gold' } } });
  assert.equal(mismatch(pv('a', '5Gi', {}, { tier: 'silver' }), sel), 'selector does not match');
  assert.equal(mismatch(pv('a', '5Gi', {}, { tier: 'gold' }), sel), undefined);
  // A claim with no class matches only volumes with no class.
  assert.equal(
    mismatch(pv('a', '5Gi', { storageClassName: '' }), claim('1Gi', { storageClassName: '' })),
    undefined,
  );
});

test('a volume reserved for another claim is skipped; one pre-bound to this claim wins even if larger', () => {
  const other = pv('other', '1Gi', { claimRef: { name: 'someone', namespace: 'default' } });
  const mine = pv('mine', '10Gi', { claimRef: { name: 'c', namespace: 'default' } });
  const free = pv('free', '2Gi');
  assert.equal(name(findBestMatch(claim('1Gi'), [other, free, mine])), 'mine');
  assert.equal(name(findBestMatch(claim('1Gi'), [other, free])), 'free');
  // A claimRef to an earlier claim of the same name (another uid) is not this claim's.
  const stale = pv('stale', '1Gi', { claimRef: { name: 'c', namespace: 'default', uid: 'old' } });
  assert.equal(name(findBestMatch(claim('1Gi'), [stale, free])), 'free');
  // Released and deleted volumes are not offered.
  const released = { ...pv('rel', '1Gi'), status: { phase: 'Released' } };
  const deleting = {
    ...pv('del', '1Gi'),
    metadata: { name: 'del', deletionTimestamp: '2026-01-01T00:00:00Z' },
  };
  assert.equal(name(findBestMatch(claim('1Gi'), [released, deleting, free])), 'free');
});

test('node affinity is checked against the selected node', () => {
  const onN1 = pv('n1vol', '1Gi', {
    nodeAffinity: {
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n1'] }] },
        ],
      },
    },
  });
  const node = (n: string) => ({ metadata: { name: n, labels: { 'kubernetes.io/hostname': n } } });
  assert.equal(name(findBestMatch(claim('1Gi'), [onN1], node('n1'))), 'n1vol');
  assert.equal(findBestMatch(claim('1Gi'), [onN1], node('n2')), undefined);
  assert.equal(findBestMatch(claim('1Gi'), [onN1], null), undefined);
  // Immediate binding (no node) ignores affinity, as Kubernetes does.
  assert.equal(name(findBestMatch(claim('1Gi'), [onN1])), 'n1vol');
});

test('protection: a pod that has not terminated uses its claims and its ephemeral claims', () => {
  const pod = (phase: string): Pod => ({
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      containers: [{ name: 'c' }],
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: 'data-claim' } },
        { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: {} } } },
        { name: 'tmp', emptyDir: {} },
      ],
    },
    status: { phase },
  });
  assert.deepEqual(claimsOfPod(pod('Running')), ['data-claim', 'web-scratch']);
  assert.equal(claimInUse('data-claim', [pod('Running')]), true);
  assert.equal(claimInUse('web-scratch', [pod('Pending')]), true);
  assert.equal(claimInUse('data-claim', [pod('Succeeded')]), false);
  assert.equal(claimInUse('other', [pod('Running')]), false);
});

test('ephemeral: the claim <pod>-<volume> from the template, owned by the pod', () => {
  const pod: Pod = {
    metadata: { name: 'web', namespace: 'default', uid: 'pod-uid' },
    spec: {
      containers: [{ name: 'c' }],
      volumes: [
        {
          name: 'scratch',
          ephemeral: {
            volumeClaimTemplate: {
              metadata: { labels: { app: 'web' } },
              spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
            },
          },
        },
      ],
    },
  };
  const c = ephemeralClaimFor(pod, 'scratch');
  assert.equal(c?.metadata?.name, 'web-scratch');
  assert.deepEqual(c?.metadata?.labels, { app: 'web' });
  assert.deepEqual(c?.metadata?.ownerReferences, [
    {
      apiVersion: 'v1',
      kind: 'Pod',
      name: 'web',
      uid: 'pod-uid',
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);
  assert.deepEqual(c?.spec?.resources, { requests: { storage: '1Gi' } });
  assert.equal(ephemeralClaimFor(pod, 'nope'), undefined);
});

test('expander: growth is pending when a bound claim asks for more than it has', () => {
  const bound = (req: string, cap: string) => ({
    ...claim(req, { volumeName: 'v' }),
    status: { phase: 'Bound', capacity: { storage: cap } },
  });
  assert.equal(pendingGrowth(bound('2Gi', '1Gi')), '2Gi');
  assert.equal(pendingGrowth(bound('1Gi', '1Gi')), undefined);
  assert.equal(pendingGrowth(bound('1Gi', '1024Mi')), undefined);
  assert.equal(pendingGrowth({ ...claim('2Gi'), status: { phase: 'Pending' } }), undefined);
});
