// kubit-test: serial
// kubit-net's overlay in a real kernel: nodes are network namespaces on two
// underlay segments joined only by a router namespace that knows no pod
// subnet, so pods on different segments reach each other only through VXLAN.
// Nodes are API objects of a real control plane (spec.podCIDR and InternalIP,
// no kubelet); a kubit-net process runs in each node namespace (auto mode).
//
//   root ns (control plane) ── router ─┬─ seg1 192.168.10.0/24: a .10 (10.244.1.0/24), c .30 (10.244.3.0/24)
//                                      └─ seg2 192.168.20.0/24: b .20 (10.244.2.0/24)
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Node } from '@kubit/api';
import { type CoreEvent, KubeClient, resources } from '@kubit/client';
import {
  type ControlPlane,
  daemonCommand,
  startControlPlane,
  startProcess,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';
import {
  BACKEND_DATA_ANNOTATION,
  netpolTableName,
  POD_MTU_ANNOTATION,
  PUBLIC_IP_ANNOTATION,
  ROUTE_PROTO,
  vtepMac,
} from '../src/index.js';
import { createOverlayLab, type OverlayLab, writeLabKubeconfig } from './overlay-lab.js';

const PID = process.pid;
const nodeName = (k: string) => `ov-${PID}-${k}`;

describe('the kubit-net overlay across a router (real kernel)', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let lab: OverlayLab;
  const kubeconfigs = new Map<string, string>();
  let device: string;
  const agents = new Map<string, TestProcess>();
  let starts = 0;

  const startAgent = (key: string, extra: string[] = []) => {
    const n = lab.nodes.get(key);
    assert.ok(n);
    const cmd = daemonCommand('net', 'main.ts');
    const logFile = join(cp.logDir, `kubit-net-${key}-${++starts}.log`);
    const p = startProcess({
      name: `kubit-net-${key}`,
      command: 'ip',
      args: [
        'netns',
        'exec',
        n.ns,
        cmd.command,
        ...cmd.args,
        `--kubeconfig=${kubeconfigs.get(key)}`,
        `--hostname-override=${nodeName(key)}`,
        '--overlay-mode=auto',
        `--vxlan-device=${device}`,
        '--network-policy=false',
        ...extra,
      ],
      env: { KUBIT_LOG_FORMAT: 'json' },
      logFile,
    });
    agents.set(key, p);
    return logFile;
  };
  const createNode = async (key: string, podCIDR: string, ip?: string) => {
    const node = await client.create<Node>(resources.nodes, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: nodeName(key) },
      spec: { podCIDR, podCIDRs: [podCIDR] },
    });
    if (ip)
      await client.updateStatus<Node>(resources.nodes, {
        ...node,
        status: { addresses: [{ type: 'InternalIP', address: ip }] },
      });
  };
  const addLabNode = async (key: string, segment: number, host: number, podIndex: number) => {
    const n = lab.addNode(key, segment, host, podIndex);
    await createNode(key, n.podCIDR, n.underlayIP);
    startAgent(key);
    return n;
  };
  const json = <T>(ns: string, ...args: string[]) => JSON.parse(lab.ip(ns, '-j', ...args) || '[]') as T;
  const nsOf = (key: string) => lab.nodes.get(key)?.ns ?? assert.fail(`no lab node ${key}`);
  const routesOf = (key: string) =>
    json<{ dst: string; gateway?: string; dev?: string }[]>(
      nsOf(key),
      'route',
      'show',
      'proto',
      String(ROUTE_PROTO),
    );
  const hasDevice = (key: string) => spawnSync('ip', ['-n', nsOf(key), 'link', 'show', device]).status === 0;
  const neighOf = (key: string) =>
    hasDevice(key)
      ? json<{ dst: string; lladdr?: string }[]>(
          nsOf(key),
          'neigh',
          'show',
          'dev',
          device,
          'nud',
          'permanent',
        )
      : [];
  const fdbOf = (key: string) =>
    hasDevice(key)
      ? (JSON.parse(
          execFileSync('bridge', ['-n', nsOf(key), '-j', 'fdb', 'show', 'dev', device], {
            encoding: 'utf8',
          }) || '[]',
        ) as { mac: string; dst?: string }[])
      : [];
  const kernelSnapshot = (key: string) =>
    JSON.stringify({ routes: routesOf(key), neigh: neighOf(key), fdb: fdbOf(key).filter((f) => f.dst) });
  const getPod = async (from: string, to: string, path = '/', timeoutMs = 5000) =>
    lab.fetch(lab.nodes.get(from)?.podNs ?? '', `http://${lab.nodes.get(to)?.podIP}${path}`, timeoutMs);
  const expectPodToPod = async (from: string, to: string) => {
    let last = '';
    await waitFor(
      `HTTP 200 from pod ${from} to pod ${to}`,
      async () => {
        const r = await getPod(from, to, '/', 2000);
        last = JSON.stringify(r);
        return r.status === 200 && r.body === `pod ${to}`;
      },
      20_000,
      200,
    ).catch((err: Error) => assert.fail(`${err.message}: last ${last}\n${logTail()}`));
  };
  const logTail = () => {
    try {
      return execFileSync('sh', ['-c', `tail -n 5 ${cp.logDir}/kubit-net-*.log`], { encoding: 'utf8' });
    } catch {
      return '';
    }
  };

  before(async () => {
    // The nodes reach the apiserver over the lab's veth, so it listens beyond loopback.
    cp = await startControlPlane({
      apiserverArgs: ['--bind-address=0.0.0.0'],
      nodes: ['a', 'b', 'c'].map(nodeName),
    });
    client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
    lab = createOverlayLab(cp.logDir);
    device = `kov${lab.tag}`;
    const port = new URL(cp.url).port;
    // Each agent runs as its node (system:node:<name>): the Node authorizer must let it patch its own Node.
    // The serving certificate names localhost: verify against it while dialling the lab address.
    for (const k of ['a', 'b', 'c']) {
      const cert = cp.pki.kubeletClient(nodeName(k));
      const path = writeLabKubeconfig(join(cp.dir, `overlay-${k}.kubeconfig`), {
        server: `https://${lab.hostIP}:${port}`,
        caFile: cp.caFile,
        ...cert,
        user: k,
      });
      kubeconfigs.set(k, path);
    }
    await addLabNode('a', 1, 10, 1);
    await addLabNode('b', 2, 20, 2);
  });

  after(async () => {
    for (const a of agents.values()) if (a.running) await a.stop();
    lab?.cleanup();
    await cp?.stop();
  });

  it('publishes each node’s tunnel endpoint and pod MTU, and makes the VXLAN device right', async () => {
    for (const k of ['a', 'b']) {
      const n = await waitFor(`node ${k}'s annotations`, async () => {
        const node = await client.get<Node>(resources.nodes, nodeName(k));
        return node.metadata?.annotations?.[POD_MTU_ANNOTATION] ? node : undefined;
      });
      const ann = n.metadata?.annotations ?? {};
      assert.equal(ann[POD_MTU_ANNOTATION], '1450');
      assert.equal(ann[PUBLIC_IP_ANNOTATION], lab.nodes.get(k)?.underlayIP);
      assert.deepEqual(JSON.parse(ann[BACKEND_DATA_ANNOTATION] ?? ''), {
        VNI: 1,
        VtepMAC: vtepMac(nodeName(k), 1),
      });
      // The pods get the MTU kubit-net published (the kubelet writes it into the conflist).
      lab.setPodMtu(k, Number(ann[POD_MTU_ANNOTATION]));
    }
    const [link] = json<
      {
        mtu: number;
        address: string;
        linkinfo: {
          info_kind: string;
          info_data: { id: number; port: number; local: string; learning: boolean };
        };
      }[]
    >(nsOf('a'), '-d', 'link', 'show', device);
    assert.equal(link.linkinfo.info_kind, 'vxlan');
    assert.equal(link.linkinfo.info_data.id, 1);
    assert.equal(link.linkinfo.info_data.port, 8472);
    assert.equal(link.linkinfo.info_data.local, '192.168.10.10');
    assert.equal(link.linkinfo.info_data.learning, false);
    assert.equal(link.mtu, 1450);
    assert.equal(link.address, vtepMac(nodeName('a'), 1));
  });

  it('carries HTTP and a 10 MiB transfer between pods on different segments through VXLAN', async () => {
    await expectPodToPod('a', 'b');
    await expectPodToPod('b', 'a');
    assert.deepEqual(
      routesOf('a').map((r) => [r.dst, r.gateway, r.dev]),
      [['10.244.2.0/24', '10.244.2.0', device]],
    );
    const big = await getPod('a', 'b', `/bytes?n=${10 * 1024 * 1024}`, 30_000);
    assert.equal(big.status, 200, JSON.stringify(big));
    assert.equal(big.bytes, 10 * 1024 * 1024);
  });

  it('auto: a third node on a’s segment is reached by a host-gw route from a, by VXLAN from b', async () => {
    await addLabNode('c', 1, 30, 3);
    await waitFor('a to route to c via host-gw', () =>
      routesOf('a').some(
        (r) => r.dst === '10.244.3.0/24' && r.gateway === '192.168.10.30' && r.dev === 'eth0',
      ),
    );
    await waitFor('b to route to c through VXLAN', () =>
      routesOf('b').some((r) => r.dst === '10.244.3.0/24' && r.gateway === '10.244.3.0' && r.dev === device),
    );
    lab.setPodMtu('c', 1450);
    await expectPodToPod('a', 'c');
    await expectPodToPod('c', 'b');
  });

  it('follows a node’s underlay address change', async () => {
    // b gets a second address and its Node says so: its agent moves its VTEP, the others their FDB entries.
    lab.ip(nsOf('b'), 'addr', 'add', '192.168.20.21/24', 'dev', 'eth0');
    const node = await client.get<Node>(resources.nodes, nodeName('b'));
    await client.updateStatus<Node>(resources.nodes, {
      ...node,
      status: { ...node.status, addresses: [{ type: 'InternalIP', address: '192.168.20.21' }] },
    });
    const macB = vtepMac(nodeName('b'), 1);
    for (const k of ['a', 'c'])
      await waitFor(`${k}'s FDB entry for b to move`, () =>
        fdbOf(k).some((f) => f.mac === macB && f.dst === '192.168.20.21'),
      );
    assert.ok(!fdbOf('a').some((f) => f.dst === '192.168.20.20'), 'the old FDB entry is gone');
    await expectPodToPod('a', 'b');
  });

  it('kill -9 of an agent: traffic keeps flowing; the restart rewrites nothing', async () => {
    const before = kernelSnapshot('a');
    agents.get('a')?.child.kill('SIGKILL');
    await agents.get('a')?.exited;
    await expectPodToPod('a', 'b');
    await expectPodToPod('c', 'a');
    const log = startAgent('a');
    const first = await waitFor('the restarted agent’s first sync', () => {
      const line = readFileSync(log, 'utf8')
        .split('\n')
        .find((l) => l.includes('overlay: kernel in step'));
      return line ? (JSON.parse(line) as { commands: number; ip: string[]; bridge: string[] }) : undefined;
    });
    assert.equal(first.commands, 0, `the restart wrote ${JSON.stringify([first.ip, first.bridge])}`);
    assert.equal(kernelSnapshot('a'), before);
  });

  it('two nodes with one pod subnet, a node without an address: Warning Events, nothing else changed', async () => {
    const before = kernelSnapshot('a');
    await createNode('dup', '10.244.2.0/24', '192.168.20.99');
    await createNode('noaddr', '10.244.9.0/24');
    const reasons = await waitFor('Warning Events on the bad nodes', async () => {
      const list = await client.list<CoreEvent>(resources.events, { namespace: 'default' });
      const got = new Set(
        list.items
          .filter((e) => e.source?.component === 'kubit-net' && e.type === 'Warning')
          .map((e) => `${e.involvedObject.name} ${e.reason}`),
      );
      const want = [`${nodeName('dup')} PodCIDRConflict`, `${nodeName('noaddr')} NoUnderlayAddress`];
      return want.every((w) => got.has(w)) ? got : undefined;
    });
    assert.ok(reasons);
    // Give the agents a moment past the events to (wrongly) change something.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(kernelSnapshot('a'), before);
    await expectPodToPod('a', 'b');
    await client.delete(resources.nodes, nodeName('dup'));
    await client.delete(resources.nodes, nodeName('noaddr'));
  });

  it('a node deleted: its route, neighbour and FDB entries go on every other node within seconds', async () => {
    await agents.get('c')?.stop();
    await client.delete(resources.nodes, nodeName('c'));
    const macC = vtepMac(nodeName('c'), 1);
    for (const k of ['a', 'b'])
      await waitFor(
        `${k} to forget c`,
        () =>
          !routesOf(k).some((r) => r.dst === '10.244.3.0/24') &&
          !neighOf(k).some((n) => n.dst === '10.244.3.0') &&
          !fdbOf(k).some((f) => f.mac === macC),
        5000,
        100,
      );
    lab.removeNode('c');
    await expectPodToPod('b', 'a');
  });

  it('SIGTERM leaves the kernel as it is; with --network-policy the daemon also writes the netpol table', async () => {
    const before = kernelSnapshot('b');
    await agents.get('b')?.stop();
    assert.equal(agents.get('b')?.running, false);
    assert.equal(kernelSnapshot('b'), before, 'SIGTERM removed nothing');
    await expectPodToPod('b', 'a');
    // The NetworkPolicy agent reads NetworkPolicies, which a node's own identity may not: run it as admin here.
    const admin = writeLabKubeconfig(join(cp.dir, 'overlay-admin.kubeconfig'), {
      server: `https://${lab.hostIP}:${new URL(cp.url).port}`,
      caFile: cp.caFile,
      cert: cp.clientCert,
      key: cp.clientKey,
      user: 'admin',
    });
    startAgent('b', [`--kubeconfig=${admin}`, '--network-policy=true']);
    const table = netpolTableName(nodeName('b'));
    await waitFor(
      'the netpol table in b',
      () => spawnSync('ip', ['netns', 'exec', nsOf('b'), 'nft', 'list', 'table', 'inet', table]).status === 0,
    );
    const ready = await waitFor('/readyz on :10263 in b', async () => {
      const r = await lab.fetch(nsOf('b'), 'http://127.0.0.1:10263/readyz', 2000);
      return r.status === 200 ? r : undefined;
    });
    assert.equal(ready.status, 200);
    const metrics = await lab.fetch(nsOf('b'), 'http://127.0.0.1:10263/metrics', 2000);
    assert.equal(metrics.status, 200);
    assert.equal(kernelSnapshot('b'), before);
  });

  it('--cleanup leaves nothing of kubit-net in the node (device, routes, neighbours, FDB, netpol table)', async () => {
    for (const k of ['a', 'b']) {
      await agents.get(k)?.stop();
      const cmd = daemonCommand('net', 'main.ts');
      const r = spawnSync(
        'ip',
        [
          'netns',
          'exec',
          nsOf(k),
          cmd.command,
          ...cmd.args,
          `--hostname-override=${nodeName(k)}`,
          `--vxlan-device=${device}`,
          '--cleanup',
        ],
        { encoding: 'utf8', env: { ...process.env, KUBIT_LOG_FORMAT: 'json' } },
      );
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(routesOf(k), []);
      assert.equal(hasDevice(k), false, `${k}: the device is gone`);
      const tables = execFileSync('ip', ['netns', 'exec', nsOf(k), 'nft', 'list', 'tables'], {
        encoding: 'utf8',
      });
      assert.ok(!tables.includes('kubit-netpol'), `${k}: netpol table left: ${tables}`);
    }
  });

  it('an unknown --overlay-mode is one clear line and exit 2', () => {
    const cmd = daemonCommand('net', 'main.ts');
    const r = spawnSync(
      cmd.command,
      [...cmd.args, '--kubeconfig=/x', '--hostname-override=n', '--overlay-mode=ipip'],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(r.status, 2);
    assert.equal(r.stderr.trim(), 'kubit-net: unknown --overlay-mode "ipip": use host-gw, vxlan or auto');
  });
});
