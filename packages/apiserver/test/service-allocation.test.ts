// The pure parts of Service allocation: the ranges and their static bands, picking a
// free value, what a Service is given and holds, and what an update keeps or drops.
// The store is an in-memory map of claim keys here; services.test.ts runs it for real.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isStatusError } from '@kubit/api';
import { services } from '../src/kinds/services.js';
import type { ClaimReader } from '../src/kinds/types.js';
import { heldKeys, ServiceClaims } from '../src/services/allocator.js';
import { type Band, pickFree, serviceNetworking } from '../src/services/networking.js';
import type { KObject } from '../src/storage.js';

/** Claim keys held in memory. */
function reader(held: string[] = []): ClaimReader & { keys_: Set<string> } {
  const keys_ = new Set(held);
  return {
    keys_,
    holder: async (key) => (keys_.has(key) ? '{"uid":"other"}' : undefined),
    keys: async (prefix) => [...keys_].filter((k) => k.startsWith(prefix)),
  };
}

function svc(spec: Record<string, unknown>): KObject {
  const o: KObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 's', namespace: 'default', uid: 'u1' },
    spec,
  };
  services.prepareForCreate?.(o);
  services.defaults?.(o);
  return o;
}

async function rejection(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(isStatusError(err), String(err));
    return (err as { status: { message: string } }).status.message;
  }
  assert.fail('expected a refusal');
}

describe('service ranges', () => {
  it('leaves out the network and broadcast addresses and keeps a static band, as Kubernetes sizes it', () => {
    const n = serviceNetworking('10.96.0.0/12', '30000-32767');
    assert.equal(n.ips.first, (10 << 24) + (96 << 16) + 1);
    assert.equal(n.ips.last, (10 << 24) + (111 << 16) + (255 << 8) + 254);
    assert.equal(n.ips.staticSize, 256);
    assert.equal(n.nodePorts.staticSize, 86);
    assert.equal(serviceNetworking('10.0.0.0/28').ips.staticSize, 0);
    assert.equal(serviceNetworking('10.0.0.0/24').ips.staticSize, 16);
  });

  it('refuses ranges it cannot serve, naming the flag', () => {
    assert.throws(
      () => serviceNetworking('10.96.0.0/12,fd00::/108'),
      /--service-cluster-ip-range=.*single-stack/,
    );
    assert.throws(() => serviceNetworking('10.96.0.0/30'), /too small/);
    assert.throws(() => serviceNetworking('10.96.0.0/12', '0-10'), /--service-node-port-range=0-10/);
    assert.throws(() => serviceNetworking('10.96.0.0/12', 'a-b'), /--service-node-port-range=a-b/);
  });

  it('picks above the static band first, then inside it, then nothing', () => {
    const band: Band = { first: 1, last: 10, staticSize: 4 };
    const taken = new Set<number>();
    const order: number[] = [];
    for (;;) {
      const v = pickFree(band, (x) => taken.has(x));
      if (v === undefined) break;
      taken.add(v);
      order.push(v);
    }
    assert.equal(order.length, 10);
    assert.ok(
      order.slice(0, 6).every((v) => v >= 5),
      order.join(' '),
    );
    assert.ok(
      order.slice(6).every((v) => v <= 4),
      order.join(' '),
    );
  });
});

describe('ServiceClaims', () => {
  const net = serviceNetworking('10.96.0.0/24', '30000-30009');
  const claims = new ServiceClaims(net);

  it('gives a ClusterIP Service one address of the range and the single-stack fields', async () => {
    const o = svc({ ports: [{ port: 80 }] });
    const got = await claims.assign(o, undefined, reader(), 0);
    const spec = o.spec as Record<string, unknown>;
    assert.match(String(spec.clusterIP), /^10\.96\.0\.\d+$/);
    assert.deepEqual(spec.clusterIPs, [spec.clusterIP]);
    assert.deepEqual(spec.ipFamilies, ['IPv4']);
    assert.equal(spec.ipFamilyPolicy, 'SingleStack');
    assert.deepEqual(
      got.map((c) => c.key),
      [`/registry/serviceips/${spec.clusterIP}`],
    );
    assert.deepEqual(JSON.parse(got[0].value), { namespace: 'default', name: 's', uid: 'u1' });
    assert.deepEqual(heldKeys(o), [`/registry/serviceips/${spec.clusterIP}`]);
  });

  it('gives a TCP and a UDP port of one number one node port, and a Local LoadBalancer a health check port', async () => {
    const o = svc({
      type: 'LoadBalancer',
      externalTrafficPolicy: 'Local',
      ports: [
        { name: 'dns', port: 53, protocol: 'UDP' },
        { name: 'dns-tcp', port: 53, protocol: 'TCP' },
      ],
    });
    const got = await claims.assign(o, undefined, reader(), 0);
    const spec = o.spec as { ports: { nodePort: number }[]; healthCheckNodePort: number };
    assert.equal(spec.ports[0].nodePort, spec.ports[1].nodePort);
    assert.notEqual(spec.healthCheckNodePort, spec.ports[0].nodePort);
    assert.equal(got.length, 3, 'one address, two node ports');
  });

  it('leaves a LoadBalancer without node ports when told so, but keeps one it asked for', async () => {
    const o = svc({
      type: 'LoadBalancer',
      allocateLoadBalancerNodePorts: false,
      ports: [
        { name: 'a', port: 80 },
        { name: 'b', port: 81, nodePort: 30005 },
      ],
    });
    await claims.assign(o, undefined, reader(), 0);
    const ports = (o.spec as { ports: { nodePort?: number }[] }).ports;
    assert.equal(ports[0].nodePort, undefined);
    assert.equal(ports[1].nodePort, 30005);
  });

  it('finds the free values on a retry, and says when the range is full', async () => {
    const keys = Array.from({ length: 9 }, (_, i) => `/registry/servicenodeports/${30000 + i}`);
    const o = svc({ type: 'NodePort', ports: [{ port: 80 }] });
    await claims.assign(o, undefined, reader(keys), 1);
    assert.equal((o.spec as { ports: { nodePort: number }[] }).ports[0].nodePort, 30009);
    const full = [...keys, '/registry/servicenodeports/30009'];
    assert.match(
      await rejection(
        claims.assign(svc({ type: 'NodePort', ports: [{ port: 80 }] }), undefined, reader(full), 1),
      ),
      /failed to allocate a nodePort: range is full/,
    );
  });

  it('keeps what an update keeps, without asking the store about it', async () => {
    const old = svc({ type: 'NodePort', ports: [{ port: 80, nodePort: 30001 }] });
    await claims.assign(old, undefined, reader(), 0);
    const held = reader(heldKeys(old));
    const next = structuredClone(old);
    const got = await claims.assign(next, old, held, 0);
    assert.deepEqual(got.map((c) => c.key).sort(), heldKeys(old).sort());
    assert.ok(got.every((c) => c.takenError === undefined));
  });

  it('refuses IPv6 and dual-stack with the field that asked', async () => {
    assert.match(
      await rejection(
        claims.assign(svc({ clusterIP: 'fd00::1', ports: [{ port: 80 }] }), undefined, reader(), 0),
      ),
      /spec\.clusterIPs\[0\]: Invalid value: \["fd00::1"\]: IPv6 is not configured on this cluster/,
    );
    assert.match(
      await rejection(
        claims.assign(svc({ ipFamilies: ['IPv4', 'IPv6'], ports: [{ port: 80 }] }), undefined, reader(), 0),
      ),
      /spec\.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services/,
    );
  });
});

describe('Service updates', () => {
  const update = (old: KObject, next: KObject) => {
    services.prepareForUpdate?.(next, old);
    services.defaults?.(next);
    return next.spec as Record<string, unknown>;
  };
  const allocated = (spec: Record<string, unknown>): KObject => ({
    ...svc(spec),
    spec: {
      ...(svc(spec).spec as Record<string, unknown>),
      clusterIP: '10.96.0.20',
      clusterIPs: ['10.96.0.20'],
      ipFamilies: ['IPv4'],
      ipFamilyPolicy: 'SingleStack',
    },
  });

  it('a replace without the allocated values keeps them', () => {
    const old = allocated({ type: 'NodePort', ports: [{ name: 'http', port: 80, nodePort: 30080 }] });
    const spec = update(old, svc({ type: 'NodePort', ports: [{ name: 'http', port: 80 }] }));
    assert.equal(spec.clusterIP, '10.96.0.20');
    assert.deepEqual(spec.clusterIPs, ['10.96.0.20']);
    assert.equal((spec.ports as { nodePort: number }[])[0].nodePort, 30080);
  });

  it('NodePort to ClusterIP drops the node ports and the external traffic policy', () => {
    const old = allocated({ type: 'NodePort', ports: [{ port: 80, nodePort: 30080 }] });
    const next = structuredClone(old);
    (next.spec as Record<string, unknown>).type = 'ClusterIP';
    const spec = update(old, next);
    assert.equal((spec.ports as { nodePort?: number }[])[0].nodePort, undefined);
    assert.equal(spec.externalTrafficPolicy, undefined);
  });

  it('ClusterIP to ExternalName drops the address and the IP family fields', () => {
    const old = allocated({ ports: [{ port: 80 }] });
    const next = structuredClone(old);
    Object.assign(next.spec as object, { type: 'ExternalName', externalName: 'db.example.com' });
    const spec = update(old, next);
    for (const f of ['clusterIP', 'clusterIPs', 'ipFamilies', 'ipFamilyPolicy'])
      assert.equal(spec[f], undefined, f);
  });
});
