// kubit-test: serial
// kubit-proxy end to end: a real control plane, kubit-proxy as a real process
// programming a network namespace the test made (--network-namespace), tiny
// servers in "pod" namespaces joined to it by veth over a bridge, and real
// connections from inside the "node" namespace, from the host to its node port, and
// from an "outside" client namespace routed through the node (the pods' default
// route is the node, as a pod network's is, so a DNATed reply to a client whose
// address was kept goes back through the node's conntrack).
//
//   root ns (the test) ── bridge 10.213.x.1 ── node ns 10.213.x.10   (kubit-proxy's rules)
//                                          │     └─ ext0 198.18.0.1 ── client ns 198.18.0.2
//                                          ├── pod-1 ns 10.213.x.11  (:8080, :8081 tcp, :5353 udp)
//                                          ├── pod-2 ns 10.213.x.12
//                                          └── pod-3 ns 10.213.x.13
//
// Every endpoint is on the lab's bridge; an endpoint "on another node" is one whose
// EndpointSlice entry names another nodeName than kubit-proxy's --hostname-override.
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
import { createNetns, deleteNetns, normalizedTable } from './netns.js';
import { requests, startEndpointServer, tally } from './traffic.js';

const NODE = 'node-a';
/** Endpoints with this nodeName are not this proxy's node's. */
const OTHER = 'node-b';
/** The outside client's side of its link to the node (addresses only inside our namespaces). */
const CLIENT_IP = '198.18.0.2';
const NODE_EXT_IP = '198.18.0.1';
/** A LoadBalancer ingress address, routed to the node by the client's default route. */
const LB_IP = '203.0.113.7';

describe('kubit-proxy', () => {
  let cp: ControlPlane;
  let lab: NetnsLab;
  let client: KubeClient;
  let proxy: TestProcess;
  let healthzPort = 0;
  let metricsPort = 0;
  const servers: TestProcess[] = [];
  let nodeNs = '';
  let nodeIP = '';
  let clientNs = '';
  const pod = (i: number) => lab.members[i].address;
  const pods = [1, 2, 3];

  const startProxy = async () => {
    healthzPort = await freePort();
    metricsPort = await freePort();
    proxy = startDaemon({
      name: 'kubit-proxy',
      pkg: 'proxy',
      args: [
        `--kubeconfig=${cp.kubeconfigPath}`,
        `--hostname-override=${NODE}`,
        `--network-namespace=${nodeNs}`,
        `--cluster-cidr=${lab.subnet}`,
        `--healthz-bind-address=127.0.0.1:${healthzPort}`,
        `--metrics-bind-address=127.0.0.1:${metricsPort}`,
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
    // The outside client: its own namespace, one veth to the node, default route via the node.
    clientNs = createNetns();
    inNode('ip', 'link', 'add', 'ext0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', clientNs);
    inNode('ip', 'addr', 'add', `${NODE_EXT_IP}/24`, 'dev', 'ext0');
    inNode('ip', 'link', 'set', 'ext0', 'up');
    const inClient = (...args: string[]) => execFileSync('ip', ['netns', 'exec', clientNs, ...args]);
    inClient('ip', 'addr', 'add', `${CLIENT_IP}/24`, 'dev', 'eth0');
    inClient('ip', 'link', 'set', 'eth0', 'up');
    inClient('ip', 'route', 'add', 'default', 'via', NODE_EXT_IP);
    for (const i of pods) {
      execFileSync('ip', [
        'netns',
        'exec',
        lab.members[i].ns,
        'ip',
        'route',
        'add',
        'default',
        'via',
        nodeIP,
      ]);
    }
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
    if (clientNs) deleteNetns(clientNs);
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

  /** An endpoint: a pod index (on this node), or a pod said to be on another node. */
  type Ep = number | { pod: number; node: string };
  const elsewhere = (i: number): Ep => ({ pod: i, node: OTHER });

  const sliceBody = (
    svc: string,
    podIdx: Ep[],
    port = 8080,
    portName = 'http',
    protocol = 'TCP',
  ): EndpointSlice => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${svc}-x1`, namespace: 'default', labels: { [SERVICE_NAME_LABEL]: svc } },
    addressType: 'IPv4',
    ports: [{ name: portName, port, protocol }],
    endpoints: podIdx.map((e) => ({
      addresses: [pod(typeof e === 'number' ? e : e.pod)],
      nodeName: typeof e === 'number' ? NODE : e.node,
      conditions: { ready: true },
    })),
  });

  const setEndpoints = async (
    svc: string,
    podIdx: Ep[],
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

  /** Reads the Service, changes it, writes it back (spec through the object, status through services/status). */
  const updateService = async (name: string, change: (s: Service) => Service, status = false) => {
    const cur = await client.get<Service>(resources.services, name, { namespace: 'default' });
    const body = change(cur);
    return status
      ? client.updateStatus(resources.services, body, { namespace: 'default' })
      : client.update(resources.services, body, { namespace: 'default' });
  };

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

  const metric = async (name: string) => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line ? Number(line.split(' ')[1]) : undefined;
  };

  /** Which pods answered, without the peer address. */
  const podsOf = (r: string[]) => [...new Set(r.map((x) => x.split(' ')[0]))].sort();
  const answered = (r: string[]) => r[0]?.startsWith('pod-') ?? false;

  it("externalTrafficPolicy: Local: a node port reaches only this node's endpoints, and they see the client's address", async () => {
    await createService('ext', {
      type: 'NodePort',
      clusterIP: '10.96.100.20',
      ports: [{ name: 'who', port: 80, targetPort: 8081, nodePort: 30081 }],
    });
    await setEndpoints('ext', [1, elsewhere(2), elsewhere(3)], 8081, 'who');
    // Cluster (the default): every endpoint, each seeing the node's address (masqueraded).
    await waitFor('the node port to answer the client', async () =>
      answered(await requests(clientNs, nodeIP, 30081)),
    );
    assert.deepEqual(names(await requests(clientNs, nodeIP, 30081, { count: 30 })), [
      `pod-1 ${nodeIP}`,
      `pod-2 ${nodeIP}`,
      `pod-3 ${nodeIP}`,
    ]);

    await updateService('ext', (s) => ({ ...s, spec: { ...s.spec, externalTrafficPolicy: 'Local' } }));
    await waitFor(
      'only the local endpoint to answer, seeing the client',
      async () =>
        names(await requests(clientNs, nodeIP, 30081, { count: 10 })).join() === `pod-1 ${CLIENT_IP}`,
    );
    assert.deepEqual(names(await requests(clientNs, nodeIP, 30081, { count: 30 })), [`pod-1 ${CLIENT_IP}`]);
    // On every local address of the node.
    assert.deepEqual(names(await requests(clientNs, NODE_EXT_IP, 30081, { count: 5 })), [
      `pod-1 ${CLIENT_IP}`,
    ]);
    // The node itself is not external (it may use every endpoint), nor is the cluster IP.
    assert.deepEqual(podsOf(await requests(nodeNs, nodeIP, 30081, { count: 30 })), [
      'pod-1',
      'pod-2',
      'pod-3',
    ]);
    assert.deepEqual(podsOf(await requests(nodeNs, '10.96.100.20', 80, { count: 30 })), [
      'pod-1',
      'pod-2',
      'pod-3',
    ]);

    // No endpoint on this node: an outside client is dropped (as kube-proxy does); the node still gets through.
    await setEndpoints('ext', [elsewhere(1), elsewhere(2), elsewhere(3)], 8081, 'who');
    await waitFor(
      'the outside client to be dropped',
      async () => (await requests(clientNs, nodeIP, 30081, { timeoutMs: 700 }))[0] === 'ETIMEDOUT',
    );
    assert.ok(answered(await requests(nodeNs, nodeIP, 30081)));
  });

  it('a LoadBalancer answers the client on the ingress IP written to services/status', async () => {
    await createService('lb', {
      type: 'LoadBalancer',
      clusterIP: '10.96.100.21',
      ports: [{ name: 'who', port: 80, targetPort: 8081 }],
    });
    await setEndpoints('lb', [1, elsewhere(2), elsewhere(3)], 8081, 'who');
    await waitFor('the cluster IP', async () => answered(await requests(nodeNs, '10.96.100.21', 80)));
    // No ingress address yet: nothing answers there (the node has no route to it).
    assert.ok(!answered(await requests(clientNs, LB_IP, 80, { timeoutMs: 1000 })));

    const lb = { loadBalancer: { ingress: [{ ip: LB_IP }] } };
    await updateService('lb', (s) => ({ ...s, status: lb }), true);
    await waitFor('the ingress IP to answer', async () => answered(await requests(clientNs, LB_IP, 80)));
    // Cluster: every endpoint, masqueraded.
    assert.deepEqual(names(await requests(clientNs, LB_IP, 80, { count: 30 })), [
      `pod-1 ${nodeIP}`,
      `pod-2 ${nodeIP}`,
      `pod-3 ${nodeIP}`,
    ]);
    // Local: this node's endpoint only, and the client's own address.
    await updateService('lb', (s) => ({ ...s, spec: { ...s.spec, externalTrafficPolicy: 'Local' } }));
    await waitFor(
      'only the local endpoint on the ingress IP',
      async () => names(await requests(clientNs, LB_IP, 80, { count: 10 })).join() === `pod-1 ${CLIENT_IP}`,
    );
    // The address taken back: it stops answering.
    await updateService('lb', (s) => ({ ...s, status: {} }), true);
    await waitFor(
      'the ingress IP to stop answering',
      async () => !answered(await requests(clientNs, LB_IP, 80, { timeoutMs: 1000 })),
    );
  });

  it("internalTrafficPolicy: Local: the cluster IP reaches only this node's endpoints; none here drops, none at all refuses", async () => {
    await createService('int', {
      clusterIP: '10.96.100.22',
      internalTrafficPolicy: 'Local',
      ports: [{ name: 'who', port: 80, targetPort: 8081 }],
    });
    await setEndpoints('int', [elsewhere(1), 2, elsewhere(3)], 8081, 'who');
    await waitFor('the cluster IP', async () => answered(await requests(nodeNs, '10.96.100.22', 80)));
    assert.deepEqual(podsOf(await requests(nodeNs, '10.96.100.22', 80, { count: 30 })), ['pod-2']);

    // Endpoints only elsewhere: dropped, as kube-proxy does (a reject would claim there are none).
    await setEndpoints('int', [elsewhere(1), elsewhere(2), elsewhere(3)], 8081, 'who');
    await waitFor(
      'the cluster IP to drop',
      async () => (await requests(nodeNs, '10.96.100.22', 80, { timeoutMs: 700 }))[0] === 'ETIMEDOUT',
    );
    // No endpoints at all: refused at once.
    await setEndpoints('int', [], 8081, 'who');
    await waitFor(
      'the cluster IP to refuse',
      async () => (await requests(nodeNs, '10.96.100.22', 80))[0] === 'ECONNREFUSED',
    );
    // All of these changes went out as incremental syncs (only the Services changed re-planned);
    // the one full sync was the start.
    const partial = (await metric('kubeproxy_sync_partial_proxy_rules_duration_seconds_count')) ?? 0;
    assert.ok(partial > 10, `${partial} incremental syncs`);
    assert.equal(await metric('kubeproxy_sync_full_proxy_rules_duration_seconds_count'), 1);
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
