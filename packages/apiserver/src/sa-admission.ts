// The ServiceAccount admission plugin, as Kubernetes' (plugin/pkg/admission/serviceaccount):
// a new pod runs as its namespace's `default` ServiceAccount unless it names one,
// that ServiceAccount must exist, and unless automountServiceAccountToken is false
// (on the pod, else on the ServiceAccount) every container gets the projected
// `kube-api-access-<random>` volume at /var/run/secrets/kubernetes.io/serviceaccount:
// a token the kubelet asks TokenRequest for, the cluster CA (kube-root-ca.crt) and
// the namespace. On only when the apiserver signs tokens.
import { randomInt } from 'node:crypto';
import { forbiddenWithMessage } from '@kubit/api';
import { arr, obj, str } from './kinds/types.js';
import type { KObject, Store } from './storage.js';
import type { WatchCache } from './watchcache.js';

export const SERVICE_ACCOUNT_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
export const ROOT_CA_CONFIGMAP = 'kube-root-ca.crt';
/** Kubernetes asks for 3607 s: an hour and a few seconds, so the kubelet refreshes before an hour. */
const TOKEN_EXPIRATION_SECONDS = 3607;
const ALNUM = 'bcdfghjklmnpqrstvwxz2456789';

function randomSuffix(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += ALNUM[randomInt(ALNUM.length)];
  return s;
}

export function kubeApiAccessVolume(name: string): Record<string, unknown> {
  return {
    name,
    projected: {
      defaultMode: 420,
      sources: [
        { serviceAccountToken: { expirationSeconds: TOKEN_EXPIRATION_SECONDS, path: 'token' } },
        { configMap: { name: ROOT_CA_CONFIGMAP, items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        {
          downwardAPI: {
            items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
          },
        },
      ],
    },
  };
}

export class ServiceAccountAdmission {
  constructor(
    private readonly serviceAccounts: WatchCache,
    private readonly store: Store,
  ) {}

  /** Mutates and checks a pod about to be created; throws Kubernetes' 403 when its ServiceAccount is missing. */
  async admitPod(pod: KObject, namespace: string): Promise<void> {
    const spec = obj(pod.spec);
    pod.spec = spec;
    const name = str(spec.serviceAccountName) || str(spec.serviceAccount) || 'default';
    spec.serviceAccountName = name;
    spec.serviceAccount = name;
    const key = `/registry/serviceaccounts/${namespace}/${name}`;
    // The cache may lag a ServiceAccount created a moment ago: ask the store before saying no.
    const sa = this.serviceAccounts.objects.get(key) ?? (await this.store.get(key))?.obj;
    if (!sa) {
      throw forbiddenWithMessage(
        { group: '', resource: 'pods' },
        str(pod.metadata?.name),
        `error looking up service account ${namespace}/${name}: serviceaccount "${name}" not found`,
      );
    }
    if (!arr(spec.imagePullSecrets).length && arr(sa.imagePullSecrets).length) {
      spec.imagePullSecrets = structuredClone(sa.imagePullSecrets);
    }
    const automount =
      typeof spec.automountServiceAccountToken === 'boolean'
        ? spec.automountServiceAccountToken
        : typeof sa.automountServiceAccountToken === 'boolean'
          ? sa.automountServiceAccountToken
          : true;
    if (!automount) return;
    const containers = [...arr(spec.initContainers), ...arr(spec.containers)].map(obj);
    const mounts = (c: Record<string, unknown>) => arr(c.volumeMounts).map(obj);
    // A pod that mounts something at the path itself keeps it, as Kubernetes leaves it.
    if (containers.some((c) => mounts(c).some((m) => m.mountPath === SERVICE_ACCOUNT_MOUNT_PATH))) return;
    const volumeName = `kube-api-access-${randomSuffix()}`;
    spec.volumes = [...arr(spec.volumes), kubeApiAccessVolume(volumeName)];
    for (const c of containers) {
      c.volumeMounts = [
        ...mounts(c),
        { name: volumeName, readOnly: true, mountPath: SERVICE_ACCOUNT_MOUNT_PATH },
      ];
    }
  }
}
