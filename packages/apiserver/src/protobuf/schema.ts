// Loads Kubit's Kubernetes protobuf schema (packages/apiserver/proto/*.proto)
// with protobufjs, once, and says which message a body's apiVersion and kind
// name. The files are read beside the code rather than compiled in, so src/
// (tests through tsx), dist/src/ and the esbuild bundle all find the same ones.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/** The directory holding the .proto files: up from this module (src/protobuf, dist/src/protobuf or dist/src for the bundle). */
function protoDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, 'k8s-core.proto'))) return candidate;
    dir = dirname(dir);
  }
  throw new Error('cannot find the proto/ directory (k8s-core.proto) above the apiserver code');
}

function loadRoot(): protobuf.Root {
  const dir = protoDir();
  const root = new protobuf.Root();
  // Every file of the directory, parsed from its text: imports between them
  // then resolve by package name, and protobufjs needs no file loader.
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.proto'))) {
    protobuf.parse(readFileSync(join(dir, file), 'utf8'), root, { keepCase: true });
  }
  root.resolveAll();
  return root;
}

let cached: protobuf.Root | undefined;
/** The schema, parsed on first use (the apiserver asks for it at start, so a broken file fails there). */
export function schema(): protobuf.Root {
  cached ??= loadRoot();
  return cached;
}

export const ENVELOPE = 'k8s.io.apimachinery.pkg.runtime.Unknown';
const DELETE_OPTIONS = 'k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions';

/** apiVersion/kind → message: the kinds kubectl's typed clients send as protobuf. */
const KINDS: Record<string, string> = {
  'v1/Pod': 'k8s.io.api.core.v1.Pod',
  'v1/Namespace': 'k8s.io.api.core.v1.Namespace',
  'v1/ConfigMap': 'k8s.io.api.core.v1.ConfigMap',
  'v1/ResourceQuota': 'k8s.io.api.core.v1.ResourceQuota',
  'v1/Secret': 'k8s.io.api.core.v1.Secret',
  'v1/ServiceAccount': 'k8s.io.api.core.v1.ServiceAccount',
  'v1/Event': 'k8s.io.api.core.v1.Event',
  'v1/Binding': 'k8s.io.api.core.v1.Binding',
  'v1/Service': 'k8s.io.api.core.v1.Service',
  'v1/Endpoints': 'k8s.io.api.core.v1.Endpoints',
  'discovery.k8s.io/v1/EndpointSlice': 'k8s.io.api.discovery.v1.EndpointSlice',
  'apps/v1/Deployment': 'k8s.io.api.apps.v1.Deployment',
  'apps/v1/ReplicaSet': 'k8s.io.api.apps.v1.ReplicaSet',
  'batch/v1/Job': 'k8s.io.api.batch.v1.Job',
  'batch/v1/CronJob': 'k8s.io.api.batch.v1.CronJob',
  'autoscaling/v1/HorizontalPodAutoscaler': 'k8s.io.api.autoscaling.v1.HorizontalPodAutoscaler',
  'rbac.authorization.k8s.io/v1/Role': 'k8s.io.api.rbac.v1.Role',
  'rbac.authorization.k8s.io/v1/ClusterRole': 'k8s.io.api.rbac.v1.ClusterRole',
  'rbac.authorization.k8s.io/v1/RoleBinding': 'k8s.io.api.rbac.v1.RoleBinding',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': 'k8s.io.api.rbac.v1.ClusterRoleBinding',
  'events.k8s.io/v1/Event': 'k8s.io.api.events.v1.Event',
  'policy/v1/Eviction': 'k8s.io.api.policy.v1.Eviction',
  'policy/v1/PodDisruptionBudget': 'k8s.io.api.policy.v1.PodDisruptionBudget',
  'coordination.k8s.io/v1/Lease': 'k8s.io.api.coordination.v1.Lease',
  'scheduling.k8s.io/v1/PriorityClass': 'k8s.io.api.scheduling.v1.PriorityClass',
  'authorization.k8s.io/v1/SelfSubjectAccessReview': 'k8s.io.api.authorization.v1.SelfSubjectAccessReview',
  'authorization.k8s.io/v1/SubjectAccessReview': 'k8s.io.api.authorization.v1.SubjectAccessReview',
  'authorization.k8s.io/v1/SelfSubjectRulesReview': 'k8s.io.api.authorization.v1.SelfSubjectRulesReview',
  'authentication.k8s.io/v1/TokenRequest': 'k8s.io.api.authentication.v1.TokenRequest',
  'authentication.k8s.io/v1/TokenReview': 'k8s.io.api.authentication.v1.TokenReview',
  'authentication.k8s.io/v1/SelfSubjectReview': 'k8s.io.api.authentication.v1.SelfSubjectReview',
};

/** Every apiVersion/kind the decoder accepts (DeleteOptions aside), for tests and messages. */
export const PROTOBUF_KINDS: readonly string[] = Object.keys(KINDS);

/**
 * The message for a body's type meta. A body without an apiVersion (not
 * something Go clients send) is looked up by kind alone, its core or first
 * group. DeleteOptions come under whatever group version the client talks to.
 */
export function messageFor(apiVersion: string, kind: string): string | undefined {
  if (kind === 'DeleteOptions') return DELETE_OPTIONS;
  if (apiVersion) return KINDS[`${apiVersion}/${kind}`];
  return Object.entries(KINDS).find(([key]) => key.endsWith(`/${kind}`))?.[1];
}
