// networking.k8s.io/v1 NetworkPolicies against kubit-apiserver: defaults
// (protocol TCP, policyTypes from the presence of egress), Kubernetes'
// validation as 422s with field paths and messages, discovery, and the real
// kubectl's apply / get / describe, and a 422 through kubectl.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl } from './helpers.js';

let cp: ControlPlane;
let api: Api;

before(async () => {
  cp = await startControlPlane();
  api = new Api(cp);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

const NP = '/apis/networking.k8s.io/v1/namespaces/default/networkpolicies';

function policy(name: string, spec: Record<string, unknown>) {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name }, spec };
}

/** Each cause of a 422 as "field: message". */
function causes(body: { details?: { causes?: { field: string; message: string }[] } }): string[] {
  return (body.details?.causes ?? []).map((c) => `${c.field}: ${c.message}`);
}

describe('networking.k8s.io/v1 NetworkPolicy', () => {
  it('is served and discoverable, with the netpol short name', async () => {
    const r = await api.get('/apis/networking.k8s.io/v1');
    assert.equal(r.status, 200, r.text);
    const res = r.body.resources.find((x: { name: string }) => x.name === 'networkpolicies');
    assert.ok(res, r.text);
    assert.equal(res.kind, 'NetworkPolicy');
    assert.equal(res.namespaced, true);
    assert.deepEqual(res.shortNames, ['netpol']);
  });

  it('defaults each port to TCP and policyTypes from the presence of egress rules', async () => {
    const ingressOnly = await api.post(
      NP,
      policy('defaults-in', { podSelector: {}, ingress: [{ ports: [{ port: 80 }] }] }),
    );
    assert.equal(ingressOnly.status, 201, ingressOnly.text);
    assert.deepEqual(ingressOnly.body.spec.policyTypes, ['Ingress']);
    assert.equal(ingressOnly.body.spec.ingress[0].ports[0].protocol, 'TCP');
    const both = await api.post(
      NP,
      policy('defaults-both', { podSelector: {}, egress: [{ ports: [{ port: 53, protocol: 'UDP' }] }] }),
    );
    assert.equal(both.status, 201, both.text);
    assert.deepEqual(both.body.spec.policyTypes, ['Ingress', 'Egress']);
    assert.equal(both.body.spec.egress[0].ports[0].protocol, 'UDP');
    const noSelector = await api.post(NP, policy('defaults-selector', {}));
    assert.equal(noSelector.status, 201, noSelector.text);
    assert.deepEqual(noSelector.body.spec.podSelector, {});
    assert.equal(noSelector.body.metadata.generation, 1);
  });

  const invalid: [string, Record<string, unknown>, string[]][] = [
    [
      'an invalid CIDR',
      { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/33' } }] }] },
      [
        'spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "10.0.0.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)',
      ],
    ],
    [
      'an except outside its cidr',
      {
        podSelector: {},
        egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/16', except: ['10.1.0.0/24', '10.0.0.0/16'] } }] }],
      },
      [
        'spec.egress[0].to[0].ipBlock.except[0]: Invalid value: "10.1.0.0/24": must be a strict subset of `cidr`',
        'spec.egress[0].to[0].ipBlock.except[1]: Invalid value: "10.0.0.0/16": must be a strict subset of `cidr`',
      ],
    ],
    [
      'a port out of range',
      { podSelector: {}, ingress: [{ ports: [{ port: 70000 }] }] },
      ['spec.ingress[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive'],
    ],
    [
      'endPort below port',
      { podSelector: {}, ingress: [{ ports: [{ port: 9000, endPort: 8000 }] }] },
      ['spec.ingress[0].ports[0].endPort: Invalid value: 8000: must be greater than or equal to `port`'],
    ],
    [
      'endPort with a named port',
      { podSelector: {}, ingress: [{ ports: [{ port: 'http', endPort: 8000 }] }] },
      [
        'spec.ingress[0].ports[0].endPort: Invalid value: 8000: may not be specified when `port` is non-numeric',
      ],
    ],
    [
      'an unknown protocol',
      { podSelector: {}, ingress: [{ ports: [{ port: 80, protocol: 'ICMP' }] }] },
      [
        'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"',
      ],
    ],
    [
      'a bad selector',
      { podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: [] }] } },
      [
        "spec.podSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
      ],
    ],
    [
      'an unknown policy type',
      { podSelector: {}, policyTypes: ['Ingress', 'Sideways'] },
      ['spec.policyTypes[1]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"'],
    ],
    [
      'an ipBlock beside another peer, and an empty peer',
      { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8' }, podSelector: {} }, {}] }] },
      [
        'spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer',
        'spec.ingress[0].from[1]: Required value: must specify a peer',
      ],
    ],
  ];
  for (const [what, spec, want] of invalid) {
    it(`refuses ${what} with 422 and the field paths`, async () => {
      const r = await api.post(NP, policy('bad', spec));
      assert.equal(r.status, 422, r.text);
      assert.equal(r.body.reason, 'Invalid');
      assert.deepEqual(causes(r.body), want, r.text);
      assert.match(r.body.message, /^NetworkPolicy.networking.k8s.io "bad" is invalid: /);
      const get = await api.get(`${NP}/bad`);
      assert.equal(get.status, 404, 'nothing half-written');
    });
  }

  it('refuses an invalid update and keeps the stored policy', async () => {
    const r = await api.patch(`${NP}/defaults-in`, { spec: { ingress: [{ ports: [{ port: 0 }] }] } });
    assert.equal(r.status, 422, r.text);
    const get = await api.get(`${NP}/defaults-in`);
    assert.equal(get.body.spec.ingress[0].ports[0].port, 80);
  });

  it('works with the real kubectl: apply, get (NAME, POD-SELECTOR, AGE), describe, and a 422', async () => {
    const manifest = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web-allow
  namespace: default
spec:
  podSelector:
    matchLabels:
      app: web
  ingress:
  - from:
    - namespaceSelector:
        matchLabels:
          team: a
      podSelector:
        matchLabels:
          role: client
    - ipBlock:
        cidr: 172.17.0.0/16
        except: [172.17.1.0/24]
    ports:
    - port: 80
    - port: 9000
      endPort: 9100
  egress:
  - ports:
    - port: 53
      protocol: UDP
`;
    const applied = await kubectl(cp, ['apply', '-f', '-'], { input: manifest });
    assert.match(applied.stdout, /networkpolicy.networking.k8s.io\/web-allow created/);
    // kubectl sends the ingress list again (an atomic list, which the server's defaults
    // made differ); after defaulting it is the same spec, so the generation stays.
    await kubectl(cp, ['apply', '-f', '-'], { input: manifest });
    const stored = await api.get(`${NP}/web-allow`);
    assert.equal(stored.body.metadata.generation, 1, stored.text);
    const get = await kubectl(cp, ['get', 'netpol', 'web-allow']);
    const [head, row] = get.stdout.trim().split('\n');
    assert.deepEqual(head.split(/\s+/), ['NAME', 'POD-SELECTOR', 'AGE']);
    assert.match(row, /^web-allow\s+app=web\s+\d+s$/);
    const empty = await kubectl(cp, ['get', 'networkpolicy', 'defaults-selector']);
    assert.match(empty.stdout, /defaults-selector\s+<none>\s+/);
    const described = await kubectl(cp, ['describe', 'networkpolicy', 'web-allow']);
    const text = described.stdout;
    assert.match(text, /Name:\s+web-allow/);
    assert.match(text, /PodSelector:\s+app=web/);
    assert.match(text, /NamespaceSelector: team=a/);
    assert.match(text, /PodSelector: role=client/);
    assert.match(text, /IPBlock:\s+CIDR: 172.17.0.0\/16\s+Except: 172.17.1.0\/24/);
    assert.match(text, /To Port: 80\/TCP/);
    assert.match(text, /To Port Range: 9000-9100\/TCP/);
    assert.match(text, /Policy Types: Ingress, Egress/);
    const bad = await kubectl(cp, ['apply', '-f', '-'], {
      input: manifest.replace('cidr: 172.17.0.0/16', 'cidr: 172.17.0.0/40'),
      allowFail: true,
    });
    assert.notEqual(bad.code, 0);
    assert.match(
      bad.stderr,
      /spec.ingress\[0\].from\[1\].ipBlock.cidr: Invalid value: "172.17.0.0\/40": must be a valid CIDR value/,
    );
  });
});
