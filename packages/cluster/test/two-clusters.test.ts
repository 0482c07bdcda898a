// kubit-test: serial
// Two one-machine clusters at once, as two checkouts would make them: each
// `up --name` picks its own pod and Service ranges and ports beside the other
// (the machine's cluster registry), both serve their own nginx pod by IP from
// this machine, a third cluster asking for a name or a range the first holds is
// refused with the holder's name and how to stop it, `kubit cluster list`
// shows them, and `down --purge` of both leaves no bridge, route, nft table or
// registry entry behind.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { clusterId } from '../src/layout.js';
import { fromSources, httpGet, kubitCli, repoRoot, runWithOutput, waitForRunningApp } from './helpers.js';

const run = promisify(execFile);
const launcher = join(repoRoot, 'packages', 'cluster', 'src', 'main.ts');
const manifest = join(repoRoot, 'examples', 'pod.yaml');

function launch(args: string[], timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return runWithOutput(process.execPath, fromSources(launcher, args), {
    env: { ...process.env, KUBIT_SOURCE: '1' },
    stdin: 'ignore',
    until: 'exit',
    timeoutMs,
  });
}

interface TestCluster {
  name: string;
  stateDir: string;
  settings?: { clusterCidr: string; serviceCidr: string; portOffset: number };
  /** The /24 its pod got its address from (its node's pod subnet). */
  podSubnet?: string;
}

describe('several clusters on one machine', { timeout: 900_000 }, () => {
  const suffix = randomBytes(2).toString('hex');
  const clusters: TestCluster[] = [
    { name: `two-a-${suffix}`, stateDir: '' },
    { name: `two-b-${suffix}`, stateDir: '' },
  ];
  const kubit = (c: TestCluster) => async (args: string[], input?: string) => {
    const r = await runWithOutput(process.execPath, fromSources(kubitCli, args), {
      env: { ...process.env, KUBECONFIG: join(c.stateDir, 'kubeconfig'), NO_COLOR: '1' },
      timeoutMs: 60_000,
      ...(input ? { input } : {}),
    });
    if (r.code !== 0) throw new Error(`kubit ${args.join(' ')} (exit ${r.code}): ${r.out.trim()}`);
    return r.stdout;
  };

  before(async () => {
    if (process.getuid?.() !== 0) throw new Error('the two-cluster test needs root (containerd, CNI)');
    for (const c of clusters) c.stateDir = await mkdtemp(join(tmpdir(), `kubit-${c.name}-`));
  });

  after(async () => {
    for (const c of clusters) {
      if (!c.stateDir) continue;
      if (existsSync(join(c.stateDir, 'cluster.json'))) {
        const r = await launch(['down', '--purge', '--state-dir', c.stateDir], 120_000);
        if (r.code !== 0) process.stderr.write(`down --purge of ${c.name} failed:\n${r.out}\n`);
      }
      await rm(c.stateDir, { recursive: true, force: true });
    }
  });

  it('each up --name gets its own ranges and ports beside the other, and both serve their pods by IP', async (t) => {
    for (const c of clusters) {
      const up = await launch(
        ['up', '--name', c.name, '--state-dir', c.stateDir, '--nodes', '1', '--timeout', '180'],
        300_000,
      );
      assert.equal(up.code, 0, `up of ${c.name} failed:\n${up.out}`);
      assert.match(up.out, new RegExp(`cluster "${c.name}", 1 node\\(s\\) Ready`));
      c.settings = JSON.parse(readFileSync(join(c.stateDir, 'cluster.json'), 'utf8'));
      t.diagnostic(`${c.name}: ${JSON.stringify(c.settings)}`);
    }
    const [a, b] = clusters;
    assert.notEqual(a.settings?.clusterCidr, b.settings?.clusterCidr);
    assert.notEqual(a.settings?.serviceCidr, b.settings?.serviceCidr);
    assert.notEqual(a.settings?.portOffset, b.settings?.portOffset);

    // The same manifest in both: each pod answers on its own cluster's pod range.
    const ips: string[] = [];
    for (const c of clusters) {
      await kubit(c)(['apply', '-f', manifest]);
      const [ip] = await waitForRunningApp(kubit(c), 120_000);
      assert.ok(
        ip.startsWith(c.settings?.clusterCidr.split('.').slice(0, 2).join('.') ?? '?'),
        `${ip} in ${c.name}'s range`,
      );
      ips.push(ip);
      c.podSubnet = `${ip.split('.').slice(0, 3).join('.')}.0/24`;
    }
    for (const ip of ips) {
      const res = await httpGet(`http://${ip}/`, 5000);
      assert.equal(res.status, 200, ip);
      assert.match(res.body, /Welcome to nginx/);
    }
    // Each cluster's kubernetes Service has the first address of its own Service range.
    for (const c of clusters) {
      const ip = (await kubit(c)(['get', 'svc', 'kubernetes', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
      const prefix = c.settings?.serviceCidr.split('.').slice(0, 2).join('.');
      assert.ok(
        ip.startsWith(`${prefix}.`),
        `${c.name}: kubernetes at ${ip}, range ${c.settings?.serviceCidr}`,
      );
    }

    const listed = JSON.parse(await kubit(a)(['cluster', 'list', '-o', 'json'])) as {
      clusters: { name: string; status: string; clusterCidr: string }[];
    };
    for (const c of clusters) {
      const row = listed.clusters.find((x) => x.name === c.name);
      assert.ok(row, `${c.name} in kubit cluster list`);
      assert.match(row.status, /^Running/);
      assert.equal(row.clusterCidr, c.settings?.clusterCidr);
    }
    const table = await kubit(a)(['cluster', 'list']);
    assert.match(table, /^NAME\s+STATUS\s+NODES\s+API\s+POD CIDR\s+SERVICE CIDR\s+STATE/m);
  });

  it('a third cluster with a name or a range the first holds is refused, naming it and how to stop it', async () => {
    const [a] = clusters;
    const third = await mkdtemp(join(tmpdir(), 'kubit-two-c-'));
    try {
      const sameName = await launch(['up', '--name', a.name, '--state-dir', third, '--nodes', '1'], 120_000);
      assert.notEqual(sameName.code, 0);
      assert.match(
        sameName.out,
        new RegExp(
          `a cluster named "${a.name}" already exists on this machine \\(cluster "${a.name}" \\(running`,
        ),
      );
      assert.match(sameName.out, /scripts\/down --name/);
      const sameRange = await launch(
        [
          'up',
          '--name',
          `two-c-${suffix}`,
          '--state-dir',
          third,
          '--cluster-cidr',
          a.settings?.clusterCidr ?? '',
        ],
        120_000,
      );
      assert.notEqual(sameRange.code, 0);
      assert.match(
        sameRange.out,
        new RegExp(`--cluster-cidr \\S+ overlaps the pod range of cluster "${a.name}"`),
      );
      // Nothing of the refused cluster was started.
      assert.ok(!existsSync(join(third, 'run')), 'no process of the refused cluster ran');
    } finally {
      await rm(third, { recursive: true, force: true });
    }
  });

  it('down --purge of both leaves no bridge, route, nft table or registry entry', async () => {
    for (const c of clusters) {
      const down = await launch(['down', '--purge', '--state-dir', c.stateDir], 120_000);
      assert.equal(down.code, 0, down.out);
      assert.match(down.out, new RegExp(`cluster "${c.name}" is gone from this machine`));
    }
    const links = (await run('ip', ['-o', 'link', 'show'])).stdout;
    const routes = (await run('ip', ['-4', 'route'])).stdout;
    const tables = (await run('nft', ['list', 'tables'])).stdout;
    for (const c of clusters) {
      const id = clusterId(c.stateDir);
      assert.doesNotMatch(links, new RegExp(`: kbt${id}[hn]`), `${c.name}'s bridges are gone`);
      // Its node's pod subnet (other tests on this machine may have bridges of their own in 10.244/16).
      assert.ok(
        !routes.split('\n').some((l) => l.startsWith(`${c.podSubnet} `)),
        `no route into ${c.name}'s pods (${c.podSubnet}):\n${routes}`,
      );
      assert.doesNotMatch(tables, new RegExp(`kubit-proxy-${c.name}\\b`));
      assert.ok(!existsSync(c.stateDir), `${c.stateDir} removed`);
    }
    const listed = JSON.parse(await kubit(clusters[0])(['cluster', 'list', '-o', 'json'])) as {
      clusters: { name: string }[];
    };
    for (const c of clusters)
      assert.ok(!listed.clusters.some((x) => x.name === c.name), `${c.name} unlisted`);
  });
});
