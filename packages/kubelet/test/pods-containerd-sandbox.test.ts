// A pod whose sandbox died under it, as after a reboot or a crash of the node's
// processes: every task of the pod is killed with SIGKILL, containerd marks the
// sandbox NotReady, and the kubelet removes the dead sandbox and runs the pod
// again in a new one (attempt + 1), restarting its containers per restartPolicy.
// And what a pod's containers see of the cluster's names: the resolv.conf
// containerd writes from the kubelet's DNS config, the kubelet's /etc/hosts and
// the Service variables.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type { Service } from 'kubernetes-types/core/v1.js';
import { POD_UID_LABEL } from '../src/pods/labels.js';
import { type Node, startNode } from './containerd-fixture.js';
import { containerState, makePod, waitStatus, waitUntil } from './helpers.js';

const run = promisify(execFile);
const SERVICES: Service[] = [
  {
    metadata: { namespace: 'default', name: 'kubernetes' },
    spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] },
  },
  {
    metadata: { namespace: 'default', name: 'web' },
    spec: { clusterIP: '10.96.7.7', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
  },
];
let node: Node;
before(async () => {
  node = await startNode({
    dns: {
      clusterDNS: ['10.96.0.10'],
      clusterDomain: 'cluster.local',
      host: { servers: ['192.0.2.53'], searches: ['lab.example'], options: [] },
    },
    services: { list: (ns) => SERVICES.filter((s) => s.metadata?.namespace === ns) },
  });
});
after(async () => {
  await node?.stop();
});

/** SIGKILLs the processes of the given sandbox and container ids, as a power cut would. */
async function killTasks(ids: string[]): Promise<void> {
  const { stdout } = await run('ctr', ['--address', node.containerd.socket, '-n', 'k8s.io', 'tasks', 'ls']);
  const pids = stdout
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter(([id]) => ids.includes(id ?? ''))
    .map(([, pid]) => Number(pid))
    .filter((pid) => pid > 0);
  assert.equal(pids.length, ids.length, `a running task for each of ${ids.join(', ')}:\n${stdout}`);
  for (const pid of pids) process.kill(pid, 'SIGKILL');
}

test('a dead sandbox is removed and the pod runs again in a new one, with restarted containers', async () => {
  const pod = makePod('phoenix', {
    containers: [{ name: 'sleeper', image: 'busybox:latest', command: ['sleep', '3600'] }],
  });
  const uid = pod.metadata?.uid ?? '';
  node.manager.upsert(pod);
  await waitStatus(node.sink, pod, 'Running', (s) => s.phase === 'Running', 60_000);
  const [sandbox] = await node.runtime.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: uid } });
  const [container] = await node.runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: uid } });
  assert.ok(sandbox && container);
  assert.equal(sandbox.metadata.attempt, 0);

  await killTasks([sandbox.id, container.id]);

  const after = await waitStatus(
    node.sink,
    pod,
    'Running again with a restarted container',
    (s) => s.phase === 'Running' && (containerState(s, 'sleeper')?.restartCount ?? 0) >= 1 && !!s.podIP,
    60_000,
  );
  assert.equal(containerState(after, 'sleeper')?.ready, true);
  await waitUntil(
    'the dead sandbox to be removed',
    async () => {
      const list = await node.runtime.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: uid } });
      return list.length === 1 && list[0]?.id !== sandbox.id;
    },
    30_000,
  );
  const [fresh] = await node.runtime.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: uid } });
  assert.equal(fresh?.state, 'SANDBOX_READY');
  assert.equal(fresh?.metadata.attempt, 1);
  const containers = await node.runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: uid } });
  assert.ok(
    containers.every((c) => c.podSandboxId === fresh?.id),
    'no container is left in the dead sandbox',
  );
  assert.ok(node.sink.reasons('default/phoenix').includes('SandboxChanged'));
});

test('restartPolicy Never: a pod whose sandbox died is not run again', async () => {
  const pod = makePod('once', {
    restartPolicy: 'Never',
    containers: [{ name: 'sleeper', image: 'busybox:latest', command: ['sleep', '3600'] }],
  });
  const uid = pod.metadata?.uid ?? '';
  node.manager.upsert(pod);
  await waitStatus(node.sink, pod, 'Running', (s) => s.phase === 'Running', 60_000);
  const [sandbox] = await node.runtime.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: uid } });
  const [container] = await node.runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: uid } });
  assert.ok(sandbox && container);
  await killTasks([sandbox.id, container.id]);
  const s = await waitStatus(node.sink, pod, 'Failed', (st) => st.phase === 'Failed', 60_000);
  assert.equal(containerState(s, 'sleeper')?.restartCount, 0);
  const containers = await node.runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: uid } });
  assert.equal(containers.length, 1, 'nothing was started again');
});

test("a pod's containers see cluster DNS in resolv.conf, their FQDN in /etc/hosts and the Service variables", async () => {
  const pod = makePod('names', {
    hostname: 'db-0',
    subdomain: 'db',
    containers: [
      {
        name: 'c',
        image: 'busybox:latest',
        command: ['sh', '-c', 'cat /etc/resolv.conf; echo ---; cat /etc/hosts; echo ---; env; sleep 3600'],
      },
    ],
  });
  node.manager.upsert(pod);
  const s = await waitStatus(node.sink, pod, 'Running', (st) => st.phase === 'Running', 60_000);
  let lines: string[] = [];
  await waitUntil('the container printed its files', async () => {
    lines = await node.logLines(pod, 'c').catch(() => []);
    return lines.filter((l) => l === '---').length === 2 && lines.some((l) => l.startsWith('WEB_'));
  });
  const [resolv, hosts, env] = lines.join('\n').split('\n---\n');
  assert.match(resolv, /^nameserver 10\.96\.0\.10$/m);
  assert.match(
    resolv,
    /^search default\.svc\.cluster\.local svc\.cluster\.local cluster\.local lab\.example$/m,
  );
  assert.match(resolv, /^options ndots:5$/m);
  assert.doesNotMatch(resolv, /192\.0\.2\.53/);
  assert.match(hosts, /^# Kubernetes-managed hosts file\.$/m);
  assert.match(
    hosts,
    new RegExp(`^${s.podIP?.replace(/\./g, '\\.')}\tdb-0.db.default.svc.cluster.local\tdb-0$`, 'm'),
  );
  assert.match(env, /^WEB_SERVICE_HOST=10\.96\.7\.7$/m);
  assert.match(env, /^WEB_SERVICE_PORT_HTTP=80$/m);
  assert.match(env, /^KUBERNETES_SERVICE_HOST=10\.96\.0\.1$/m);
  assert.match(env, /^KUBERNETES_PORT_443_TCP=tcp:\/\/10\.96\.0\.1:443$/m);
});
