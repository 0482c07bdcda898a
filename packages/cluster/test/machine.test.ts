// Placing a cluster among the machine's others (machine.ts), and the registry it
// reads (@kubit/daemon/cluster-registry), against a registry directory of the
// test's own and state directories that exist.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseCidr } from '@kubit/api';
import {
  listClusters,
  type RegisteredCluster,
  registerCluster,
  unregisterCluster,
} from '@kubit/daemon/cluster-registry';
import { type ClusterSettings, DEFAULT_SETTINGS } from '../src/config.js';
import { type MachineView, machineView, overlaps, placeCluster } from '../src/machine.js';

describe('several clusters on one machine', () => {
  let dir = '';
  let registry = '';
  const others: RegisteredCluster[] = [];
  const entry = async (name: string, over: Partial<RegisteredCluster> = {}): Promise<RegisteredCluster> => {
    const stateDir = join(dir, `state-${name}`);
    await rm(stateDir, { recursive: true, force: true });
    await mkdir(stateDir, { recursive: true });
    await writeFile(join(stateDir, 'cluster.json'), '{}');
    return {
      name,
      stateDir,
      repoRoot: '/src/other-checkout',
      nodes: 2,
      portOffset: 0,
      apiserver: 'https://127.0.0.1:6443',
      clusterCidr: '10.244.0.0/16',
      serviceCidr: '10.96.0.0/12',
      hostCidr: '10.199.3.0/24',
      ...over,
    };
  };
  const view = (o: Partial<MachineView> = {}): MachineView => ({
    others,
    routes: [],
    portFree: async () => true,
    ...o,
  });
  const settings = (o: Partial<ClusterSettings> = {}): ClusterSettings => ({ ...DEFAULT_SETTINGS, ...o });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubit-machine-'));
    registry = join(dir, 'registry');
    others.push(await entry('kubit'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('overlaps tells nested and equal ranges from disjoint ones', () => {
    assert.ok(overlaps(parseCidr('10.244.0.0/16'), parseCidr('10.244.3.0/24')));
    assert.ok(overlaps(parseCidr('10.96.0.0/12'), parseCidr('10.100.0.0/16')));
    assert.ok(!overlaps(parseCidr('10.96.0.0/12'), parseCidr('10.112.0.0/16')));
    assert.ok(!overlaps(parseCidr('10.244.0.0/16'), parseCidr('10.245.0.0/16')));
  });

  it('a new cluster gets free pod and Service ranges and ports beside another', async () => {
    const placed = await placeCluster(
      settings({ name: 'dev' }),
      { name: 'dev' },
      true,
      '10.199.9.0/24',
      '/x',
      view(),
    );
    assert.equal(placed.clusterCidr, '10.245.0.0/16');
    assert.equal(placed.serviceCidr, '10.112.0.0/16');
    assert.equal(placed.portOffset, 1000);
  });

  it('keeps clear of ranges the machine routes and ports something listens on', async () => {
    const placed = await placeCluster(
      settings({ name: 'dev' }),
      { name: 'dev' },
      true,
      '10.199.9.0/24',
      '/x',
      view({
        routes: [parseCidr('10.245.0.0/24')],
        // Something listens on 7443, the apiserver port of offset 1000.
        portFree: async (p) => p !== 7443,
      }),
    );
    assert.equal(placed.clusterCidr, '10.246.0.0/16', 'a stale bridge in 10.245.0.0/16 keeps it out');
    assert.equal(placed.portOffset, 2000);
  });

  it('refuses a name, a range or ports another cluster holds, naming it and how to stop it', async () => {
    await assert.rejects(
      placeCluster(settings(), {}, true, '10.199.9.0/24', '/x', view()),
      /a cluster named "kubit" already exists on this machine \(cluster "kubit" \(stopped; state in .*state-kubit\): stop it with \/src\/other-checkout\/scripts\/down --name kubit --purge\); give this one \(\/x\) another name with --name NAME/,
    );
    await assert.rejects(
      placeCluster(
        settings({ name: 'dev', clusterCidr: '10.244.0.0/16' }),
        { name: 'dev', clusterCidr: '10.244.0.0/16' },
        true,
        '10.199.9.0/24',
        '/x',
        view(),
      ),
      /--cluster-cidr 10\.244\.0\.0\/16 overlaps the pod range of cluster "kubit"/,
    );
    await assert.rejects(
      placeCluster(
        settings({ name: 'dev', clusterCidr: '10.100.0.0/16' }),
        { name: 'dev', clusterCidr: '10.100.0.0/16' },
        true,
        '10.199.9.0/24',
        '/x',
        view(),
      ),
      /overlaps the Service range of cluster "kubit"/,
    );
    await assert.rejects(
      placeCluster(
        settings({ name: 'dev' }),
        { name: 'dev', portOffset: 0 },
        true,
        '10.199.9.0/24',
        '/x',
        view(),
      ),
      /port \d+ \(--port-offset 0\) is also a port of cluster "kubit"/,
    );
    await assert.rejects(
      placeCluster(settings({ name: 'dev' }), { name: 'dev' }, true, '10.199.3.0/24', '/x', view()),
      /host network 10\.199\.3\.0\/24 is the host network of cluster "kubit"/,
    );
    // A saved cluster is not moved: another one now holding its range stops it from starting.
    await assert.rejects(
      placeCluster(settings({ name: 'old' }), {}, false, '10.199.9.0/24', '/x', view()),
      /overlaps the pod range of cluster "kubit" .*; stop that one first/,
    );
  });

  it('the registry lists what exists, replaces whole entries and drops only its own', async () => {
    const a = await entry('a', { clusterCidr: '10.250.0.0/16' });
    const b = await entry('b');
    registerCluster(a, registry);
    registerCluster(b, registry);
    assert.deepEqual(
      listClusters(registry).map((c) => c.name),
      ['a', 'b'],
    );
    // A state directory removed by hand: its entry is stale and not listed.
    await rm(b.stateDir, { recursive: true });
    assert.deepEqual(
      listClusters(registry).map((c) => c.name),
      ['a'],
    );
    // Another state dir's entry of the same name is not ours to remove.
    unregisterCluster('a', '/elsewhere', registry);
    assert.equal(listClusters(registry).length, 1);
    unregisterCluster('a', a.stateDir, registry);
    assert.equal(listClusters(registry).length, 0);
    // machineView leaves out this state dir's own entry.
    registerCluster(a, registry);
    assert.deepEqual((await machineView(a.stateDir, registry)).others, []);
    assert.equal((await machineView('/other', registry)).others[0]?.name, 'a');
  });
});
