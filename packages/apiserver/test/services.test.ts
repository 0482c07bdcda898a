// Services end to end on one control plane (a real etcd, kubit-apiserver, a second
// apiserver for the races between apiservers, the real kubectl and etcdctl): cluster
// IPs and node ports are handed out once, kept across a restart and freed by deletes
// and type changes; requested values that cannot be had get Kubernetes' 422; the
// repair loop drops what no Service holds; the `kubernetes` Service and its endpoints
// always exist.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { apiserverArgs } from '@kubit/daemon/daemon-args';
import {
  type ControlPlane,
  daemonCommand,
  etcdctl,
  freePort,
  httpsGet,
  pkiApiserverFlags,
  startControlPlane,
  startProcess,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';
import { Api, kubectl, type Reply } from './helpers.js';

const NS = '/api/v1/namespaces/default';
const SVC = `${NS}/services`;

let cp: ControlPlane;
let api: Api;
/** Apiservers this file starts beside the harness's (stopped by PID in after()). */
const extra: TestProcess[] = [];

before(async () => {
  cp = await startControlPlane();
  api = new Api(cp);
});
after(async () => {
  api?.close();
  for (const p of extra) await p.stop();
  await cp?.stop();
});

/** Another apiserver on the same store and PKI, on `port` (a fresh one by default). */
async function startApiserver(
  name: string,
  port?: number,
): Promise<{ proc: TestProcess; api: Api; port: number }> {
  const p = port ?? (await freePort());
  const cmd = daemonCommand('apiserver', 'main.ts');
  const proc = startProcess({
    name,
    command: cmd.command,
    args: [
      ...cmd.args,
      ...apiserverArgs({
        bindAddress: '127.0.0.1',
        securePort: p,
        ...pkiApiserverFlags(cp.pki, cp.storeEndpoints),
        tokenAuthFile: join(cp.dir, 'tokens.csv'),
      }),
    ],
    env: { KUBIT_LOG_FORMAT: 'json' },
    logFile: join(cp.logDir, `${name}.log`),
  });
  extra.push(proc);
  const url = `https://127.0.0.1:${p}`;
  await waitFor(
    `${name} to be ready`,
    async () => {
      if (!proc.running) throw new Error(`${name} exited`);
      return (await httpsGet(`${url}/readyz`, cp.pki.caFile, cp.pki.admin)).status === 200;
    },
    120_000,
    200,
  );
  return { proc, api: new Api({ ...cp, url }), port: p };
}

async function storeKeys(prefix: string): Promise<string[]> {
  const r = await etcdctl(cp.storeEndpoints, [
    `--cacert=${cp.pki.caFile}`,
    `--cert=${cp.pki.apiserverEtcdClient.cert}`,
    `--key=${cp.pki.apiserverEtcdClient.key}`,
    'get',
    prefix,
    '--prefix',
    '--keys-only',
  ]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.split('\n').filter((l) => l.trim() !== '');
}

async function storePut(key: string, value: string): Promise<void> {
  const r = await etcdctl(cp.storeEndpoints, [
    `--cacert=${cp.pki.caFile}`,
    `--cert=${cp.pki.apiserverEtcdClient.cert}`,
    `--key=${cp.pki.apiserverEtcdClient.key}`,
    'put',
    key,
    value,
  ]);
  assert.equal(r.code, 0, r.stderr);
}

async function storeDelete(key: string): Promise<void> {
  const r = await etcdctl(cp.storeEndpoints, [
    `--cacert=${cp.pki.caFile}`,
    `--cert=${cp.pki.apiserverEtcdClient.cert}`,
    `--key=${cp.pki.apiserverEtcdClient.key}`,
    'del',
    key,
  ]);
  assert.equal(r.code, 0, r.stderr);
}

function service(name: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name },
    spec: { selector: { app: name }, ports: [{ port: 80 }], ...spec },
  };
}

const nodePortService = (name: string, spec: Record<string, unknown> = {}) =>
  service(name, { type: 'NodePort', ...spec });

/** A 422 whose one cause is `field` with `message`, and whose message says so after the Service's name. */
function assertInvalid(r: Reply, name: string, field: string, message: string): void {
  assert.equal(r.status, 422, r.text);
  assert.equal(r.body.reason, 'Invalid');
  const causes = r.body.details.causes as { field: string; message: string }[];
  assert.ok(
    causes.some((c) => c.field === field && c.message === message),
    `expected ${field}: ${message} among ${JSON.stringify(causes)}`,
  );
  assert.ok(
    String(r.body.message).startsWith(`Service "${name}" is invalid: `),
    `message: ${r.body.message}`,
  );
  assert.ok(String(r.body.message).includes(`${field}: ${message}`), r.body.message);
}

function inServiceRange(ip: string): boolean {
  const [a, b] = ip.split('.').map(Number);
  return a === 10 && b >= 96 && b <= 111;
}

const nodePortsOf = (svc: { spec: { ports: { nodePort?: number }[] } }): number[] =>
  svc.spec.ports.map((p) => p.nodePort ?? 0);

describe('the kubernetes Service', () => {
  it('exists with the first address of the range, and its endpoints list the apiserver', async () => {
    const port = Number(new URL(cp.url).port);
    const svc = (await api.get(`${SVC}/kubernetes`)).body;
    assert.equal(svc.spec.clusterIP, '10.96.0.1');
    assert.deepEqual(svc.spec.clusterIPs, ['10.96.0.1']);
    assert.deepEqual(svc.spec.ports, [{ name: 'https', port: 443, protocol: 'TCP', targetPort: port }]);
    assert.equal(svc.spec.selector, undefined);
    assert.deepEqual(svc.metadata.labels, { component: 'apiserver', provider: 'kubernetes' });
    const ep = (await api.get(`${NS}/endpoints/kubernetes`)).body;
    assert.deepEqual(ep.subsets, [
      { addresses: [{ ip: '127.0.0.1' }], ports: [{ name: 'https', port, protocol: 'TCP' }] },
    ]);
    assert.equal(ep.metadata.labels['endpointslice.kubernetes.io/skip-mirror'], 'true');
    const slice = (await api.get('/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes'))
      .body;
    assert.equal(slice.addressType, 'IPv4');
    assert.deepEqual(slice.endpoints, [{ addresses: ['127.0.0.1'], conditions: { ready: true } }]);
    assert.deepEqual(slice.ports, [{ name: 'https', port, protocol: 'TCP' }]);
    assert.equal(slice.metadata.labels['kubernetes.io/service-name'], 'kubernetes');
  });

  it('comes back, with its endpoints, after a user deletes them', { timeout: 60_000 }, async () => {
    for (const path of [
      `${SVC}/kubernetes`,
      `${NS}/endpoints/kubernetes`,
      '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes',
    ]) {
      assert.equal((await api.del(path)).status, 200, path);
    }
    let back: Record<string, { status: number; body: { spec?: { clusterIP?: string } } }> = {};
    await waitFor(
      'the kubernetes Service, Endpoints and EndpointSlice to be back',
      async () => {
        back = {
          svc: await api.get(`${SVC}/kubernetes`),
          ep: await api.get(`${NS}/endpoints/kubernetes`),
          slice: await api.get('/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes'),
        };
        return Object.values(back).every((r) => r.status === 200);
      },
      30_000,
      200,
    );
    assert.equal(back.svc.body.spec?.clusterIP, '10.96.0.1');
  });
});

describe('allocation', () => {
  it('50 concurrent creates through two apiservers get 50 addresses and node ports, none shared', {
    timeout: 180_000,
  }, async () => {
    const second = await startApiserver('kubit-apiserver-b');
    try {
      // Both apiservers are in the kubernetes Service's endpoints.
      await waitFor(
        'both apiservers in the kubernetes endpoints',
        async () => (await api.get(`${NS}/endpoints/kubernetes`)).body.subsets?.length === 2,
        30_000,
        200,
      );
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          (i % 2 ? api : second.api).post(SVC, nodePortService(`race-${i}`)),
        ),
      );
      for (const r of replies) assert.equal(r.status, 201, r.text);
      const ips = replies.map((r) => r.body.spec.clusterIP as string);
      assert.equal(new Set(ips).size, 50, `distinct addresses: ${ips.join(' ')}`);
      assert.ok(ips.every(inServiceRange), ips.join(' '));
      assert.ok(!ips.includes('10.96.0.1'));
      const ports = replies.flatMap((r) => nodePortsOf(r.body));
      assert.equal(new Set(ports).size, 50, `distinct node ports: ${ports.join(' ')}`);
      assert.ok(
        ports.every((p) => p >= 30000 && p <= 32767),
        ports.join(' '),
      );
      // Each is a key in the store, owned by its Service.
      const ipKeys = await storeKeys('/registry/serviceips/');
      for (const ip of ips) assert.ok(ipKeys.includes(`/registry/serviceips/${ip}`), ip);
      const portKeys = await storeKeys('/registry/servicenodeports/');
      for (const p of ports) assert.ok(portKeys.includes(`/registry/servicenodeports/${p}`), String(p));

      // One requested address asked for six times at once: one Service gets it.
      const same = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? api : second.api).post(SVC, service(`same-ip-${i}`, { clusterIP: '10.96.0.77' })),
        ),
      );
      assert.equal(same.filter((r) => r.status === 201).length, 1, same.map((r) => r.status).join(' '));
      for (const [i, r] of same.entries()) {
        if (r.status === 201) continue;
        assertInvalid(
          r,
          `same-ip-${i}`,
          'spec.clusterIPs',
          'Invalid value: ["10.96.0.77"]: failed to allocate IP 10.96.0.77: provided IP is already allocated',
        );
      }
      // The same for a requested node port.
      const samePort = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? api : second.api).post(
            SVC,
            nodePortService(`same-port-${i}`, { ports: [{ port: 80, nodePort: 31777 }] }),
          ),
        ),
      );
      assert.equal(
        samePort.filter((r) => r.status === 201).length,
        1,
        samePort.map((r) => r.status).join(' '),
      );
    } finally {
      second.api.close();
      await second.proc.stop();
    }
    // The stopped apiserver took itself out of the endpoints.
    await waitFor(
      'one apiserver in the kubernetes endpoints',
      async () => (await api.get(`${NS}/endpoints/kubernetes`)).body.subsets?.length === 1,
      30_000,
      200,
    );
  });

  it('a requested address or port that cannot be had is a 422 naming the field', async () => {
    const taken = (await api.get(`${SVC}/race-0`)).body;
    const takenPort = taken.spec.ports[0].nodePort as number;
    const lb = await api.post(
      SVC,
      service('hc-owner', { type: 'LoadBalancer', externalTrafficPolicy: 'Local' }),
    );
    assert.equal(lb.status, 201, lb.text);
    const hc = lb.body.spec.healthCheckNodePort as number;
    assert.ok(hc >= 30000 && hc <= 32767, `health check node port ${hc}`);
    assert.ok(!nodePortsOf(lb.body).includes(hc));
    const cases: [string, Record<string, unknown>, string, string][] = [
      [
        'taken-ip',
        service('taken-ip', { clusterIP: '10.96.0.1' }),
        'spec.clusterIPs',
        'Invalid value: ["10.96.0.1"]: failed to allocate IP 10.96.0.1: provided IP is already allocated',
      ],
      [
        'outside-ip',
        service('outside-ip', { clusterIP: '10.0.0.5' }),
        'spec.clusterIPs',
        'Invalid value: ["10.0.0.5"]: failed to allocate IP 10.0.0.5: the provided IP (10.0.0.5) is not in the valid range. The range of valid IPs is 10.96.0.0/12',
      ],
      [
        'broadcast-ip',
        service('broadcast-ip', { clusterIP: '10.111.255.255' }),
        'spec.clusterIPs',
        'Invalid value: ["10.111.255.255"]: failed to allocate IP 10.111.255.255: the provided IP (10.111.255.255) is not in the valid range. The range of valid IPs is 10.96.0.0/12',
      ],
      [
        'outside-port',
        nodePortService('outside-port', { ports: [{ port: 80, nodePort: 8080 }] }),
        'spec.ports[0].nodePort',
        'Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767',
      ],
      [
        'taken-port',
        nodePortService('taken-port', { ports: [{ port: 80, nodePort: takenPort }] }),
        'spec.ports[0].nodePort',
        `Invalid value: ${takenPort}: provided port is already allocated`,
      ],
      [
        'taken-hc',
        service('taken-hc', {
          type: 'LoadBalancer',
          externalTrafficPolicy: 'Local',
          healthCheckNodePort: hc,
        }),
        'spec.healthCheckNodePort',
        `Invalid value: ${hc}: failed to allocate requested HealthCheck NodePort ${hc}: provided port is already allocated`,
      ],
      [
        'ipv6',
        service('ipv6', { clusterIP: 'fd00::10' }),
        'spec.clusterIPs[0]',
        'Invalid value: ["fd00::10"]: IPv6 is not configured on this cluster',
      ],
      [
        'ipv6-family',
        service('ipv6-family', { ipFamilies: ['IPv6'] }),
        'spec.ipFamilies[0]',
        'Invalid value: "IPv6": not configured on this cluster',
      ],
      [
        'two-families',
        service('two-families', { ipFamilies: ['IPv4', 'IPv6'], ipFamilyPolicy: 'SingleStack' }),
        'spec.ipFamilyPolicy',
        "Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
      ],
      [
        'dual-stack',
        service('dual-stack', { ipFamilyPolicy: 'RequireDualStack' }),
        'spec.ipFamilyPolicy',
        'Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services',
      ],
      [
        'dup-names',
        service('dup-names', {
          ports: [
            { name: 'http', port: 80 },
            { name: 'http', port: 81 },
          ],
        }),
        'spec.ports[1].name',
        'Duplicate value: "http"',
      ],
      [
        'port-zero',
        service('port-zero', { ports: [{ port: 0 }] }),
        'spec.ports[0].port',
        'Invalid value: 0: must be between 1 and 65535, inclusive',
      ],
      ['no-name', service('no-name', { type: 'ExternalName' }), 'spec.externalName', 'Required value'],
    ];
    const before = [
      ...(await storeKeys('/registry/serviceips/')),
      ...(await storeKeys('/registry/servicenodeports/')),
    ];
    for (const [name, body, field, message] of cases) {
      assertInvalid(await api.post(SVC, body), name, field, message);
    }
    // A dry run answers as the write would: the taken address is a 422 there too.
    assertInvalid(
      await api.post(`${SVC}?dryRun=All`, service('dry-taken', { clusterIP: '10.96.0.1' })),
      'dry-taken',
      'spec.clusterIPs',
      'Invalid value: ["10.96.0.1"]: failed to allocate IP 10.96.0.1: provided IP is already allocated',
    );
    const dry = await api.post(`${SVC}?dryRun=All`, nodePortService('dry-ok'));
    assert.equal(dry.status, 201, dry.text);
    assert.ok(inServiceRange(dry.body.spec.clusterIP));
    const afterKeys = [
      ...(await storeKeys('/registry/serviceips/')),
      ...(await storeKeys('/registry/servicenodeports/')),
    ];
    assert.deepEqual(afterKeys, before, 'nothing refused or dry-run claimed a key');
    // PreferDualStack on this single-stack cluster: one IPv4 address, the policy kept.
    const prefer = await api.post(SVC, service('prefer', { ipFamilyPolicy: 'PreferDualStack' }));
    assert.equal(prefer.status, 201, prefer.text);
    assert.deepEqual(prefer.body.spec.ipFamilies, ['IPv4']);
    assert.equal(prefer.body.spec.ipFamilyPolicy, 'PreferDualStack');
    assert.equal(prefer.body.spec.clusterIPs.length, 1);
  });

  it('NodePort to ClusterIP frees the node port, ClusterIP to ExternalName the address, delete both', async () => {
    let r = await api.post(SVC, nodePortService('np-a', { ports: [{ port: 80, nodePort: 30600 }] }));
    assert.equal(r.status, 201, r.text);
    assertInvalid(
      await api.post(SVC, nodePortService('np-b', { ports: [{ port: 80, nodePort: 30600 }] })),
      'np-b',
      'spec.ports[0].nodePort',
      'Invalid value: 30600: provided port is already allocated',
    );
    r = await api.patch(`${SVC}/np-a`, { spec: { type: 'ClusterIP' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.spec.ports[0].nodePort, undefined);
    assert.equal(r.body.spec.externalTrafficPolicy, undefined);
    assert.ok(!(await storeKeys('/registry/servicenodeports/')).includes('/registry/servicenodeports/30600'));
    r = await api.post(SVC, nodePortService('np-b', { ports: [{ port: 80, nodePort: 30600 }] }));
    assert.equal(r.status, 201, r.text);

    r = await api.post(SVC, service('to-ext', { clusterIP: '10.96.0.88' }));
    assert.equal(r.status, 201, r.text);
    r = await api.patch(`${SVC}/to-ext`, { spec: { type: 'ExternalName', externalName: 'db.example.com' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.spec.clusterIP, undefined);
    assert.ok(!(await storeKeys('/registry/serviceips/')).includes('/registry/serviceips/10.96.0.88'));
    r = await api.post(SVC, service('takes-88', { clusterIP: '10.96.0.88' }));
    assert.equal(r.status, 201, r.text);

    // A cluster IP may not change once set.
    r = await api.patch(`${SVC}/takes-88`, { spec: { clusterIP: '10.96.0.89', clusterIPs: ['10.96.0.89'] } });
    assertInvalid(
      r,
      'takes-88',
      'spec.clusterIPs[0]',
      'Invalid value: ["10.96.0.89"]: may not change once set',
    );

    // Delete frees the address and the node port.
    assert.equal((await api.del(`${SVC}/takes-88`)).status, 200);
    assert.equal((await api.del(`${SVC}/np-b`)).status, 200);
    assert.ok(!(await storeKeys('/registry/serviceips/')).includes('/registry/serviceips/10.96.0.88'));
    r = await api.post(
      SVC,
      nodePortService('takes-88-again', { clusterIP: '10.96.0.88', ports: [{ port: 80, nodePort: 30600 }] }),
    );
    assert.equal(r.status, 201, r.text);
  });
});

describe('kubectl', () => {
  it('expose, create service (protobuf), get svc,ep,endpointslices and describe', {
    timeout: 120_000,
  }, async () => {
    await kubectl(cp, ['create', 'deployment', 'web', '--image=nginx:1.25', '--port=80']);
    let r = await kubectl(cp, ['expose', 'deployment', 'web', '--port=80']);
    assert.match(r.stdout, /service\/web exposed/);
    const web = (await api.get(`${SVC}/web`)).body;
    assert.deepEqual(web.spec.selector, { app: 'web' });
    assert.deepEqual(web.spec.ports, [{ port: 80, protocol: 'TCP', targetPort: 80 }]);
    assert.ok(inServiceRange(web.spec.clusterIP));

    r = await kubectl(cp, ['create', 'service', 'nodeport', 'x', '--tcp=80:8080', '-v=8']);
    assert.match(r.stderr, /Content-Type: application\/vnd\.kubernetes\.protobuf/, 'kubectl sent protobuf');
    assert.match(r.stdout, /service\/x created/);
    const x = (await api.get(`${SVC}/x`)).body;
    assert.equal(x.spec.type, 'NodePort');
    assert.equal(x.spec.ports[0].name, '80-8080');
    assert.equal(x.spec.ports[0].targetPort, 8080);
    assert.ok(x.spec.ports[0].nodePort >= 30000);
    assert.deepEqual(x.spec.selector, { app: 'x' });
    for (const args of [
      ['clusterip', 'c1', '--tcp=5678:8080'],
      ['clusterip', 'headless', '--clusterip=None'],
      ['loadbalancer', 'lb1', '--tcp=5678:8080'],
      ['externalname', 'ext', '--external-name=db.example.com'],
    ]) {
      r = await kubectl(cp, ['create', 'service', ...args]);
      assert.match(r.stdout, new RegExp(`service/${args[1]} created`));
    }
    assert.equal((await api.get(`${SVC}/headless`)).body.spec.clusterIP, 'None');
    assert.equal((await api.get(`${SVC}/ext`)).body.spec.externalName, 'db.example.com');

    const port = new URL(cp.url).port;
    r = await kubectl(cp, ['get', 'svc,ep,endpointslices']);
    const out = r.stdout;
    assert.match(out, /^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE$/m);
    assert.match(out, /^service\/kubernetes\s+ClusterIP\s+10\.96\.0\.1\s+<none>\s+443\/TCP\s+\S+$/m);
    assert.match(out, /^service\/x\s+NodePort\s+10\.\d+\.\d+\.\d+\s+<none>\s+80:3\d{4}\/TCP\s+\S+$/m);
    assert.match(
      out,
      /^service\/lb1\s+LoadBalancer\s+10\.\d+\.\d+\.\d+\s+<pending>\s+5678:3\d{4}\/TCP\s+\S+$/m,
    );
    assert.match(out, /^service\/ext\s+ExternalName\s+<none>\s+db\.example\.com\s+<none>\s+\S+$/m);
    assert.match(out, /^service\/headless\s+ClusterIP\s+None\s+<none>\s+<none>\s+\S+$/m);
    assert.match(out, /^NAME\s+ENDPOINTS\s+AGE$/m);
    assert.match(out, new RegExp(`^endpoints/kubernetes\\s+127\\.0\\.0\\.1:${port}\\s+\\S+$`, 'm'));
    assert.match(out, /^NAME\s+ADDRESSTYPE\s+PORTS\s+ENDPOINTS\s+AGE$/m);
    assert.match(
      out,
      new RegExp(
        `^endpointslice\\.discovery\\.k8s\\.io/kubernetes\\s+IPv4\\s+${port}\\s+127\\.0\\.0\\.1\\s+\\S+$`,
        'm',
      ),
    );

    r = await kubectl(cp, ['describe', 'svc', 'web']);
    const d = r.stdout;
    assert.match(d, /^Name:\s+web$/m);
    assert.match(d, /^Namespace:\s+default$/m);
    assert.match(d, /^Selector:\s+app=web$/m);
    assert.match(d, /^Type:\s+ClusterIP$/m);
    assert.match(d, /^IP Family Policy:\s+SingleStack$/m);
    assert.match(d, /^IP Families:\s+IPv4$/m);
    assert.match(d, new RegExp(`^IP:\\s+${web.spec.clusterIP.replaceAll('.', '\\.')}$`, 'm'));
    assert.match(d, /^Port:\s+<unset>\s+80\/TCP$/m);
    assert.match(d, /^TargetPort:\s+80\/TCP$/m);
    assert.match(d, /^Session Affinity:\s+None$/m);
    r = await kubectl(cp, ['describe', 'svc', 'kubernetes']);
    assert.match(r.stdout, new RegExp(`^Endpoints:\\s+127\\.0\\.0\\.1:${port}$`, 'm'));
    assert.match(r.stdout, new RegExp(`^TargetPort:\\s+${port}/TCP$`, 'm'));
  });
});

describe('a restart', () => {
  it('keeps every allocation, hands out fresh ones, and the repair loop fixes the store', {
    timeout: 180_000,
  }, async () => {
    const list = (await api.get(SVC)).body.items as {
      metadata: { name: string };
      spec: { clusterIP?: string };
    }[];
    const ipsBefore = new Map(list.map((s) => [s.metadata.name, s.spec.clusterIP]));
    // A key no Service holds (left by a crash, say), and a Service's key gone missing.
    await storePut('/registry/serviceips/10.100.5.5', '{"namespace":"default","name":"gone","uid":"x"}');
    // A node port no Service holds (50 were picked at random above).
    const held = new Set(
      (
        (await api.get(SVC)).body.items as {
          spec: { ports?: { nodePort?: number }[]; healthCheckNodePort?: number };
        }[]
      ).flatMap((s) => [...(s.spec.ports ?? []).map((p) => p.nodePort), s.spec.healthCheckNodePort]),
    );
    let leakedPort = 32767;
    while (held.has(leakedPort)) leakedPort--;
    await storePut(
      `/registry/servicenodeports/${leakedPort}`,
      '{"namespace":"default","name":"gone","uid":"x"}',
    );
    const web = ipsBefore.get('web')!;
    await storeDelete(`/registry/serviceips/${web}`);

    const port = Number(new URL(cp.url).port);
    await cp.apiserver.stop();
    const restarted = await startApiserver('kubit-apiserver-restarted', port);
    restarted.api.close();

    const ipKeys = await storeKeys('/registry/serviceips/');
    assert.ok(!ipKeys.includes('/registry/serviceips/10.100.5.5'), 'the leaked address is released');
    assert.ok(
      !(await storeKeys('/registry/servicenodeports/')).includes(`/registry/servicenodeports/${leakedPort}`),
    );
    assert.ok(ipKeys.includes(`/registry/serviceips/${web}`), "web's address has its key back");

    const after = (await api.get(SVC)).body.items as typeof list;
    for (const s of after) assert.equal(s.spec.clusterIP, ipsBefore.get(s.metadata.name), s.metadata.name);
    const fresh = await api.post(SVC, nodePortService('after-restart'));
    assert.equal(fresh.status, 201, fresh.text);
    assert.ok(![...ipsBefore.values()].includes(fresh.body.spec.clusterIP));
    assert.ok(inServiceRange(fresh.body.spec.clusterIP));
    // web's address is held again: asking for it is refused.
    assertInvalid(
      await api.post(SVC, service('wants-web-ip', { clusterIP: web })),
      'wants-web-ip',
      'spec.clusterIPs',
      `Invalid value: ["${web}"]: failed to allocate IP ${web}: provided IP is already allocated`,
    );
  });
});
