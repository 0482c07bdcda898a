// kubit-test: serial
// NetworkPolicy with real traffic: a real control plane holds Namespaces, Pods
// (their IPs are the lab's network namespaces) and NetworkPolicies; the agent
// runs as its own process programming the lab's node namespace; and each case
// of Kubernetes' own network policy e2e tests (test/e2e/network/netpol) is
// checked with real TCP and UDP connections that must get through or be dropped.
//
//   node ns (10.77.0.1, br0; the agent's nft table) ─┬─ x/a .11   x/b .12   (ns x, team=x)
//                                                    ├─ y/c .13              (ns y, team=y)
//                                                    ├─ z/d .14   z/e .15    (ns z, team=z)
//                                                    ├─ kube-system/dns .20
//                                                    └─ x/remote .30 (spec.nodeName: another node)
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { NetworkPolicy, Pod } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import {
  type ControlPlane,
  startControlPlane,
  startProcess,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';
import { NETPOL_FAMILY, netpolTableName, networkPoliciesResource } from '../src/index.js';
import { createNetpolLab, type NetpolLab } from './netpol-lab.js';

const NODE = `netpol-node-${process.pid}`;
const OTHER_NODE = `netpol-other-${process.pid}`;
const TABLE = netpolTableName(NODE);
/** A Service's cluster IP, DNATed in the lab's node (only routed there by the pods' default route). */
const CLUSTER_IP = '10.96.77.1';

const PODS = [
  { name: 'a', namespace: 'x', index: 11 },
  { name: 'b', namespace: 'x', index: 12 },
  { name: 'c', namespace: 'y', index: 13 },
  { name: 'd', namespace: 'z', index: 14 },
  { name: 'e', namespace: 'z', index: 15 },
  { name: 'dns', namespace: 'kube-system', index: 20 },
  { name: 'remote', namespace: 'x', index: 30 },
];

type Case = [from: string, to: string, proto: 'tcp' | 'udp', port: number, allowed: boolean];

describe('NetworkPolicy enforcement with real traffic', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let lab: NetpolLab;
  let agent: TestProcess | undefined;

  const startAgent = () => {
    agent = startProcess({
      name: 'netpol-agent',
      command: process.execPath,
      args: [
        '--conditions=kubit-source',
        '--import',
        'tsx',
        join(import.meta.dirname, 'netpol-agent-process.ts'),
        cp.kubeconfigPath,
        NODE,
        lab.nodeNs,
      ],
      env: { KUBIT_LOG_FORMAT: 'json' },
      logFile: join(cp.logDir, 'netpol-agent.log'),
    });
  };
  const logTail = () => {
    try {
      return execFileSync('tail', ['-n', '20', join(cp.logDir, 'netpol-agent.log')], { encoding: 'utf8' });
    } catch {
      return '';
    }
  };
  const listTable = (handles = false) =>
    execFileSync(
      'ip',
      ['netns', 'exec', lab.nodeNs, 'nft', ...(handles ? ['-a'] : []), 'list', 'table', NETPOL_FAMILY, TABLE],
      {
        encoding: 'utf8',
      },
    );

  /** Waits until every case's connection gets through or is dropped as expected. */
  const expectReach = async (what: string, cases: Case[]) => {
    let last = '';
    try {
      await waitFor(
        what,
        async () => {
          const byFrom = new Map<string, Case[]>();
          for (const c of cases) byFrom.set(c[0], [...(byFrom.get(c[0]) ?? []), c]);
          const wrong: string[] = [];
          await Promise.all(
            [...byFrom].map(async ([from, list]) => {
              const probe = list.map(
                ([, to, proto, port]) => [to, proto, port] as [string, 'tcp' | 'udp', number],
              );
              const got = from === 'node' ? await lab.probeFromNode(probe) : await lab.probe(from, probe);
              list.forEach(([, to, proto, port, allowed], i) => {
                if ((got[i] === 'ok') !== allowed)
                  wrong.push(
                    `${from}→${to} ${proto}/${port}: ${got[i]} (want ${allowed ? 'ok' : 'dropped'})`,
                  );
              });
            }),
          );
          last = wrong.join('; ');
          return wrong.length === 0;
        },
        20_000,
        200,
      );
    } catch {
      assert.fail(`${what}: ${last}\n${logTail()}`);
    }
  };

  const createPolicy = (namespace: string, name: string, spec: NetworkPolicy['spec']) =>
    client.create<NetworkPolicy>(networkPoliciesResource, {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name, namespace },
      spec,
    });
  const deletePolicy = (namespace: string, name: string) =>
    client.delete(networkPoliciesResource, name, { namespace });

  before(async () => {
    cp = await startControlPlane();
    client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
    lab = createNetpolLab(PODS, cp.logDir);
    for (const [ns, team] of [
      ['x', 'x'],
      ['y', 'y'],
      ['z', 'z'],
    ]) {
      await client.create(resources.namespaces, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns, labels: { team } },
      });
    }
    for (const p of PODS) {
      const pod = await client.create<Pod>(resources.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: p.name, namespace: p.namespace, labels: { app: p.name } },
        spec: {
          nodeName: p.name === 'remote' ? OTHER_NODE : NODE,
          containers: [
            {
              name: 'server',
              image: 'busybox',
              ports: [
                { name: 'http', containerPort: 8080 },
                { name: 'dns', containerPort: 53, protocol: 'UDP' },
              ],
            },
          ],
        },
      });
      await client.updateStatus(resources.pods, {
        ...pod,
        status: {
          phase: 'Running',
          podIP: lab.pods.get(p.name)?.ip,
          podIPs: [{ ip: lab.pods.get(p.name)?.ip ?? '' }],
        },
      });
    }
    startAgent();
    await waitFor('the agent to write its table', () => {
      try {
        return listTable().includes('forward-ingress');
      } catch {
        return false;
      }
    });
  });

  after(async () => {
    if (agent?.running) await agent.stop();
    lab?.cleanup();
    await cp?.stop();
  });

  it('with no policy, everything reaches everything', async () => {
    await expectReach('no policy', [
      ['b', 'a', 'tcp', 80, true],
      ['c', 'a', 'tcp', 80, true],
      ['a', 'dns', 'udp', 53, true],
    ]);
  });

  it('default deny ingress isolates the namespace, not the node nor another node’s pods', async () => {
    await createPolicy('x', 'default-deny', { podSelector: {} });
    await expectReach('default deny ingress', [
      ['b', 'a', 'tcp', 80, false],
      ['c', 'a', 'tcp', 80, false],
      ['c', 'b', 'udp', 5353, false],
      ['a', 'c', 'tcp', 80, true],
      ['node', 'a', 'tcp', 80, true],
      // x/remote runs on another node: this node's table leaves it alone.
      ['c', 'remote', 'tcp', 80, true],
    ]);
  });

  it('allows from one label', async () => {
    await createPolicy('x', 'allow-b', {
      podSelector: { matchLabels: { app: 'a' } },
      ingress: [{ from: [{ podSelector: { matchLabels: { app: 'b' } } }] }],
    });
    await expectReach('allow from app=b', [
      ['b', 'a', 'tcp', 80, true],
      ['b', 'a', 'udp', 53, true],
      ['c', 'a', 'tcp', 80, false],
      ['a', 'b', 'tcp', 80, false],
    ]);
  });

  it('judges Service traffic by the real pod address (after DNAT)', async () => {
    // kubit-proxy's kind of rule, in the lab's node: a cluster IP DNATed to pod a at nat prerouting.
    const inNode = (args: string[], input?: string) =>
      execFileSync('ip', ['netns', 'exec', lab.nodeNs, ...args], { input });
    inNode(['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    inNode(
      ['nft', '-f', '-'],
      [
        'add table ip lab-proxy',
        'add chain ip lab-proxy prerouting { type nat hook prerouting priority -100; }',
        `add rule ip lab-proxy prerouting ip daddr ${CLUSTER_IP} tcp dport 80 dnat to ${lab.pods.get('a')?.ip}:80`,
        '',
      ].join('\n'),
    );
    await expectReach('through the cluster IP', [
      ['b', CLUSTER_IP, 'tcp', 80, true],
      ['c', CLUSTER_IP, 'tcp', 80, false],
    ]);
  });

  it('follows a pod’s labels: relabelled, its traffic is dropped; labelled back, allowed again', async () => {
    await client.patch(resources.pods, 'b', { metadata: { labels: { app: 'other' } } }, { namespace: 'x' });
    await expectReach('b relabelled', [['b', 'a', 'tcp', 80, false]]);
    await client.patch(resources.pods, 'b', { metadata: { labels: { app: 'b' } } }, { namespace: 'x' });
    await expectReach('b labelled back', [['b', 'a', 'tcp', 80, true]]);
  });

  it('keeps an open connection open while policies change, as long as it stays allowed', async () => {
    const held = lab.hold('b', 'a');
    try {
      await waitFor('the held connection to answer', () =>
        held
          .ping()
          .then(() => true)
          .catch(() => false),
      );
      await client.patch(
        networkPoliciesResource,
        'allow-b',
        {
          spec: {
            ingress: [
              {
                from: [
                  { podSelector: { matchLabels: { app: 'b' } } },
                  { namespaceSelector: { matchLabels: { team: 'y' } } },
                ],
              },
            ],
          },
        },
        { namespace: 'x' },
      );
      await expectReach('allow-b also from ns y', [
        ['c', 'a', 'tcp', 80, true],
        ['d', 'a', 'tcp', 80, false],
      ]);
      await createPolicy('z', 'unrelated', { podSelector: {}, ingress: [{}] });
      await expectReach('an unrelated policy', [['a', 'd', 'tcp', 80, true]]);
      assert.match(await held.ping(), /^a:/);
      await deletePolicy('z', 'unrelated');
    } finally {
      held.close();
    }
    await deletePolicy('x', 'allow-b');
    await expectReach('allow-b gone', [['b', 'a', 'tcp', 80, false]]);
  });

  it('allows from one namespace, and follows the namespace’s labels', async () => {
    await createPolicy('x', 'allow-y', {
      podSelector: { matchLabels: { app: 'a' } },
      ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'y' } } }] }],
    });
    await expectReach('allow from ns team=y', [
      ['c', 'a', 'tcp', 80, true],
      ['d', 'a', 'tcp', 80, false],
      ['b', 'a', 'tcp', 80, false],
    ]);
    // The namespace's labels change: its pods' traffic follows.
    await client.patch(resources.namespaces, 'z', { metadata: { labels: { team: 'y' } } });
    await expectReach('ns z relabelled team=y', [['d', 'a', 'tcp', 80, true]]);
    await client.patch(resources.namespaces, 'z', { metadata: { labels: { team: 'z' } } });
    await expectReach('ns z labelled back', [['d', 'a', 'tcp', 80, false]]);
    await deletePolicy('x', 'allow-y');
  });

  it('ANDs a namespaceSelector and a podSelector in one peer', async () => {
    await createPolicy('x', 'allow-z-d', {
      podSelector: { matchLabels: { app: 'a' } },
      ingress: [
        {
          from: [
            { namespaceSelector: { matchLabels: { team: 'z' } }, podSelector: { matchLabels: { app: 'd' } } },
          ],
        },
      ],
    });
    await expectReach('from team=z AND app=d', [
      ['d', 'a', 'tcp', 80, true],
      ['e', 'a', 'tcp', 80, false],
      ['c', 'a', 'tcp', 80, false],
      ['b', 'a', 'tcp', 80, false],
    ]);
    await deletePolicy('x', 'allow-z-d');
  });

  it('allows from an ipBlock except its excepts', async () => {
    await createPolicy('x', 'allow-block', {
      podSelector: { matchLabels: { app: 'a' } },
      ingress: [{ from: [{ ipBlock: { cidr: '10.77.0.0/24', except: ['10.77.0.13/32'] } }] }],
    });
    await expectReach('ipBlock 10.77.0.0/24 except c', [
      ['d', 'a', 'tcp', 80, true],
      ['b', 'a', 'tcp', 80, true],
      ['c', 'a', 'tcp', 80, false],
    ]);
    await deletePolicy('x', 'allow-block');
  });

  it('allows a named port, resolved from the pod’s container ports', async () => {
    await createPolicy('x', 'allow-http', {
      podSelector: { matchLabels: { app: 'a' } },
      ingress: [{ ports: [{ port: 'http' }, { port: 'dns', protocol: 'UDP' }] }],
    });
    await expectReach('named ports http (8080) and dns (udp 53)', [
      ['b', 'a', 'tcp', 8080, true],
      ['c', 'a', 'udp', 53, true],
      ['b', 'a', 'tcp', 80, false],
      ['b', 'a', 'udp', 5353, false],
    ]);
    await deletePolicy('x', 'allow-http');
  });

  it('allows a port range (endPort)', async () => {
    await createPolicy('x', 'allow-range', {
      podSelector: { matchLabels: { app: 'a' } },
      ingress: [{ ports: [{ port: 9000, endPort: 9002 }] }],
    });
    await expectReach('ports 9000-9002', [
      ['b', 'a', 'tcp', 9000, true],
      ['b', 'a', 'tcp', 9002, true],
      ['b', 'a', 'tcp', 9003, false],
      ['b', 'a', 'tcp', 80, false],
    ]);
    await deletePolicy('x', 'allow-range');
  });

  it('denies egress but DNS (UDP 53); replies of allowed connections pass', async () => {
    await createPolicy('y', 'egress-dns-only', {
      podSelector: {},
      policyTypes: ['Egress'],
      egress: [{ ports: [{ port: 53, protocol: 'UDP' }] }],
    });
    await expectReach('egress: only DNS', [
      ['c', 'dns', 'udp', 53, true],
      ['c', 'dns', 'tcp', 80, false],
      ['c', 'd', 'tcp', 80, false],
      ['c', 'd', 'udp', 5353, false],
      // Ingress to c is not isolated, and its replies are established traffic.
      ['d', 'c', 'tcp', 80, true],
      ['node', 'c', 'tcp', 80, true],
    ]);
  });

  it('keeps filtering after kill -9 of the agent, and its restart rewrites nothing that was right', async () => {
    const before = listTable(true);
    assert.ok(agent);
    agent.child.kill('SIGKILL');
    await agent.exited;
    await expectReach('agent dead', [
      ['b', 'a', 'tcp', 80, false],
      ['c', 'dns', 'udp', 53, true],
      ['c', 'd', 'tcp', 80, false],
      ['d', 'c', 'tcp', 80, true],
    ]);
    // A change while it is down is picked up by the restarted agent.
    await deletePolicy('y', 'egress-dns-only');
    startAgent();
    await expectReach('after restart', [
      ['c', 'd', 'tcp', 80, true],
      ['b', 'a', 'tcp', 80, false],
    ]);
    const afterRestart = listTable(true);
    // Handles are the kernel's identity of each rule: a rule rewritten would have a new one.
    const rulesOf = (listing: string, chain: string) => {
      const m = new RegExp(`chain ${chain.replace(/[/.]/g, '\\$&')} \\{[^}]*\\}`).exec(listing);
      return m?.[0];
    };
    for (const chain of ['forward-ingress', 'forward-egress', 'input-egress']) {
      assert.equal(rulesOf(afterRestart, chain), rulesOf(before, chain), `${chain} was rewritten`);
    }
    const nsX = /chain (ns-in-\S+-x) \{/.exec(before)?.[1];
    assert.ok(nsX, before);
    assert.equal(rulesOf(afterRestart, nsX), rulesOf(before, nsX), 'namespace x’s chain was rewritten');
    assert.doesNotMatch(afterRestart, /ns-out-/, 'the deleted egress policy’s chains are gone');
  });
});
