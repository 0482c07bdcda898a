// kubit-test: serial
// kubit-proxy end to end: a real control plane, kubit-proxy as a real process
// programming a network namespace the test made (--network-namespace), tiny
// servers in "pod" namespaces joined to it by veth over a bridge, and real
// connections from inside the "node" namespace (and from the host to its node port).
//
//   root ns (the test) ── bridge 10.213.x.1 ── node ns 10.213.x.10   (kubit-proxy's rules)
//                                          ├── pod-1 ns 10.213.x.11  (:8080 tcp, :5353 udp)
//                                          ├── pod-2 ns 10.213.x.12
//                                          └── pod-3 ns 10.213.x.13
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { EndpointSlice, Service } from '@kubit/api';
import { SERVICE_NAME_LABEL } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import {
  type ControlPlane,
  createNetnsLab,
  freePort,
  type NetnsLab,
  startControlPlane,
  startDaemon,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';
import { endpointSlicesResource } from '../src/daemon.js';
import { TABLE_FAMILY, TABLE_NAME } from '../src/ruleset.js';
import { normalizedTable } from './netns.js';
import { requests, startEndpointServer, tally } from './traffic.js';

const NODE = 'node-a';

describe('kubit-proxy', () => {
  let cp: ControlPlane;
  let lab: NetnsLab;
  let client: KubeClient;
  let proxy: TestProcess;
  let healthzPort = 0;
  const servers: TestProcess[] = [];
  let nodeNs = '';
  let nodeIP = '';
  const pod = (i: number) => lab.members[i].address;
  const pods = [1, 2, 3];

  const startProxy = async () => {
    healthzPort = await freePort();
    proxy = startDaemon({
      name: 'kubit-proxy',
      pkg: 'proxy',
      args: [
        `--kubeconfig=${cp.kubeconfigPath}`,
        `--hostname-override=${NODE}`,
        `--network-namespace=${nodeNs}`,
        `--cluster-cidr=${lab.subnet}`,
        `--healthz-bind-address=127.0.0.1:${healthzPort}`,
        `--metrics-bind-address=127.0.0.1:${await freePort()}`,
        '--min-sync-period=50ms',
      ],
      logDir: cp.logDir,
    });
    await waitFor('kubit-proxy to be healthy', async () => {
      const r = await fetch(`http://127.0.0.1:${healthzPort}/healthz`).catch(() => undefined);
      return r?.status === 200;
    });
  };

  const logTail = () => {
    try {
      return execFileSync('tail', ['-n', '30', join(cp.logDir, 'kubit-proxy.log')], { encoding: 'utf8' });
    } catch {
      return '';
    }
  };

  before(async () => {
    cp = await startControlPlane();
    client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
    lab = await createNetnsLab(4);
    nodeNs = lab.members[0].ns;
    nodeIP = lab.members[0].address;
    const inNode = (...args: string[]) => execFileSync('ip', ['netns', 'exec', nodeNs, ...args]);
    // The node forwards node-port traffic to pods; cluster IPs need a route before DNAT
    // picks the real destination: via a lab address nobody holds, so that what is not
    // DNATed stays unanswered on the lab's own bridge.
    inNode('sysctl', '-qw', 'net.ipv4.ip_forward=1');
    const nobody = lab.subnet.replace(/\.0\/24$/, '.254');
    inNode('ip', 'route', 'add', '10.96.0.0/12', 'via', nobody);
    for (const i of pods) {
      servers.push(startEndpointServer(lab.members[i].ns, `pod-${i}`, join(cp.logDir, `pod-${i}.log`)));
    }
    await waitFor('the pod servers', async () => {
      for (const i of pods) if ((await requests(undefined, pod(i), 8080))[0] !== `pod-${i}`) return false;
      return true;
    });
    await startProxy();
  });

  after(async () => {
    await proxy?.stop();
    for (const s of servers) await s.stop();
    await lab?.cleanup();
    await cp?.stop();
  });

  const createService = (name: string, spec: Service['spec']) =>
    client.create<Service>(
      resources.services,
      { apiVersion: 'v1', kind: 'Service', metadata: { name }, spec },
      {
        namespace: 'default',
      },
    );

  const sliceBody = (
    svc: string,
    podIdx: number[],
    port = 8080,
    portName = 'http',
    protocol = 'TCP',
  ): EndpointSlice => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${svc}-x1`, namespace: 'default', labels: { [SERVICE_NAME_LABEL]: svc } },
    addressType: 'IPv4',
    ports: [{ name: portName, port, protocol }],
    endpoints: podIdx.map((i) => ({ addresses: [pod(i)], nodeName: NODE, conditions: { ready: true } })),
  });

  const setEndpoints = async (
    svc: string,
    podIdx: number[],
    port?: number,
    portName?: string,
    protocol?: string,
  ) => {
    const body = sliceBody(svc, podIdx, port, portName, protocol);
    const cur = await client
      .get<EndpointSlice>(endpointSlicesResource, body.metadata?.name ?? '', { namespace: 'default' })
      .catch(() => undefined);
    if (!cur) return client.create(endpointSlicesResource, body, { namespace: 'default' });
    return client.update(
      endpointSlicesResource,
      { ...body, metadata: { ...body.metadata, resourceVersion: cur.metadata?.resourceVersion } },
      {
        namespace: 'default',
      },
    );
  };

  const names = (r: string[]) => Object.keys(tally(r)).sort();

  it('a cluster IP reaches every ready endpoint, and a node port answers', async () => {
    await createService('web', {
      type: 'NodePort',
      clusterIP: '10.96.100.10',
      ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30080 }],
    });
    await setEndpoints('web', pods);
    await waitFor(
      'the cluster IP to reach all three pods',
      async () =>
        names(await requests(nodeNs, '10.96.100.10', 80, { count: 30 })).join() === 'pod-1,pod-2,pod-3',
      20_000,
    ).catch((err) => assert.fail(`${err.message}\n${logTail()}`));
    const t = tally(await requests(nodeNs, '10.96.100.10', 80, { count: 90 }));
    assert.deepEqual(Object.keys(t).sort(), ['pod-1', 'pod-2', 'pod-3'], JSON.stringify(t));
    // From the host (outside the node: masqueraded so the reply comes back) and from the node itself.
    assert.deepEqual(names(await requests(undefined, nodeIP, 30080, { count: 30 })), [
      'pod-1',
      'pod-2',
      'pod-3',
    ]);
    const local = await requests(nodeNs, nodeIP, 30080, { count: 10 });
    assert.ok(
      local.every((r) => r.startsWith('pod-')),
      JSON.stringify(local),
    );
    // Another port of the cluster IP is refused, not silently dropped.
    assert.deepEqual(await requests(nodeNs, '10.96.100.10', 81), ['ECONNREFUSED']);
  });

  it('removing an endpoint stops traffic to it; zero endpoints refuses at once', async () => {
    await setEndpoints('web', [1, 2]);
    await waitFor('pod-3 to get no more traffic', async () => {
      const r = await requests(nodeNs, '10.96.100.10', 80, { count: 20 });
      return !r.includes('pod-3');
    });
    assert.deepEqual(names(await requests(nodeNs, '10.96.100.10', 80, { count: 60 })), ['pod-1', 'pod-2']);

    await setEndpoints('web', []);
    await waitFor('the service to refuse connections', async () => {
      const r = await requests(nodeNs, '10.96.100.10', 80);
      return r[0] === 'ECONNREFUSED';
    });
    // Refused, not timing out, on the cluster IP and the node port alike.
    assert.deepEqual(await requests(nodeNs, '10.96.100.10', 80, { count: 3 }), Array(3).fill('ECONNREFUSED'));
    assert.deepEqual(await requests(undefined, nodeIP, 30080), ['ECONNREFUSED']);
    await setEndpoints('web', pods);
    await waitFor('the service to answer again', async () =>
      (await requests(nodeNs, '10.96.100.10', 80))[0]?.startsWith('pod-'),
    );
  });

  it('ClientIP affinity sends one client to one endpoint', async () => {
    await createService('sticky', {
      clusterIP: '10.96.100.11',
      sessionAffinity: 'ClientIP',
      ports: [{ name: 'http', port: 80, targetPort: 8080 }],
    });
    await setEndpoints('sticky', pods);
    await waitFor('the sticky service', async () =>
      (await requests(nodeNs, '10.96.100.11', 80))[0]?.startsWith('pod-'),
    );
    const r = await requests(nodeNs, '10.96.100.11', 80, { count: 40 });
    assert.equal(names(r).length, 1, JSON.stringify(tally(r)));
  });

  it('UDP: a flow sent to an endpoint that went away moves to one that is left (conntrack cleared)', async () => {
    await createService('dns', {
      clusterIP: '10.96.100.53',
      ports: [{ name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' }],
    });
    await setEndpoints('dns', [1], 5353, 'dns', 'UDP');
    // One source port: one conntrack flow, as a resolver's long-lived socket would make.
    const src = 40_000 + Math.floor(Math.random() * 10_000);
    await waitFor(
      'the UDP service',
      async () => (await requests(nodeNs, '10.96.100.53', 53, { proto: 'udp', srcPort: src }))[0] === 'pod-1',
    );
    await setEndpoints('dns', [2], 5353, 'dns', 'UDP');
    // pod-1 still answers on its own address: only a cleared flow can move the client to pod-2.
    await waitFor('the flow to move to pod-2', async () => {
      const r = await requests(nodeNs, '10.96.100.53', 53, { proto: 'udp', srcPort: src });
      return r[0] === 'pod-2';
    });
  });

  it('kill -9 and restart: the same ruleset, no duplicates, and requests keep working', async () => {
    const before = normalizedTable(nodeNs);
    assert.ok(before, 'the table exists');
    const loop = requests(nodeNs, '10.96.100.10', 80, { count: 150, gapMs: 20 });
    await new Promise((r) => setTimeout(r, 300));
    await proxy.kill();
    await startProxy();
    const during = await loop;
    assert.ok(
      during.every((r) => r.startsWith('pod-')),
      `failed during the restart: ${JSON.stringify(tally(during))}`,
    );
    assert.equal(normalizedTable(nodeNs), before);
    assert.deepEqual(names(await requests(nodeNs, '10.96.100.10', 80, { count: 60 })), [
      'pod-1',
      'pod-2',
      'pod-3',
    ]);
  });

  it('--cleanup removes the table and exits 0', async () => {
    await proxy.stop();
    assert.ok(normalizedTable(nodeNs), 'SIGTERM leaves the rules in place');
    const cleanup = startDaemon({
      name: 'kubit-proxy-cleanup',
      pkg: 'proxy',
      args: ['--cleanup', `--network-namespace=${nodeNs}`],
      logDir: cp.logDir,
    });
    const { code } = await cleanup.exited;
    assert.equal(code, 0);
    assert.equal(normalizedTable(nodeNs), undefined);
    assert.throws(() =>
      execFileSync('ip', ['netns', 'exec', nodeNs, 'nft', 'list', 'table', TABLE_FAMILY, TABLE_NAME], {
        stdio: 'pipe',
      }),
    );
  });
});
