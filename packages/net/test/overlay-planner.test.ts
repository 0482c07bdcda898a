// The overlay planner and differ as pure logic, table-driven: Nodes and the
// host's routes in, the kernel objects kubit-net wants out; and the iproute2
// batches between what the kernel holds and that, touching only what changed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Node } from '@kubit/api';
import {
  BACKEND_DATA_ANNOTATION,
  BACKEND_TYPE_ANNOTATION,
  type HostRoute,
  type KernelState,
  type OverlayConfig,
  type OverlayMode,
  type OverlayState,
  overlayDiff,
  POD_MTU_ANNOTATION,
  PUBLIC_IP_ANNOTATION,
  planOverlay,
  vtepMac,
} from '../src/overlay/index.js';

const DEV = 'kubit.1';
const config = (mode: OverlayMode): OverlayConfig => ({ mode, vni: 1, port: 8472, device: DEV });

function node(
  name: string,
  podCIDR: string | undefined,
  ip: string | undefined,
  o: { created?: string; mac?: string | null; vni?: number; publicIp?: string } = {},
): Node {
  const annotations: Record<string, string> = {};
  if (o.mac !== null) {
    annotations[BACKEND_TYPE_ANNOTATION] = 'vxlan';
    annotations[BACKEND_DATA_ANNOTATION] = JSON.stringify({
      VNI: o.vni ?? 1,
      VtepMAC: o.mac ?? vtepMac(name, o.vni ?? 1),
    });
  }
  if (o.publicIp) annotations[PUBLIC_IP_ANNOTATION] = o.publicIp;
  return {
    metadata: { name, annotations, creationTimestamp: o.created ?? `2026-01-01T00:00:0${name.length % 10}Z` },
    spec: podCIDR ? { podCIDR } : {},
    status: ip ? { addresses: [{ type: 'InternalIP', address: ip }] } : {},
  };
}

// This node (a) is on 192.168.1.0/24 behind router .1; 192.168.2.0/24 is elsewhere.
const hostRoutes: HostRoute[] = [
  { dst: 'default', gateway: '192.168.1.1', dev: 'eth0', onlink: false },
  { dst: '192.168.1.0/24', dev: 'eth0', protocol: 'kernel', onlink: false },
  { dst: '10.244.1.0/24', dev: 'cni0', protocol: 'kernel', onlink: false },
];
const hostAddresses = [{ dev: 'eth0', local: '192.168.1.10', prefixlen: 24, mtu: 1500 }];
const A = node('a', '10.244.1.0/24', '192.168.1.10', { created: '2026-01-01T00:00:00Z' });

const plan = (mode: OverlayMode, nodes: Node[], routes = hostRoutes) =>
  planOverlay({
    config: config(mode),
    nodeName: 'a',
    nodes: [A, ...nodes],
    hostRoutes: routes,
    hostAddresses,
  });

const summary = (s: OverlayState | undefined) => ({
  routes: [...(s?.routes.values() ?? [])]
    .map((r) => `${r.dst} via ${r.via}${r.dev ? ` dev ${r.dev}` : ''}`)
    .sort(),
  neighs: [...(s?.neighs.values() ?? [])].map((n) => `${n.ip} ${n.mac}`).sort(),
  fdb: [...(s?.fdb.values() ?? [])].map((f) => `${f.mac} ${f.dst}`).sort(),
});

describe('overlay planner', () => {
  const macB = vtepMac('b', 1);
  const macC = vtepMac('c', 1);
  const B = node('b', '10.244.2.0/24', '192.168.2.20'); // another subnet, behind the router
  const C = node('c', '10.244.3.0/24', '192.168.1.30'); // same segment as a
  const cases: {
    name: string;
    mode: OverlayMode;
    nodes: Node[];
    routes?: HostRoute[];
    want: ReturnType<typeof summary>;
    problems?: string[];
  }[] = [
    {
      name: 'vxlan: a peer gets a route on the device, its gateway ARP entry and FDB entry',
      mode: 'vxlan',
      nodes: [B],
      want: {
        routes: [`10.244.2.0/24 via 10.244.2.0 dev ${DEV}`],
        neighs: [`10.244.2.0 ${macB}`],
        fdb: [`${macB} 192.168.2.20`],
      },
    },
    {
      name: 'host-gw: a same-segment peer gets a route via its address; an off-segment one an Event',
      mode: 'host-gw',
      nodes: [B, C],
      want: { routes: ['10.244.3.0/24 via 192.168.1.30'], neighs: [], fdb: [] },
      problems: ['b PeerNotOnSegment'],
    },
    {
      name: 'auto: host-gw for the same-segment peer, vxlan for the other',
      mode: 'auto',
      nodes: [B, C],
      want: {
        routes: ['10.244.3.0/24 via 192.168.1.30', `10.244.2.0/24 via 10.244.2.0 dev ${DEV}`].sort(),
        neighs: [`10.244.2.0 ${macB}`],
        fdb: [`${macB} 192.168.2.20`],
      },
    },
    {
      name: 'a node that left has nothing',
      mode: 'vxlan',
      nodes: [],
      want: { routes: [], neighs: [], fdb: [] },
    },
    {
      name: 'the published public-ip wins over the InternalIP',
      mode: 'vxlan',
      nodes: [node('b', '10.244.2.0/24', '192.168.2.20', { publicIp: '192.168.9.9' })],
      want: {
        routes: [`10.244.2.0/24 via 10.244.2.0 dev ${DEV}`],
        neighs: [`10.244.2.0 ${macB}`],
        fdb: [`${macB} 192.168.9.9`],
      },
    },
    {
      name: 'a MAC change follows',
      mode: 'vxlan',
      nodes: [node('b', '10.244.2.0/24', '192.168.2.20', { mac: '02:00:00:00:00:bb' })],
      want: {
        routes: [`10.244.2.0/24 via 10.244.2.0 dev ${DEV}`],
        neighs: ['10.244.2.0 02:00:00:00:00:bb'],
        fdb: ['02:00:00:00:00:bb 192.168.2.20'],
      },
    },
    {
      name: 'two nodes with one pod subnet: the older keeps it, the newer gets an Event',
      mode: 'vxlan',
      nodes: [
        node('b', '10.244.2.0/24', '192.168.2.20', { created: '2026-01-01T00:00:01Z' }),
        node('c', '10.244.2.0/25', '192.168.1.30', { created: '2026-01-01T00:00:02Z' }),
      ],
      want: {
        routes: [`10.244.2.0/24 via 10.244.2.0 dev ${DEV}`],
        neighs: [`10.244.2.0 ${macB}`],
        fdb: [`${macB} 192.168.2.20`],
      },
      problems: ['c PodCIDRConflict'],
    },
    {
      name: "a peer claiming this node's own subnet is skipped",
      mode: 'vxlan',
      nodes: [node('b', '10.244.1.0/24', '192.168.2.20')],
      want: { routes: [], neighs: [], fdb: [] },
      problems: ['b PodCIDRConflict'],
    },
    {
      name: 'a node without an underlay address gets an Event; the others are routed',
      mode: 'vxlan',
      nodes: [node('b', '10.244.2.0/24', undefined), C],
      want: {
        routes: [`10.244.3.0/24 via 10.244.3.0 dev ${DEV}`],
        neighs: [`10.244.3.0 ${macC}`],
        fdb: [`${macC} 192.168.1.30`],
      },
      problems: ['b NoUnderlayAddress'],
    },
    {
      name: 'a peer without a VTEP yet, or with another VNI, is skipped in vxlan mode',
      mode: 'vxlan',
      nodes: [
        node('b', '10.244.2.0/24', '192.168.2.20', { mac: null }),
        node('c', '10.244.3.0/24', '192.168.1.30', { vni: 2 }),
      ],
      want: { routes: [], neighs: [], fdb: [] },
      problems: ['c VNIMismatch'],
    },
    {
      name: 'a peer whose pod subnet is directly connected here (one machine) is skipped in every mode',
      mode: 'auto',
      nodes: [C],
      routes: [...hostRoutes, { dst: '10.244.3.0/24', dev: 'cni1', protocol: 'kernel', onlink: false }],
      want: { routes: [], neighs: [], fdb: [] },
    },
    {
      name: "kubit-net's own routes do not count as connected",
      mode: 'auto',
      nodes: [C],
      routes: [
        ...hostRoutes,
        { dst: '10.244.3.0/24', gateway: '192.168.1.30', dev: 'eth0', protocol: '75', onlink: false },
      ],
      want: { routes: ['10.244.3.0/24 via 192.168.1.30'], neighs: [], fdb: [] },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const p = plan(c.mode, c.nodes, c.routes);
      assert.ok(p.state, p.notReady);
      assert.deepEqual(summary(p.state), c.want);
      assert.deepEqual(
        p.problems.map((x) => `${x.node} ${x.reason}`),
        c.problems ?? [],
      );
    });
  }

  it('the device: VNI, port, local underlay address, MTU underlay − 50, the .0/32 of the pod subnet', () => {
    const p = plan('vxlan', []);
    assert.deepEqual(p.state?.device, {
      name: DEV,
      vni: 1,
      local: '192.168.1.10',
      port: 8472,
      mtu: 1450,
      mac: vtepMac('a', 1),
      address: '10.244.1.0/32',
    });
    assert.equal(p.annotations?.[POD_MTU_ANNOTATION], '1450');
    assert.equal(p.annotations?.[PUBLIC_IP_ANNOTATION], '192.168.1.10');
    assert.deepEqual(JSON.parse(p.annotations?.[BACKEND_DATA_ANNOTATION] ?? ''), {
      VNI: 1,
      VtepMAC: vtepMac('a', 1),
    });
    const hg = plan('host-gw', []);
    assert.equal(hg.state?.device, undefined);
    assert.equal(hg.annotations?.[POD_MTU_ANNOTATION], '1500');
    assert.equal(hg.annotations?.[BACKEND_TYPE_ANNOTATION], 'host-gw');
  });

  it('an underlay on loopback (one machine, InternalIP 127.0.0.1) counts as Ethernet for the pod MTU', () => {
    const p = planOverlay({
      config: config('vxlan'),
      nodeName: 'a',
      nodes: [node('a', '10.244.1.0/24', '127.0.0.1')],
      hostRoutes,
      hostAddresses: [{ dev: 'lo', local: '127.0.0.1', prefixlen: 8, mtu: 65536 }],
    });
    assert.equal(p.annotations?.[POD_MTU_ANNOTATION], '1450');
    assert.equal(p.state?.device?.mtu, 1450);
  });

  it('a peer at one of this host’s own addresses (one machine, before its bridge exists) is skipped without an Event', () => {
    for (const mode of ['host-gw', 'vxlan', 'auto'] as const) {
      const p = planOverlay({
        config: config(mode),
        nodeName: 'a',
        nodes: [node('a', '10.244.1.0/24', '127.0.0.1'), node('b', '10.244.2.0/24', '127.0.0.1')],
        hostRoutes,
        hostAddresses: [{ dev: 'lo', local: '127.0.0.1', prefixlen: 8, mtu: 65536 }],
      });
      assert.deepEqual(p.state?.routes.size, 0, mode);
      assert.deepEqual(p.problems, [], mode);
      assert.equal(p.peers.find((x) => x.node === 'b')?.backend, 'skipped', mode);
    }
  });

  it('is not ready (touches nothing) without its own Node, pod subnet or underlay address', () => {
    const base = { config: config('vxlan'), nodeName: 'a', hostRoutes, hostAddresses };
    assert.match(planOverlay({ ...base, nodes: [] }).notReady ?? '', /no Node/);
    assert.match(
      planOverlay({ ...base, nodes: [node('a', undefined, '192.168.1.10')] }).notReady ?? '',
      /pod CIDR/,
    );
    assert.match(
      planOverlay({ ...base, nodes: [node('a', '10.244.1.0/24', undefined)] }).notReady ?? '',
      /InternalIP/,
    );
    assert.match(
      planOverlay({ ...base, underlayAddress: '10.9.9.9', nodes: [A] }).notReady ?? '',
      /not on any interface/,
    );
  });
});

describe('overlay differ', () => {
  const empty = (): KernelState => ({
    routes: new Map(),
    neighs: new Map(),
    fdb: new Map(),
    hostRoutes: [],
    hostAddresses: [],
  });
  const B = node('b', '10.244.2.0/24', '192.168.2.20');
  const C = node('c', '10.244.3.0/24', '192.168.1.30');
  /** The kernel exactly as a plan wants it. */
  const kernelOf = (s: OverlayState): KernelState => ({
    ...empty(),
    device: s.device && {
      name: s.device.name,
      kind: 'vxlan',
      vni: s.device.vni,
      local: s.device.local,
      port: s.device.port,
      learning: false,
      mtu: s.device.mtu,
      mac: s.device.mac,
      up: true,
      addresses: [s.device.address],
    },
    routes: new Map(s.routes),
    neighs: new Map(s.neighs),
    fdb: new Map(s.fdb),
  });
  const want = (mode: OverlayMode, nodes: Node[]) => {
    const s = plan(mode, nodes).state;
    assert.ok(s);
    return s;
  };

  it('from nothing: the device, its address, then entries; FDB in the bridge batch', () => {
    const d = overlayDiff(empty(), want('vxlan', [B]), DEV);
    assert.deepEqual(d.ip, [
      `link add ${DEV} address ${vtepMac('a', 1)} type vxlan id 1 local 192.168.1.10 dstport 8472 nolearning`,
      `link set ${DEV} mtu 1450 up`,
      `addr add 10.244.1.0/32 dev ${DEV}`,
      `neigh replace 10.244.2.0 lladdr ${vtepMac('b', 1)} dev ${DEV} nud permanent`,
      `route replace 10.244.2.0/24 via 10.244.2.0 dev ${DEV} onlink proto 75`,
    ]);
    assert.deepEqual(d.bridge, [`fdb replace ${vtepMac('b', 1)} dev ${DEV} dst 192.168.2.20 self permanent`]);
  });

  it('nothing when the kernel is right (a restart rewrites nothing)', () => {
    const s = want('auto', [B, C]);
    assert.deepEqual(overlayDiff(kernelOf(s), s, DEV), { ip: [], bridge: [] });
  });

  it('a node that left: its route, neigh and FDB entry go, nothing else', () => {
    const before = kernelOf(want('vxlan', [B, C]));
    const d = overlayDiff(before, want('vxlan', [C]), DEV);
    assert.deepEqual(d.ip, [`neigh del 10.244.2.0 dev ${DEV}`, 'route del 10.244.2.0/24 proto 75']);
    assert.deepEqual(d.bridge, [`fdb del ${vtepMac('b', 1)} dev ${DEV} dst 192.168.2.20 self`]);
  });

  it('an address change moves only the FDB entry', () => {
    const before = kernelOf(want('vxlan', [B]));
    const d = overlayDiff(before, want('vxlan', [node('b', '10.244.2.0/24', '192.168.2.99')]), DEV);
    assert.deepEqual(d.ip, []);
    assert.deepEqual(d.bridge, [`fdb replace ${vtepMac('b', 1)} dev ${DEV} dst 192.168.2.99 self permanent`]);
  });

  it('a MAC change: new neigh, the old FDB entry out and the new one in', () => {
    const before = kernelOf(want('vxlan', [B]));
    const d = overlayDiff(
      before,
      want('vxlan', [node('b', '10.244.2.0/24', '192.168.2.20', { mac: '02:00:00:00:00:bb' })]),
      DEV,
    );
    assert.deepEqual(d.ip, [`neigh replace 10.244.2.0 lladdr 02:00:00:00:00:bb dev ${DEV} nud permanent`]);
    assert.deepEqual(d.bridge, [
      `fdb del ${vtepMac('b', 1)} dev ${DEV} dst 192.168.2.20 self`,
      `fdb replace 02:00:00:00:00:bb dev ${DEV} dst 192.168.2.20 self permanent`,
    ]);
  });

  it('a wrong VNI recreates the device and everything on it; host-gw routes stay', () => {
    const s = want('auto', [B, C]);
    const k = kernelOf(s);
    assert.ok(k.device);
    k.device.vni = 9;
    const d = overlayDiff(k, s, DEV);
    assert.equal(d.ip[0], `link del ${DEV}`);
    assert.ok(d.ip.includes(`route replace 10.244.2.0/24 via 10.244.2.0 dev ${DEV} onlink proto 75`));
    assert.ok(!d.ip.some((l) => l.includes('192.168.1.30')), 'the host-gw route is left alone');
    assert.equal(d.bridge.length, 1);
  });

  it('switching vxlan → host-gw removes the device and routes through it', () => {
    const before = kernelOf(want('vxlan', [C]));
    const d = overlayDiff(before, want('host-gw', [C]), DEV);
    assert.deepEqual(d.ip, [`link del ${DEV}`, 'route replace 10.244.3.0/24 via 192.168.1.30 proto 75']);
    assert.deepEqual(d.bridge, []);
  });

  it('a wrong MTU is set in place', () => {
    const s = want('vxlan', []);
    const k = kernelOf(s);
    assert.ok(k.device);
    k.device.mtu = 1500;
    assert.deepEqual(overlayDiff(k, s, DEV).ip, [`link set ${DEV} mtu 1450 up`]);
  });
});
