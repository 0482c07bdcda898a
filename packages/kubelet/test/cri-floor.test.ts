// The floor: a real containerd pulls nginx through the docker.io mirror from a
// local registry and runs it in a sandbox whose CNI IP answers HTTP 200 on port 80,
// driven straight through the kubelet's CRI adapter.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { PodSandboxConfig } from '@kubit/cri';
import { CriRuntime } from '@kubit/cri';
import {
  NGINX_IMAGE,
  pushTestImages,
  startContainerd,
  startRegistry,
  type TestContainerd,
  type TestRegistry,
  tempDir,
  waitFor,
} from '@kubit/testkit';

let registry: TestRegistry;
let containerd: TestContainerd;
let runtime: CriRuntime;
let logs: { path: string; cleanup: () => Promise<void> };

before(async () => {
  registry = await startRegistry();
  await pushTestImages(registry.host);
  containerd = await startContainerd({ mirror: registry.host });
  runtime = new CriRuntime({ endpoint: containerd.endpoint });
  logs = await tempDir('kubit-floor-logs-');
});

after(async () => {
  runtime?.close();
  await containerd?.stop();
  await registry?.stop();
  await logs?.cleanup();
});

test('the runtime answers Version and Status', async () => {
  const v = await runtime.version();
  assert.equal(v.runtimeName, 'containerd');
  assert.equal(v.runtimeApiVersion, 'v1');
  const conditions = await runtime.status();
  assert.ok(conditions.find((c) => c.type === 'RuntimeReady')?.status);
});

test('nginx pulled through the mirror answers HTTP 200 on its pod IP', async () => {
  assert.equal(await runtime.imageStatus(NGINX_IMAGE), undefined);
  const ref = await runtime.pullImage('nginx:latest');
  assert.match(ref, /^sha256:/);
  const img = await runtime.imageStatus('nginx:latest');
  assert.ok(img?.repoTags.includes(NGINX_IMAGE), `repoTags: ${img?.repoTags}`);

  const sandboxConfig: PodSandboxConfig = {
    metadata: { name: 'floor', uid: 'uid-floor', namespace: 'default', attempt: 0 },
    hostname: 'floor',
    logDirectory: logs.path,
    portMappings: [],
    labels: { 'io.kubernetes.pod.name': 'floor' },
    annotations: {},
    linux: { securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
  };
  const sandboxId = await runtime.runPodSandbox(sandboxConfig);
  const sb = await runtime.podSandboxStatus(sandboxId);
  assert.equal(sb.state, 'SANDBOX_READY');
  const prefix = containerd.podCidr.replace(/0\/24$/, '');
  assert.ok(sb.network.ip.startsWith(prefix), `pod IP ${sb.network.ip} is not in ${containerd.podCidr}`);

  const containerId = await runtime.createContainer(
    sandboxId,
    {
      metadata: { name: 'nginx', attempt: 0 },
      image: { image: ref },
      command: [],
      args: [],
      workingDir: '',
      envs: [],
      mounts: [],
      labels: { 'io.kubernetes.container.name': 'nginx' },
      annotations: {},
      logPath: 'nginx/0.log',
      linux: {
        resources: { cpuShares: 256, cpuPeriod: 100_000, cpuQuota: 50_000, memoryLimitInBytes: 64 << 20 },
      },
    },
    sandboxConfig,
  );
  await runtime.startContainer(containerId);
  const body = await waitFor(
    'nginx to answer on the pod IP',
    async () => {
      const res = await fetch(`http://${sb.network.ip}/`);
      return res.status === 200 ? await res.text() : undefined;
    },
    20_000,
    200,
  );
  assert.match(body, /Welcome to nginx/);

  const status = await runtime.containerStatus(containerId);
  assert.equal(status.state, 'CONTAINER_RUNNING');
  const listed = await runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'nginx' } });
  assert.deepEqual(
    listed.map((c) => c.id),
    [containerId],
  );

  const exec = await runtime.execSync(containerId, ['/usr/sbin/nginx', '-v'], 10);
  assert.equal(exec.exitCode, 0);

  await runtime.stopContainer(containerId, 5);
  const stopped = await runtime.containerStatus(containerId);
  assert.equal(stopped.state, 'CONTAINER_EXITED');
  await runtime.removeContainer(containerId);
  await runtime.stopPodSandbox(sandboxId);
  await runtime.removePodSandbox(sandboxId);
  assert.deepEqual(await runtime.listPodSandbox(), []);
});
