// The `kubernetes` Service in `default` and its Endpoints and EndpointSlice, which
// point at every live apiserver, kept as Kubernetes' lease endpoint reconciler keeps
// them (pkg/controlplane/reconcilers/lease.go): each apiserver holds a key under
// /registry/masterleases/ bound to an etcd lease it keeps alive, and every apiserver
// writes the union of the live keys into the Endpoints and the EndpointSlice. An
// apiserver that dies stops renewing; its key expires and it drops out.
//
// The Endpoints and the EndpointSlice are written straight to the store, not through
// the REST path: an apiserver on loopback (every test) has an address that validation
// refuses to a user's endpoints. In steady state nothing is written at all: the lease
// is renewed by keep-alives (no revision), and objects are rewritten only when they
// differ from what the live leases say.
import { randomUUID } from 'node:crypto';
import { isStatusError, SERVICE_NAME_LABEL } from '@kubit/api';
import type { Logger } from '@kubit/daemon';
import type { Lease } from 'etcd3';
import { type KindDef, meta, obj, str } from '../kinds/types.js';
import { nowRfc3339, sameJson } from '../objects.js';
import type { Rest } from '../rest.js';
import type { KObject, Store } from '../storage.js';

export const KUBERNETES_SERVICE = 'kubernetes';
export const MASTER_LEASES_PREFIX = '/registry/masterleases/';
/** Kubernetes' label on the `kubernetes` Endpoints: the mirroring controller leaves them alone. */
export const SKIP_MIRROR_LABEL = 'endpointslice.kubernetes.io/skip-mirror';
/** Seconds an apiserver's lease lives without a keep-alive (Kubernetes' --endpoint-reconciler lease TTL). */
const LEASE_TTL_SECONDS = 15;
/** How often the objects are checked: a deleted one is back within this. */
const DEFAULT_INTERVAL_MS = 3000;

export interface ApiServerEndpointsOptions {
  store: Store;
  rest: Rest;
  services: KindDef;
  log: Logger;
  /** --advertise-address and --secure-port. */
  ip: string;
  port: number;
  /** The first address of the service range. */
  serviceIP: string;
  intervalMs?: number;
}

interface LiveApiServer {
  ip: string;
  port: number;
}

const NS = 'default';
const serviceKey = `/registry/services/${NS}/${KUBERNETES_SERVICE}`;
const endpointsKey = `/registry/endpoints/${NS}/${KUBERNETES_SERVICE}`;
const sliceKey = `/registry/endpointslices/${NS}/${KUBERNETES_SERVICE}`;

export class ApiServerEndpoints {
  private lease: Lease | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly leaseKey: string;

  constructor(private readonly o: ApiServerEndpointsOptions) {
    this.leaseKey = `${MASTER_LEASES_PREFIX}${o.ip}:${o.port}`;
  }

  /** Reconciles now, then every interval. */
  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.running = this.reconcile()
        .catch((err: unknown) =>
          this.o.log.warn(
            { err: (err as Error).message },
            'kubernetes service endpoints: reconcile failed; retrying',
          ),
        )
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.timer = setTimeout(tick, this.o.intervalMs ?? DEFAULT_INTERVAL_MS);
        });
    };
    tick();
  }

  /** Stops renewing, gives the lease back and takes this apiserver out of the endpoints. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    const lease = this.lease;
    this.lease = undefined;
    if (!lease) return;
    try {
      await lease.revoke();
      await this.writeEndpoints(await this.liveApiServers());
    } catch (err) {
      this.o.log.warn(
        { err: (err as Error).message },
        'kubernetes service endpoints: could not remove this apiserver',
      );
    }
  }

  async reconcile(): Promise<void> {
    await this.renew();
    await this.ensureService();
    await this.writeEndpoints(await this.liveApiServers());
  }

  /** Holds this apiserver's lease key, granting a new lease when there is none or it was lost. */
  private async renew(): Promise<void> {
    if (this.lease && !this.lease.revoked()) {
      // A key deleted by hand comes back on the next tick; the lease itself stays.
      if (await this.o.store.rawGet(this.leaseKey)) return;
    } else {
      const lease = this.o.store.client.lease(LEASE_TTL_SECONDS);
      lease.on('lost', (err) => {
        this.o.log.warn({ err: err.message }, 'kubernetes service endpoints: lease lost; granting a new one');
        if (this.lease === lease) this.lease = undefined;
      });
      await lease.grant();
      this.lease = lease;
    }
    await this.lease.put(this.leaseKey).value(JSON.stringify({ ip: this.o.ip, port: this.o.port }));
  }

  private async liveApiServers(): Promise<LiveApiServer[]> {
    const { entries } = await this.o.store.rawRange(MASTER_LEASES_PREFIX);
    const out: LiveApiServer[] = [];
    for (const e of entries) {
      try {
        const v = JSON.parse(e.value) as Partial<LiveApiServer>;
        if (typeof v.ip === 'string' && typeof v.port === 'number') out.push({ ip: v.ip, port: v.port });
      } catch {
        this.o.log.warn({ key: e.key }, 'kubernetes service endpoints: ignoring an unreadable lease');
      }
    }
    return out;
  }

  /** Creates the Service when it is missing, through the REST path (so its cluster IP is claimed). */
  private async ensureService(): Promise<void> {
    if (this.o.rest.cachedObject(this.o.services, serviceKey) || (await this.o.store.get(serviceKey))) return;
    const svc = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: KUBERNETES_SERVICE, labels: { component: 'apiserver', provider: 'kubernetes' } },
      spec: {
        type: 'ClusterIP',
        clusterIP: this.o.serviceIP,
        ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: this.o.port }],
        sessionAffinity: 'None',
      },
    };
    try {
      await this.o.rest.create(
        this.o.services,
        {
          kind: 'resource',
          verb: 'create',
          group: '',
          version: 'v1',
          resource: 'services',
          subresource: '',
          namespace: NS,
          name: '',
          path: `/api/v1/namespaces/${NS}/services`,
        },
        {
          user: { name: 'system:apiserver', groups: ['system:masters'] },
          query: {},
          body: Buffer.from(JSON.stringify(svc)),
          contentType: 'application/json',
          warnings: [],
        },
      );
      this.o.log.info({ clusterIP: this.o.serviceIP }, 'created the kubernetes service');
    } catch (err) {
      // Another apiserver made it first.
      if (isStatusError(err, 'AlreadyExists')) return;
      throw err;
    }
  }

  private async writeEndpoints(live: LiveApiServer[]): Promise<void> {
    // Subsets by port (every apiserver of a cluster normally shares one), addresses sorted.
    const byPort = new Map<number, string[]>();
    for (const a of live) byPort.set(a.port, [...(byPort.get(a.port) ?? []), a.ip]);
    const ports = [...byPort.keys()].sort((a, b) => a - b);
    const sorted = (port: number) => [...new Set(byPort.get(port))].sort();
    const subsets = ports.map((port) => ({
      addresses: sorted(port).map((ip) => ({ ip })),
      ports: [{ name: 'https', port, protocol: 'TCP' }],
    }));
    await this.put(endpointsKey, 'v1', 'Endpoints', { [SKIP_MIRROR_LABEL]: 'true' }, { subsets });
    const first = ports[0];
    await this.put(
      sliceKey,
      'discovery.k8s.io/v1',
      'EndpointSlice',
      { [SERVICE_NAME_LABEL]: KUBERNETES_SERVICE },
      {
        addressType: 'IPv4',
        endpoints:
          first === undefined
            ? []
            : sorted(first).map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
        ports: first === undefined ? [] : [{ name: 'https', port: first, protocol: 'TCP' }],
      },
    );
  }

  /** Writes the object when it is missing or says something else (guarded on the read revision). */
  private async put(
    key: string,
    apiVersion: string,
    kind: string,
    labels: Record<string, string>,
    body: Record<string, unknown>,
  ): Promise<void> {
    const cur = await this.o.store.get(key);
    const was = cur?.obj;
    const wasLabels = obj(was?.metadata?.labels);
    if (
      was &&
      Object.entries(labels).every(([k, v]) => wasLabels[k] === v) &&
      Object.keys(body).every((k) => sameJson(was[k] ?? (Array.isArray(body[k]) ? [] : undefined), body[k]))
    ) {
      return;
    }
    const m = was ? meta(was) : {};
    const next: KObject = {
      ...(was ?? {}),
      apiVersion,
      kind,
      metadata: {
        ...m,
        name: KUBERNETES_SERVICE,
        namespace: NS,
        uid: str(m.uid) || randomUUID(),
        creationTimestamp: str(m.creationTimestamp) || nowRfc3339(),
        labels: { ...wasLabels, ...labels },
      },
      ...body,
    };
    if (next.metadata) delete next.metadata.resourceVersion;
    const r = cur ? await this.o.store.update(key, next, cur.rev) : await this.o.store.create(key, next);
    // A lost race is another apiserver's write of the same union: the next tick checks again.
    if (r.ok) this.o.log.info({ key }, 'kubernetes service endpoints updated');
  }
}
