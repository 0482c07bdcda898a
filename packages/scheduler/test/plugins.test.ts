import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SchedulingAlgorithm } from '../src/algorithm.js';
import { SchedulerCache } from '../src/cache.js';
import { buildFramework } from '../src/framework/profile.js';
import {
  CycleState,
  type FilterPlugin,
  type Handle,
  type PreFilterPlugin,
  type Status,
} from '../src/framework/types.js';
import { InterPodAffinity } from '../src/plugins/inter-pod-affinity.js';
import { NodeAffinity } from '../src/plugins/node-affinity.js';
import { NodeName } from '../src/plugins/node-name.js';
import { NodePorts } from '../src/plugins/node-ports.js';
import { BalancedAllocation, NodeResourcesFit } from '../src/plugins/node-resources.js';
import { NodeUnschedulable } from '../src/plugins/node-unschedulable.js';
import { PodTopologySpread } from '../src/plugins/pod-topology-spread.js';
import { TaintToleration } from '../src/plugins/taint-toleration.js';
import { newPodInfo } from '../src/pod-info.js';
import { podRequests } from '../src/resources.js';
import type { Node, Pod } from '../src/types.js';
import { antiAffinityByHostname, node, onNode, pod } from './fixtures.js';

/** Runs PreFilter (if any) then Filter for `p` on node `target` of a cluster; returns reasons or 'ok'. */
function runFilter(
  plugin: FilterPlugin & Partial<PreFilterPlugin>,
  nodes: Node[],
  existing: Pod[],
  p: Pod,
  target: string,
  namespaceLabels?: Handle['namespaceLabels'],
): string {
  const cache = new SchedulerCache();
  for (const n of nodes) cache.addOrUpdateNode(n);
  for (const e of existing) cache.addPod(e);
  const h: Handle = { snapshot: cache.snapshot(), namespaceLabels };
  const state = new CycleState();
  const info = newPodInfo(p);
  const pre: Status | null = plugin.preFilter ? plugin.preFilter(state, info, h) : null;
  if (pre && pre.code !== 'Skip') return `prefilter: ${pre.reasons.join(', ')}`;
  if (pre?.code === 'Skip') return 'ok';
  const s = plugin.filter(state, info, cache.get(target)!, h);
  return s === null ? 'ok' : s.reasons.join(', ');
}

describe('NodeUnschedulable', () => {
  const cases: [string, boolean, Pod['spec'] extends infer S ? Partial<NonNullable<S>> : never, string][] = [
    ['schedulable node', false, {}, 'ok'],
    ['cordoned node', true, {}, 'node(s) were unschedulable'],
    [
      'cordoned node, pod tolerates the unschedulable taint',
      true,
      {
        tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }],
      },
      'ok',
    ],
  ];
  for (const [name, cordoned, spec, want] of cases) {
    it(name, () => {
      assert.equal(
        runFilter(
          new NodeUnschedulable(),
          [node('n1', { unschedulable: cordoned })],
          [],
          pod('p', spec),
          'n1',
        ),
        want,
      );
    });
  }
});

describe('NodeName', () => {
  it('matches only the named node', () => {
    const p = pod('p', { nodeName: 'n2' });
    assert.equal(
      runFilter(new NodeName(), [node('n1'), node('n2')], [], p, 'n1'),
      "node(s) didn't match the requested node name",
    );
    assert.equal(runFilter(new NodeName(), [node('n1'), node('n2')], [], p, 'n2'), 'ok');
    assert.equal(runFilter(new NodeName(), [node('n1')], [], pod('q'), 'n1'), 'ok');
  });
});

describe('NodeAffinity', () => {
  const reason = "node(s) didn't match Pod's node affinity/selector";
  const n = node('n1', { labels: { zone: 'a', gpu: 'true', cores: '8' } });
  const req = (key: string, operator: string, values?: string[]) => ({
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key, operator, values }] }],
        },
      },
    },
  });
  const cases: [string, Partial<NonNullable<Pod['spec']>>, string][] = [
    ['no constraints', {}, 'ok'],
    ['nodeSelector matches', { nodeSelector: { zone: 'a' } }, 'ok'],
    ['nodeSelector does not match', { nodeSelector: { zone: 'b' } }, reason],
    ['nodeSelector key missing', { nodeSelector: { disk: 'ssd' } }, reason],
    ['In matches', req('zone', 'In', ['a', 'b']), 'ok'],
    ['In does not match', req('zone', 'In', ['b']), reason],
    ['NotIn matches', req('zone', 'NotIn', ['b']), 'ok'],
    ['NotIn does not match', req('zone', 'NotIn', ['a']), reason],
    ['NotIn on a missing label matches', req('disk', 'NotIn', ['ssd']), 'ok'],
    ['Exists', req('gpu', 'Exists'), 'ok'],
    ['Exists on a missing label', req('disk', 'Exists'), reason],
    ['DoesNotExist', req('disk', 'DoesNotExist'), 'ok'],
    ['DoesNotExist on a present label', req('gpu', 'DoesNotExist'), reason],
    ['Gt true', req('cores', 'Gt', ['4']), 'ok'],
    ['Gt false', req('cores', 'Gt', ['8']), reason],
    ['Lt true', req('cores', 'Lt', ['16']), 'ok'],
    ['Lt false', req('cores', 'Lt', ['8']), reason],
    ['Gt on a non-integer label', req('zone', 'Gt', ['1']), reason],
    [
      'terms are ORed',
      {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'zone', operator: 'In', values: ['x'] }] },
                { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
              ],
            },
          },
        },
      },
      'ok',
    ],
    [
      'an empty term matches nothing',
      {
        affinity: {
          nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{}] } },
        },
      },
      reason,
    ],
    [
      'matchFields on metadata.name',
      {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] },
              ],
            },
          },
        },
      },
      'ok',
    ],
    ['nodeSelector and affinity are ANDed', { nodeSelector: { zone: 'b' }, ...req('gpu', 'Exists') }, reason],
  ];
  for (const [name, spec, want] of cases) {
    it(name, () => assert.equal(runFilter(new NodeAffinity(), [n], [], pod('p', spec), 'n1'), want));
  }

  it('scores preferred terms by weight, normalized to 100', () => {
    const plugin = new NodeAffinity();
    const cache = new SchedulerCache();
    cache.addOrUpdateNode(node('a', { labels: { zone: 'a' } }));
    cache.addOrUpdateNode(node('b', { labels: { zone: 'b', ssd: 'true' } }));
    const p = newPodInfo(
      pod('p', {
        affinity: {
          nodeAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 10,
                preference: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
              },
              { weight: 40, preference: { matchExpressions: [{ key: 'ssd', operator: 'Exists' }] } },
            ],
          },
        },
      }),
    );
    const st = new CycleState();
    const scores = [plugin.score(st, p, cache.get('a')!), plugin.score(st, p, cache.get('b')!)];
    assert.deepEqual(scores, [10, 40]);
    plugin.normalizeScore(st, p, scores);
    assert.deepEqual(scores, [25, 100]);
  });
});

describe('TaintToleration', () => {
  const taints = [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }];
  const cases: [
    string,
    { key: string; value?: string; effect: string }[],
    Partial<NonNullable<Pod['spec']>>,
    string,
  ][] = [
    ['no taints', [], {}, 'ok'],
    ['untolerated NoSchedule', taints, {}, 'node(s) had untolerated taint {dedicated: gpu}'],
    [
      'untolerated NoExecute',
      [{ key: 'k', value: 'v', effect: 'NoExecute' }],
      {},
      'node(s) had untolerated taint {k: v}',
    ],
    ['PreferNoSchedule never filters', [{ key: 'k', effect: 'PreferNoSchedule' }], {}, 'ok'],
    [
      'Equal toleration',
      taints,
      { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }] },
      'ok',
    ],
    ['default operator is Equal', taints, { tolerations: [{ key: 'dedicated', value: 'gpu' }] }, 'ok'],
    [
      'wrong value',
      taints,
      { tolerations: [{ key: 'dedicated', value: 'cpu' }] },
      'node(s) had untolerated taint {dedicated: gpu}',
    ],
    ['Exists toleration', taints, { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }, 'ok'],
    ['empty key with Exists tolerates everything', taints, { tolerations: [{ operator: 'Exists' }] }, 'ok'],
    [
      'wrong effect',
      taints,
      { tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoExecute' }] },
      'node(s) had untolerated taint {dedicated: gpu}',
    ],
  ];
  for (const [name, t, spec, want] of cases) {
    it(name, () =>
      assert.equal(
        runFilter(new TaintToleration(), [node('n1', { taints: t })], [], pod('p', spec), 'n1'),
        want,
      ),
    );
  }

  it('scores fewer untolerated PreferNoSchedule taints higher', () => {
    const plugin = new TaintToleration();
    const cache = new SchedulerCache();
    cache.addOrUpdateNode(node('clean'));
    cache.addOrUpdateNode(node('one', { taints: [{ key: 'a', effect: 'PreferNoSchedule' }] }));
    cache.addOrUpdateNode(
      node('two', {
        taints: [
          { key: 'a', effect: 'PreferNoSchedule' },
          { key: 'b', effect: 'PreferNoSchedule' },
        ],
      }),
    );
    const p = newPodInfo(pod('p'));
    const st = new CycleState();
    const scores = ['clean', 'one', 'two'].map((n) => plugin.score(st, p, cache.get(n)!));
    assert.deepEqual(scores, [0, 1, 2]);
    plugin.normalizeScore(st, p, scores);
    assert.deepEqual(scores, [100, 50, 0]);
  });
});

describe('NodeResourcesFit', () => {
  const n = node('n1', { cpu: '2', memory: '4Gi', pods: '3' });
  const cases: [string, Pod[], Pod, string][] = [
    ['fits', [], pod('p', { cpu: '1', memory: '1Gi' }), 'ok'],
    [
      'exactly fits',
      [onNode(pod('e', { cpu: '1', memory: '2Gi' }), 'n1')],
      pod('p', { cpu: '1', memory: '2Gi' }),
      'ok',
    ],
    ['cpu short', [onNode(pod('e', { cpu: '1500m' }), 'n1')], pod('p', { cpu: '600m' }), 'Insufficient cpu'],
    ['memory short', [], pod('p', { memory: '5Gi' }), 'Insufficient memory'],
    ['both short', [], pod('p', { cpu: '3', memory: '5Gi' }), 'Insufficient cpu, Insufficient memory'],
    [
      'too many pods',
      [onNode(pod('a'), 'n1'), onNode(pod('b'), 'n1'), onNode(pod('c'), 'n1')],
      pod('p'),
      'Too many pods',
    ],
    ['best-effort pod fits anywhere with pod room', [onNode(pod('e', { cpu: '2' }), 'n1')], pod('p'), 'ok'],
    [
      'init container larger than the containers counts',
      [],
      pod('p', {
        cpu: '100m',
        initContainers: [{ name: 'i', image: 'x', resources: { requests: { cpu: '2500m' } } }],
      }),
      'Insufficient cpu',
    ],
    [
      'overhead counts',
      [onNode(pod('e', { cpu: '1' }), 'n1')],
      pod('p', { cpu: '900m', overhead: { cpu: '200m' } }),
      'Insufficient cpu',
    ],
    [
      'extended resources',
      [],
      {
        ...pod('p'),
        spec: { containers: [{ name: 'c', resources: { requests: { 'example.com/gpu': '1' } } }] },
      },
      'Insufficient example.com/gpu',
    ],
  ];
  for (const [name, existing, p, want] of cases) {
    it(name, () => assert.equal(runFilter(new NodeResourcesFit(), [n], existing, p, 'n1'), want));
  }

  it('computes requests as max(sum(containers), max(init)) + overhead, with sidecars', () => {
    const r = podRequests({
      spec: {
        containers: [
          { name: 'a', resources: { requests: { cpu: '100m', memory: '100Mi' } } },
          { name: 'b', resources: { requests: { cpu: '200m', memory: '50Mi' } } },
        ],
        initContainers: [
          { name: 'i1', resources: { requests: { cpu: '250m', memory: '10Mi' } } },
          { name: 'side', restartPolicy: 'Always', resources: { requests: { cpu: '50m', memory: '1Mi' } } },
          { name: 'i2', resources: { requests: { cpu: '300m' } } },
        ],
        overhead: { cpu: '10m' },
      },
    });
    // containers 300m + sidecar 50m = 350m; init peak: i2 + sidecar = 350m; + overhead 10m.
    assert.equal(r.milliCpu, 360);
    assert.equal(r.memory, 151 * 1024 * 1024);
  });

  it('LeastAllocated prefers emptier nodes; BalancedAllocation prefers balanced use', () => {
    const fit = new NodeResourcesFit();
    const bal = new BalancedAllocation();
    const cache = new SchedulerCache();
    cache.addOrUpdateNode(node('empty', { cpu: '4', memory: '4Gi' }));
    cache.addOrUpdateNode(node('half', { cpu: '4', memory: '4Gi' }));
    cache.addPod(onNode(pod('e', { cpu: '2', memory: '2Gi' }), 'half'));
    const p = newPodInfo(pod('p', { cpu: '1', memory: '1Gi' }));
    const st = new CycleState();
    assert.equal(fit.score(st, p, cache.get('empty')!), 75);
    assert.equal(fit.score(st, p, cache.get('half')!), 25);
    assert.equal(bal.score(st, p, cache.get('empty')!), 100);
    const skewed = newPodInfo(pod('s', { cpu: '2', memory: '0' }));
    // cpu fraction 0.5, memory 0: std 0.25 → 75.
    assert.equal(bal.score(st, skewed, cache.get('empty')!), 75);
    const most = new NodeResourcesFit({ scoringStrategy: { type: 'MostAllocated' } });
    assert.equal(most.score(st, p, cache.get('half')!), 75);
  });
});

describe('NodePorts', () => {
  const withPort = (name: string, port: number, hostIP?: string, protocol?: string): Pod =>
    pod(name, {
      containers: [{ name: 'c', ports: [{ containerPort: 80, hostPort: port, hostIP, protocol }] }],
    });
  const reason = "node(s) didn't have free ports for the requested pod ports";
  const cases: [string, Pod[], Pod, string][] = [
    ['free', [], withPort('p', 8080), 'ok'],
    ['taken', [onNode(withPort('e', 8080), 'n1')], withPort('p', 8080), reason],
    ['other port', [onNode(withPort('e', 8081), 'n1')], withPort('p', 8080), 'ok'],
    ['other protocol', [onNode(withPort('e', 8080, undefined, 'UDP'), 'n1')], withPort('p', 8080), 'ok'],
    [
      'different specific IPs',
      [onNode(withPort('e', 8080, '10.0.0.1'), 'n1')],
      withPort('p', 8080, '10.0.0.2'),
      'ok',
    ],
    ['wildcard vs specific', [onNode(withPort('e', 8080), 'n1')], withPort('p', 8080, '10.0.0.2'), reason],
    ['specific vs wildcard', [onNode(withPort('e', 8080, '10.0.0.1'), 'n1')], withPort('p', 8080), reason],
  ];
  for (const [name, existing, p, want] of cases) {
    it(name, () => assert.equal(runFilter(new NodePorts(), [node('n1')], existing, p, 'n1'), want));
  }
});

describe('InterPodAffinity', () => {
  const zoneNodes = [
    node('a1', { labels: { zone: 'a' } }),
    node('a2', { labels: { zone: 'a' } }),
    node('b1', { labels: { zone: 'b' } }),
    node('nozone'),
  ];
  const web = (name: string, spec: Partial<NonNullable<Pod['spec']>> = {}, ns?: string) =>
    pod(name, spec, { labels: { app: 'web' }, namespace: ns });
  const affinity = (topologyKey: string, extra: object = {}) => ({
    affinity: {
      podAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { labelSelector: { matchLabels: { app: 'db' } }, topologyKey, ...extra },
        ],
      },
    },
  });
  const db = onNode(pod('db', {}, { labels: { app: 'db' } }), 'a1');
  const cases: [string, Pod[], Pod, string, string][] = [
    ['affinity: same zone as db', [db], pod('p', affinity('zone')), 'a2', 'ok'],
    [
      'affinity: other zone',
      [db],
      pod('p', affinity('zone')),
      'b1',
      "node(s) didn't match pod affinity rules",
    ],
    [
      'affinity: node without the key',
      [db],
      pod('p', affinity('zone')),
      'nozone',
      "node(s) didn't match pod affinity rules",
    ],
    [
      'affinity: no db anywhere',
      [],
      pod('p', affinity('zone')),
      'a1',
      "node(s) didn't match pod affinity rules",
    ],
    [
      'affinity: other namespace is not seen',
      [db],
      pod('p', affinity('zone'), { namespace: 'other' }),
      'a2',
      "node(s) didn't match pod affinity rules",
    ],
    [
      'affinity: namespaces lists the db namespace',
      [db],
      pod('p', affinity('zone', { namespaces: ['default'] }), { namespace: 'other' }),
      'a2',
      'ok',
    ],
    [
      'affinity: empty namespaceSelector means all namespaces',
      [db],
      pod('p', affinity('zone', { namespaceSelector: {} }), { namespace: 'other' }),
      'a2',
      'ok',
    ],
    [
      'affinity to itself: the first pod may go anywhere',
      [],
      pod('p', affinity('zone'), { labels: { app: 'db' } }),
      'b1',
      'ok',
    ],
    [
      'anti-affinity by hostname',
      [onNode(web('w1'), 'a1')],
      web('p', { affinity: antiAffinityByHostname('web') }),
      'a1',
      "node(s) didn't match pod anti-affinity rules",
    ],
    [
      'anti-affinity by hostname: other node ok',
      [onNode(web('w1'), 'a1')],
      web('p', { affinity: antiAffinityByHostname('web') }),
      'a2',
      'ok',
    ],
    [
      'anti-affinity by zone',
      [onNode(web('w1'), 'a1')],
      web('p', {
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { app: 'web' } }, topologyKey: 'zone' },
            ],
          },
        },
      }),
      'a2',
      "node(s) didn't match pod anti-affinity rules",
    ],
    [
      "existing pod's anti-affinity toward the incoming pod",
      [onNode(pod('guard', { affinity: antiAffinityByHostname('web') }), 'a1')],
      web('p'),
      'a1',
      "node(s) didn't satisfy existing pods anti-affinity rules",
    ],
    [
      "existing pod's anti-affinity: other node ok",
      [onNode(pod('guard', { affinity: antiAffinityByHostname('web') }), 'a1')],
      web('p'),
      'a2',
      'ok',
    ],
    [
      'matchExpressions selector',
      [onNode(web('w1'), 'a1')],
      pod('p', {
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              {
                labelSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['web', 'api'] }] },
                topologyKey: 'kubernetes.io/hostname',
              },
            ],
          },
        },
      }),
      'a1',
      "node(s) didn't match pod anti-affinity rules",
    ],
  ];
  for (const [name, existing, p, target, want] of cases) {
    it(name, () => assert.equal(runFilter(new InterPodAffinity(), zoneNodes, existing, p, target), want));
  }

  it('namespaceSelector selects namespaces by their labels', () => {
    const p = pod('p', affinity('zone', { namespaceSelector: { matchLabels: { team: 'data' } } }), {
      namespace: 'other',
    });
    const nsLabels = (ns: string) => (ns === 'default' ? { team: 'data' } : { team: 'web' });
    assert.equal(runFilter(new InterPodAffinity(), zoneNodes, [db], p, 'a2', nsLabels), 'ok');
    assert.equal(
      runFilter(new InterPodAffinity(), zoneNodes, [db], p, 'a2', () => ({ team: 'web' })),
      "node(s) didn't match pod affinity rules",
    );
  });

  it('scores preferred affinity toward the zone of matching pods', () => {
    const plugin = new InterPodAffinity();
    const cache = new SchedulerCache();
    for (const n of zoneNodes) cache.addOrUpdateNode(n);
    cache.addPod(db);
    const p = newPodInfo(
      pod('p', {
        affinity: {
          podAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 50,
                podAffinityTerm: { labelSelector: { matchLabels: { app: 'db' } }, topologyKey: 'zone' },
              },
            ],
          },
        },
      }),
    );
    const h: Handle = { snapshot: cache.snapshot() };
    const st = new CycleState();
    const nodes = ['a1', 'a2', 'b1'].map((n) => cache.get(n)!);
    assert.equal(plugin.preScore(st, p, nodes, h), null);
    const scores = nodes.map((n) => plugin.score(st, p, n));
    assert.deepEqual(scores, [50, 50, 0]);
    plugin.normalizeScore(st, p, scores);
    assert.deepEqual(scores, [100, 100, 0]);
  });
});

describe('PodTopologySpread', () => {
  const zones = [
    node('a1', { labels: { zone: 'a' } }),
    node('b1', { labels: { zone: 'b' } }),
    node('c1', { labels: { zone: 'c' } }),
  ];
  const spread = (maxSkew: number, when = 'DoNotSchedule') =>
    pod(
      'p',
      {
        topologySpreadConstraints: [
          {
            maxSkew,
            topologyKey: 'zone',
            whenUnsatisfiable: when,
            labelSelector: { matchLabels: { app: 'web' } },
          },
        ],
      },
      { labels: { app: 'web' } },
    );
  const web = (name: string, n: string) => onNode(pod(name, {}, { labels: { app: 'web' } }), n);
  const reason = "node(s) didn't match pod topology spread constraints";
  const cases: [string, Pod[], Pod, string, string][] = [
    ['empty cluster, any zone', [], spread(1), 'a1', 'ok'],
    ['zone a has one, b none: a rejected', [web('w1', 'a1')], spread(1), 'a1', reason],
    ['zone a has one, b none: b fine', [web('w1', 'a1')], spread(1), 'b1', 'ok'],
    ['maxSkew 2 allows', [web('w1', 'a1')], spread(2), 'a1', 'ok'],
    [
      'ScheduleAnyway never filters',
      [web('w1', 'a1'), web('w2', 'a1')],
      spread(1, 'ScheduleAnyway'),
      'a1',
      'ok',
    ],
    [
      'other labels do not count',
      [onNode(pod('x', {}, { labels: { app: 'db' } }), 'a1')],
      spread(1),
      'a1',
      'ok',
    ],
  ];
  for (const [name, existing, p, target, want] of cases) {
    it(name, () => assert.equal(runFilter(new PodTopologySpread(), zones, existing, p, target), want));
  }
  it('a node without the topology key is rejected as unresolvable', () => {
    assert.equal(
      runFilter(new PodTopologySpread(), [...zones, node('bare')], [], spread(1), 'bare'),
      "node(s) didn't match pod topology spread constraints (missing required label)",
    );
  });
});

describe('skipping checks no node needs', () => {
  it('runs the cordon and taint checks again once a node is cordoned or tainted', () => {
    const cache = new SchedulerCache();
    for (const n of ['n1', 'n2', 'n3']) cache.addOrUpdateNode(node(n));
    const fwk = buildFramework();
    const alg = new SchedulingAlgorithm({ random: () => 0 });
    const place = (name: string) => {
      try {
        return alg.schedule(fwk, cache.snapshot(), newPodInfo(pod(name))).nodeName;
      } catch (err) {
        return (err as Error).message;
      }
    };
    assert.match(place('a'), /^n[123]$/);
    cache.addOrUpdateNode(node('n1', { unschedulable: true }));
    cache.addOrUpdateNode(node('n2', { taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] }));
    for (let i = 0; i < 6; i++) assert.equal(place(`b${i}`), 'n3');
    cache.addOrUpdateNode(node('n3', { taints: [{ key: 'k', value: 'v', effect: 'NoExecute' }] }));
    assert.equal(
      place('c'),
      '0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) had untolerated taint {k: v}.',
    );
    // PreferNoSchedule taints are scored again once a node has one: the clean node wins.
    cache.addOrUpdateNode(node('n1'));
    cache.addOrUpdateNode(node('n2'));
    cache.addOrUpdateNode(node('n3', { taints: [{ key: 'k', effect: 'PreferNoSchedule' }] }));
    cache.addOrUpdateNode(node('n2', { taints: [{ key: 'k', effect: 'PreferNoSchedule' }] }));
    for (let i = 0; i < 6; i++) assert.equal(place(`d${i}`), 'n1');
  });
});
