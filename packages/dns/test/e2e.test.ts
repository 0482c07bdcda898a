// kubit-dns as a real process against a real kubit-apiserver, asked with
// Debian's dig on loopback, case by case against the Kubernetes DNS
// specification: A, SRV, PTR, headless (every ready endpoint), hostname records,
// ExternalName CNAME, NXDOMAIN, NODATA, TCP, truncation, forwarding to an
// upstream dnsmasq and SERVFAIL without it; changes answered within a second;
// the kube-dns Service and each instance's slice; kill -9 and restart.
import assert from 'node:assert/strict';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { EndpointSlice, Node, Service } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import {
  type ControlPlane,
  freePort,
  sleep,
  startControlPlane,
  startDaemon,
  stopAllProcesses,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';
import { endpointSlices } from '../src/resources.js';
import { dataOf, dig, firstData, startDnsmasq, udpQuery } from './dig.js';

type Obj = { metadata?: { name?: string; namespace?: string; resourceVersion?: string } };

const DNS_TOKEN = 'kubit-dns-test-token';
// The Nodes' InternalIPs, only ever written into slices (an EndpointSlice refuses loopback
// addresses); no traffic goes to them: every query goes to 127.0.0.1.
const NODE_1_IP = '192.0.2.11';
const NODE_2_IP = '192.0.2.12';

function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    get(url, (r) => {
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => {
        body += c;
      });
      r.on('end', () => res({ status: r.statusCode ?? 0, body }));
    }).on('error', rej);
  });
}

function headlessSlice(
  name: string,
  service: string,
  endpoints: { ip: string; hostname?: string; ready?: boolean }[],
  ports: { name: string; port: number }[] = [],
): EndpointSlice & Obj {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace: 'default', labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    endpoints: endpoints.map((e) => ({
      addresses: [e.ip],
      ...(e.hostname ? { hostname: e.hostname } : {}),
      conditions: { ready: e.ready ?? true },
    })),
    ports: ports.map((p) => ({ ...p, protocol: 'TCP' })),
  };
}

interface Instance {
  proc: TestProcess;
  port: number;
  health: number;
  metrics: number;
  node: string;
}

describe('kubit-dns against the apiserver, asked with dig', { timeout: 240_000 }, () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let kubeconfig: string;
  let upstreamPort: number;
  let upstream: TestProcess;
  let one: Instance;
  const logs: string[] = [];

  async function startDns(node: string, reuse?: Instance): Promise<Instance> {
    const port = reuse?.port ?? (await freePort());
    const health = reuse?.health ?? (await freePort());
    const metrics = reuse?.metrics ?? (await freePort());
    const name = `kubit-dns-${node}`;
    if (!logs.includes(name)) logs.push(name);
    const proc = startDaemon({
      name,
      pkg: 'dns',
      args: [
        `--kubeconfig=${kubeconfig}`,
        '--bind-address=127.0.0.1',
        `--port=${port}`,
        `--health-port=${health}`,
        `--metrics-port=${metrics}`,
        `--upstream=127.0.0.1:${upstreamPort}`,
        '--upstream-timeout=1s',
        `--hostname-override=${node}`,
      ],
      logDir: cp.logDir,
    });
    await waitFor(
      `${name} ready`,
      async () => {
        if (!proc.running) throw new Error(`${name} exited`);
        return (await httpGet(`http://127.0.0.1:${health}/ready`)).status === 200;
      },
      60_000,
      100,
    );
    await waitFor(
      `${name} answering`,
      async () => (await udpQuery(port, 'dns-version.cluster.local', 'TXT')).id,
    );
    return { proc, port, health, metrics, node };
  }

  async function createNode(name: string, ip: string): Promise<void> {
    const n = { apiVersion: 'v1', kind: 'Node', metadata: { name } } as Node & Obj;
    const created = await client.create<Node & Obj>(resources.nodes, n);
    await client.updateStatus(resources.nodes, {
      ...created,
      status: { addresses: [{ type: 'InternalIP', address: ip }] },
    } as Node & Obj);
  }

  before(async () => {
    cp = await startControlPlane({ tokens: [`${DNS_TOKEN},system:kubit-dns,kubit-dns-uid`] });
    client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
    // kubit-dns runs as system:kubit-dns (a token), so the test proves its RBAC role suffices.
    kubeconfig = `${cp.dir}/kubit-dns.kubeconfig`;
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        `- name: c\n  cluster:\n    server: ${cp.url}\n    certificate-authority: ${cp.caFile}`,
        'users:',
        `- name: dns\n  user:\n    token: ${DNS_TOKEN}`,
        'contexts:',
        '- name: c\n  context:\n    cluster: c\n    user: dns',
        'current-context: c',
        '',
      ].join('\n'),
    );
    upstreamPort = await freePort();
    upstream = await startDnsmasq(cp.dir, upstreamPort, {
      'outside.test': '198.51.100.7',
      'www.example.com': '192.0.2.53',
    });
    await createNode('dns-node-1', NODE_1_IP);
    one = await startDns('dns-node-1');
  });

  after(async () => {
    if (process.exitCode) {
      for (const n of logs) {
        try {
          const lines = readFileSync(`${cp.logDir}/${n}.log`, 'utf8').trim().split('\n').slice(-20);
          process.stderr.write(`--- ${n}.log ---\n${lines.join('\n')}\n`);
        } catch {}
      }
    }
    await stopAllProcesses();
    // KEEP_DNS_LOGS=<dir>: keep the daemons' logs for a look after the run.
    if (process.env.KEEP_DNS_LOGS) cpSync(cp.logDir, process.env.KEEP_DNS_LOGS, { recursive: true });
    await cp?.stop();
  });

  it('creates kube-system/kube-dns at 10.96.0.10 and its own slice, and answers for it', async () => {
    const svc = await waitFor('the kube-dns Service', () =>
      client.get<Service & Obj>(resources.services, 'kube-dns', { namespace: 'kube-system' }),
    );
    assert.equal(svc.spec?.clusterIP, '10.96.0.10');
    assert.equal(svc.spec?.selector, undefined);
    assert.deepEqual(
      svc.spec?.ports?.map((p) => `${p.name} ${p.port}/${p.protocol}`),
      ['dns 53/UDP', 'dns-tcp 53/TCP', 'metrics 9153/TCP'],
    );
    assert.equal(
      svc.metadata && (svc.metadata as { labels?: Record<string, string> }).labels?.['k8s-app'],
      'kube-dns',
    );
    const slice = await waitFor('the slice of dns-node-1', () =>
      client.get<EndpointSlice & Obj>(endpointSlices, 'kube-dns-dns-node-1', { namespace: 'kube-system' }),
    );
    assert.equal(
      slice.metadata &&
        (slice.metadata as { labels?: Record<string, string> }).labels?.[
          'endpointslice.kubernetes.io/managed-by'
        ],
      'kubit-dns',
    );
    assert.deepEqual(
      slice.endpoints.map((e) => [e.addresses[0], e.nodeName, e.conditions?.ready]),
      [[NODE_1_IP, 'dns-node-1', true]],
    );
    assert.deepEqual(
      slice.ports?.map((p) => `${p.name} ${p.port}/${p.protocol}`),
      [`dns ${one.port}/UDP`, `dns-tcp ${one.port}/TCP`, `metrics ${one.metrics}/TCP`],
    );
    const r = await waitFor('kube-dns A', async () => {
      const d = await dig(one.port, 'kube-dns.kube-system.svc.cluster.local', 'A');
      return dataOf(d, 'A').length > 0 && d;
    });
    assert.deepEqual(dataOf(r, 'A'), ['10.96.0.10']);
  });

  it('2.3 ClusterIP Service: A, SRV for named ports only, PTR; NODATA for AAAA; NXDOMAIN for others', async () => {
    await client.create<Service & Obj>(resources.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        clusterIP: '10.96.0.50',
        ports: [
          { name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 },
          { name: 'metrics', port: 9000, protocol: 'UDP' },
        ],
      },
    } as Service & Obj);
    await waitFor(
      'web A',
      async () => dataOf(await dig(one.port, 'web.default.svc.cluster.local'), 'A').length > 0,
    );

    const a = await dig(one.port, 'web.default.svc.cluster.local', 'A');
    assert.equal(a.status, 'NOERROR');
    assert.ok(a.flags.includes('aa'), `authoritative: ${a.flags}`);
    assert.deepEqual(dataOf(a, 'A'), ['10.96.0.50']);
    assert.equal(a.answer[0][1], '30', 'TTL 30 as the kubernetes Corefile');

    const srv = await dig(one.port, '_http._tcp.web.default.svc.cluster.local', 'SRV');
    assert.deepEqual(dataOf(srv, 'SRV'), ['0 100 80 web.default.svc.cluster.local.']);
    const udpSrv = await dig(one.port, '_metrics._udp.web.default.svc.cluster.local', 'SRV');
    assert.deepEqual(dataOf(udpSrv, 'SRV'), ['0 100 9000 web.default.svc.cluster.local.']);
    assert.ok(srv.text.includes('ADDITIONAL SECTION'), 'the target A record in additional');

    const ptr = await dig(one.port, '-x', '10.96.0.50');
    assert.deepEqual(dataOf(ptr, 'PTR'), ['web.default.svc.cluster.local.']);

    const aaaa = await dig(one.port, 'web.default.svc.cluster.local', 'AAAA');
    assert.equal(aaaa.status, 'NOERROR');
    assert.equal(aaaa.answer.length, 0);
    assert.equal(aaaa.authority[0]?.[3], 'SOA', 'NODATA carries the SOA');

    const nx = await dig(one.port, 'nothere.default.svc.cluster.local', 'A');
    assert.equal(nx.status, 'NXDOMAIN');
    assert.equal(nx.authority[0]?.[3], 'SOA');

    const caseless = await dig(one.port, 'WEB.DEFAULT.svc.Cluster.Local', 'A');
    assert.deepEqual(dataOf(caseless, 'A'), ['10.96.0.50']);

    const version = await dig(one.port, 'dns-version.cluster.local', 'TXT');
    assert.deepEqual(dataOf(version, 'TXT'), ['"1.0.1"']);

    const tcp = await dig(one.port, '+tcp', 'web.default.svc.cluster.local', 'A');
    assert.deepEqual(dataOf(tcp, 'A'), ['10.96.0.50']);
    assert.match(tcp.text, /\(TCP\)/);
  });

  it('2.4 headless Service: every ready endpoint, hostname records, SRV per endpoint, PTR', async () => {
    await client.create<Service & Obj>(resources.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'db', namespace: 'default' },
      spec: { clusterIP: 'None', ports: [{ name: 'pg', port: 5432, protocol: 'TCP' }] },
    } as Service & Obj);
    await client.create(
      endpointSlices,
      headlessSlice(
        'db-1',
        'db',
        [
          { ip: '10.244.1.10', hostname: 'db-0' },
          { ip: '10.244.2.11', hostname: 'db-1' },
          { ip: '10.244.2.12', hostname: 'db-2', ready: false },
          { ip: '10.244.1.13' },
        ],
        [{ name: 'pg', port: 5432 }],
      ),
    );
    await waitFor(
      'db A',
      async () => dataOf(await dig(one.port, 'db.default.svc.cluster.local'), 'A').length === 3,
    );
    const a = await dig(one.port, 'db.default.svc.cluster.local', 'A');
    assert.deepEqual(dataOf(a, 'A'), ['10.244.1.10', '10.244.1.13', '10.244.2.11']);
    assert.deepEqual(dataOf(await dig(one.port, 'db-0.db.default.svc.cluster.local'), 'A'), ['10.244.1.10']);
    assert.equal((await dig(one.port, 'db-2.db.default.svc.cluster.local')).status, 'NXDOMAIN', 'not ready');
    assert.deepEqual(dataOf(await dig(one.port, '10-244-1-13.db.default.svc.cluster.local'), 'A'), [
      '10.244.1.13',
    ]);
    const srv = await dig(one.port, '_pg._tcp.db.default.svc.cluster.local', 'SRV');
    assert.deepEqual(dataOf(srv, 'SRV'), [
      '0 100 5432 10-244-1-13.db.default.svc.cluster.local.',
      '0 100 5432 db-0.db.default.svc.cluster.local.',
      '0 100 5432 db-1.db.default.svc.cluster.local.',
    ]);
    assert.deepEqual(dataOf(await dig(one.port, '-x', '10.244.2.11'), 'PTR'), [
      'db-1.db.default.svc.cluster.local.',
    ]);
  });

  it('2.5 ExternalName: CNAME and the target resolved upstream', async () => {
    await client.create<Service & Obj>(resources.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'ext', namespace: 'default' },
      spec: { type: 'ExternalName', externalName: 'www.example.com' },
    } as Service & Obj);
    const r = await waitFor('ext CNAME', async () => {
      const d = await dig(one.port, 'ext.default.svc.cluster.local', 'A');
      return dataOf(d, 'CNAME').length > 0 && d;
    });
    assert.deepEqual(dataOf(r, 'CNAME'), ['www.example.com.']);
    assert.deepEqual(dataOf(r, 'A'), ['192.0.2.53']);
  });

  it('truncates a UDP answer that does not fit, and dig gets it all over TCP', async () => {
    const many = Array.from({ length: 120 }, (_, i) => ({ ip: `10.244.9.${i + 1}` }));
    await client.create<Service & Obj>(resources.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'big', namespace: 'default' },
      spec: { clusterIP: 'None' },
    } as Service & Obj);
    await client.create(endpointSlices, headlessSlice('big-1', 'big', many));
    await waitFor(
      'big answered',
      async () => (await dig(one.port, '+tcp', 'big.default.svc.cluster.local')).answer.length === 120,
    );
    const udpOnly = await dig(one.port, '+ignore', '+noedns', 'big.default.svc.cluster.local');
    assert.ok(udpOnly.flags.includes('tc'), `TC set: ${udpOnly.flags}`);
    assert.equal(udpOnly.answer.length, 0);
    const edns = await dig(one.port, '+ignore', '+bufsize=1232', 'big.default.svc.cluster.local');
    assert.ok(edns.flags.includes('tc'), '120 records do not fit 1232 bytes either');
    const full = await dig(one.port, 'big.default.svc.cluster.local');
    assert.match(full.text, /Truncated, retrying in TCP mode/);
    assert.equal(dataOf(full, 'A').length, 120);
  });

  it('forwards names outside the cluster domain to the upstream', async () => {
    const r = await dig(one.port, 'outside.test', 'A');
    assert.equal(r.status, 'NOERROR');
    assert.deepEqual(dataOf(r, 'A'), ['198.51.100.7']);
    const tcp = await dig(one.port, '+tcp', 'outside.test', 'A');
    assert.deepEqual(dataOf(tcp, 'A'), ['198.51.100.7']);
    // The upstream's own verdict on a name it does not know goes back as it said it.
    const direct = await dig(upstreamPort, 'nothing.outside.test', 'A');
    const via = await dig(one.port, 'nothing.outside.test', 'A');
    assert.notEqual(direct.status, 'NO-ANSWER');
    assert.equal(via.status, direct.status);
  });

  it('answers a new Service, a deleted one and a new endpoint within a second', async () => {
    const within = async (what: string, check: () => Promise<boolean>) => {
      const t0 = Date.now();
      await waitFor(what, async () => (await check()) || undefined, 1_000, 20);
      return Date.now() - t0;
    };
    await client.create<Service & Obj>(resources.services, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'fresh', namespace: 'default' },
      spec: { clusterIP: '10.96.0.77', ports: [{ port: 80, protocol: 'TCP' }] },
    } as Service & Obj);
    await within('fresh answered', async () => {
      const r = await udpQuery(one.port, 'fresh.default.svc.cluster.local', 'A');
      return firstData(r) === '10.96.0.77';
    });
    await client.delete(resources.services, 'fresh', { namespace: 'default' });
    await within('fresh gone', async () => {
      const r = await udpQuery(one.port, 'fresh.default.svc.cluster.local', 'A');
      return r.rcode === 'NXDOMAIN';
    });
    const slice = await client.get<EndpointSlice & Obj>(endpointSlices, 'db-1', { namespace: 'default' });
    slice.endpoints.push({ addresses: ['10.244.3.3'], hostname: 'db-3', conditions: { ready: true } });
    await client.update(endpointSlices, slice);
    await within('db-3 answered', async () => {
      const r = await udpQuery(one.port, 'db-3.db.default.svc.cluster.local', 'A');
      return firstData(r) === '10.244.3.3';
    });
    assert.equal(dataOf(await dig(one.port, 'db.default.svc.cluster.local'), 'A').length, 4);
  });

  it('serves /health, /ready and kubit_dns_* metrics', async () => {
    assert.equal((await httpGet(`http://127.0.0.1:${one.health}/health`)).status, 200);
    assert.equal((await httpGet(`http://127.0.0.1:${one.health}/healthz`)).status, 200);
    const m = await httpGet(`http://127.0.0.1:${one.metrics}/metrics`);
    assert.match(m.body, /kubit_dns_requests_total\{proto="udp",type="A"\} \d+/);
    assert.match(m.body, /kubit_dns_responses_total\{rcode="NXDOMAIN",source="cluster"\} \d+/);
    assert.match(m.body, /kubit_dns_request_duration_seconds_bucket/);
    assert.match(m.body, /kubit_dns_truncated_responses_total\{proto="udp"\} [1-9]/);
  });

  it('kill -9 and restart: queries fail no longer than the restart, and the slice is taken over', async () => {
    let stop = false;
    let lastOk = Date.now();
    let longestGap = 0;
    let failures = 0;
    const loop = (async () => {
      while (!stop) {
        try {
          const r = await udpQuery(one.port, 'web.default.svc.cluster.local', 'A', 200);
          if (firstData(r) === '10.96.0.50') {
            longestGap = Math.max(longestGap, Date.now() - lastOk);
            lastOk = Date.now();
          } else failures++;
        } catch {
          failures++;
        }
        await sleep(20);
      }
    })();
    await sleep(300);
    const killedAt = Date.now();
    await one.proc.kill();
    one = await startDns('dns-node-1', one);
    const restartMs = Date.now() - killedAt;
    await sleep(300);
    stop = true;
    await loop;
    assert.ok(failures > 0, 'the loop saw the outage (else it measured nothing)');
    // The longest time without a right answer is the restart itself plus one query's timeout and pause.
    assert.ok(longestGap <= restartMs + 500, `no answers for ${longestGap} ms, restart took ${restartMs} ms`);
    const slices = await client.list<EndpointSlice & Obj>(endpointSlices, {
      namespace: 'kube-system',
      labelSelector: 'kubernetes.io/service-name=kube-dns',
    });
    assert.deepEqual(
      slices.items.map((s) => s.metadata?.name),
      ['kube-dns-dns-node-1'],
    );
    assert.equal(slices.items[0].endpoints[0].conditions?.ready, true);
  });

  it('a second instance adds its own slice; SIGTERM takes it away and leaves the other', async () => {
    await createNode('dns-node-2', NODE_2_IP);
    const two = await startDns('dns-node-2');
    const names = async () =>
      (
        await client.list<EndpointSlice & Obj>(endpointSlices, {
          namespace: 'kube-system',
          labelSelector: 'kubernetes.io/service-name=kube-dns',
        })
      ).items
        .map((s) => `${s.metadata?.name} ${s.ports?.[0]?.port}`)
        .sort();
    await waitFor('two slices', async () => (await names()).length === 2);
    assert.deepEqual(await names(), [`kube-dns-dns-node-1 ${one.port}`, `kube-dns-dns-node-2 ${two.port}`]);
    assert.deepEqual(dataOf(await dig(two.port, 'web.default.svc.cluster.local'), 'A'), ['10.96.0.50']);
    await two.proc.stop();
    assert.equal((await two.proc.exited).code, 0);
    assert.deepEqual(await names(), [`kube-dns-dns-node-1 ${one.port}`]);
  });

  it('SERVFAIL for outside names when the upstream does not answer', async () => {
    await upstream.stop();
    const r = await dig(one.port, 'outside.test', 'A');
    assert.equal(r.status, 'SERVFAIL');
    // The cluster zone is still answered.
    assert.deepEqual(dataOf(await dig(one.port, 'web.default.svc.cluster.local'), 'A'), ['10.96.0.50']);
  });
});
