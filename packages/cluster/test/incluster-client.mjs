// Run inside a pod's network namespace with the pod's ServiceAccount files at
// /var/run/secrets/kubernetes.io/serviceaccount and its KUBERNETES_SERVICE_*
// variables (up-down.test.ts sets both up): @kubernetes/client-node's
// in-cluster configuration, as a controller in a pod would use it, lists the
// pods of the pod's namespace and prints what it saw as one JSON line.
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';

const kc = new KubeConfig();
kc.loadFromCluster();
const namespace = (await import('node:fs')).readFileSync(
  '/var/run/secrets/kubernetes.io/serviceaccount/namespace',
  'utf8',
);
const pods = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace });
process.stdout.write(
  `${JSON.stringify({ server: kc.getCurrentCluster()?.server, pods: pods.items.map((p) => p.metadata?.name) })}\n`,
);
