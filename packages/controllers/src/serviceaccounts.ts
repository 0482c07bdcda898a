// Two controllers every namespace needs for in-cluster API access, as Kubernetes
// has them: the serviceaccount controller keeps a `default` ServiceAccount in
// every active namespace (pods run as it unless they name another), and the
// root CA publisher keeps the `kube-root-ca.crt` ConfigMap, whose ca.crt the
// kube-api-access volume projects so pods can verify the apiserver.
import { isAlreadyExists, isConflict, isNotFound } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import type { Cluster } from './cluster.js';
import type { Controller } from './controller.js';
import type { ConfigMap, KubeObject, Namespace, ServiceAccount } from './types.js';

const DEFAULT_ACCOUNT = 'default';
export const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';
const ROOT_CA_DESCRIPTION =
  'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.';

/** Namespaces that are there to hold things: not being deleted. */
function active(ns: Namespace | undefined): boolean {
  return !!ns && !ns.metadata?.deletionTimestamp && ns.status?.phase !== 'Terminating';
}

/** Each controller's work is one namespace: its informers map an object to its namespace. */
abstract class PerNamespace<T extends KubeObject> implements Controller {
  abstract readonly name: string;
  readonly queue = new RateLimitingQueue<string>();
  protected readonly namespaces: Informer<Namespace>;
  protected readonly objects: Informer<T>;

  constructor(
    protected readonly cluster: Cluster,
    informers: SharedInformerFactory,
    resource: typeof resources.serviceaccounts,
    /** The one object name per namespace this controller keeps. */
    protected readonly objectName: string,
  ) {
    this.namespaces = informers.forResource<Namespace>(resources.namespaces);
    this.objects = informers.forResource<T>(resource);
    const enqueueNs = (ns: Namespace) => this.queue.add(ns.metadata?.name ?? '');
    this.namespaces.addEventHandler({ onAdd: enqueueNs, onUpdate: (_o, n) => enqueueNs(n) });
    const enqueueOwn = (o: T) => {
      if (o.metadata?.name === objectName) this.queue.add(o.metadata?.namespace ?? '');
    };
    this.objects.addEventHandler({ onUpdate: (_o, n) => enqueueOwn(n), onDelete: enqueueOwn });
  }

  protected current(ns: string): T | undefined {
    return this.objects.store.getByKey(`${ns}/${this.objectName}`);
  }

  async reconcile(ns: string): Promise<void> {
    if (!active(this.namespaces.store.getByKey(ns))) return;
    try {
      await this.ensure(ns);
    } catch (err) {
      // Created meanwhile (another worker, a restart), or the namespace is going away: nothing to do.
      if (isAlreadyExists(err) || isConflict(err) || isNotFound(err)) return;
      throw err;
    }
  }

  protected abstract ensure(ns: string): Promise<void>;
}

export class ServiceAccountsController extends PerNamespace<ServiceAccount> {
  readonly name = 'serviceaccount';

  constructor(cluster: Cluster, informers: SharedInformerFactory) {
    super(cluster, informers, resources.serviceaccounts, DEFAULT_ACCOUNT);
  }

  protected async ensure(ns: string): Promise<void> {
    if (this.current(ns)) return;
    await this.cluster.create<ServiceAccount>(resources.serviceaccounts, ns, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: DEFAULT_ACCOUNT, namespace: ns },
    });
  }
}

export class RootCAPublisher extends PerNamespace<ConfigMap> {
  readonly name = 'root-ca-cert-publisher';

  constructor(
    cluster: Cluster,
    informers: SharedInformerFactory,
    private readonly rootCA: string,
    private readonly log?: Logger,
  ) {
    super(cluster, informers, resources.configmaps, ROOT_CA_CONFIGMAP);
  }

  protected async ensure(ns: string): Promise<void> {
    const cm = this.current(ns);
    const annotations = { 'kubernetes.io/description': ROOT_CA_DESCRIPTION };
    if (!cm) {
      await this.cluster.create<ConfigMap>(resources.configmaps, ns, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: ROOT_CA_CONFIGMAP, namespace: ns, annotations },
        data: { 'ca.crt': this.rootCA },
      });
      return;
    }
    const data = cm.data ?? {};
    if (data['ca.crt'] === this.rootCA && Object.keys(data).length === 1) return;
    this.log?.info({ namespace: ns }, `${ROOT_CA_CONFIGMAP} differs from the root CA; writing it back`);
    await this.cluster.update<ConfigMap>(resources.configmaps, {
      ...cm,
      metadata: { ...cm.metadata, annotations: { ...cm.metadata?.annotations, ...annotations } },
      data: { 'ca.crt': this.rootCA },
    });
  }
}
