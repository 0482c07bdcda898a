// What a test of the real kubit-kubelet process stands on: a control plane that
// knows the node, a local registry holding the test images, a private
// containerd pulling through it, a CRI client on that containerd, a client of
// the apiserver and a scratch directory. The kubelet itself is the test's to
// start (startTestKubelet), with the flags it is about.
import { KubeClient } from '@kubit/client';
import { CriRuntime } from '@kubit/cri';
import {
  type ControlPlane,
  pushTestImages,
  startContainerd,
  startControlPlane,
  startRegistry,
  type TestContainerd,
  type TestRegistry,
  tempDir,
} from '@kubit/testkit';

export interface NodeStack {
  cp: ControlPlane;
  registry: TestRegistry;
  containerd: TestContainerd;
  runtime: CriRuntime;
  client: KubeClient;
  root: { path: string; cleanup: () => Promise<void> };
  /** Stops everything it started (the kubelet is the caller's to stop first). */
  stop(): Promise<void>;
}

export async function startNodeStack(node: string, dirPrefix: string): Promise<NodeStack> {
  const parts: Partial<NodeStack> = {};
  const stop = async () => {
    parts.client?.close();
    parts.runtime?.close();
    await parts.containerd?.stop();
    await parts.registry?.stop();
    await parts.cp?.stop();
    await parts.root?.cleanup();
  };
  try {
    // The registry first (containerd mirrors it); then the rest side by side,
    // each kept as it comes up so a failure still stops the others.
    parts.registry = await startRegistry();
    const host = parts.registry.host;
    const started = await Promise.allSettled([
      startControlPlane({ nodes: [node] }).then((c) => {
        parts.cp = c;
      }),
      pushTestImages(host),
      startContainerd({ mirror: host }).then((c) => {
        parts.containerd = c;
      }),
      tempDir(dirPrefix).then((r) => {
        parts.root = r;
      }),
    ]);
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    const { cp, registry, containerd, root } = parts as Required<typeof parts>;
    parts.runtime = new CriRuntime({ endpoint: containerd.endpoint });
    parts.client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
    return { cp, registry, containerd, root, runtime: parts.runtime, client: parts.client, stop };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
}
