// kubit-test: serial
// Resource metrics and autoscaling on real parts: etcd and kubit-apiserver scraping
// kubelets every 2 s (--metric-resolution), kubit-scheduler, kubit-controller-manager
// (deployment, replicaset and the HPA controller synced every 2 s) and a kubit-kubelet on
// a real containerd. A Deployment's busybox pods burn CPU (throttled by their 200m limit)
// for BURN_SECONDS after they start, then sleep. The real kubectl's `top nodes` and
// `top pods --containers` show the burn; an autoscaling/v2 HPA at 50% of the 100m request
// scales the Deployment from 1 to 3, and once the burn ends back to 1 after its 10 s
// scale-down window; a node whose kubelet does not answer is left out of the metrics
// lists and its NodeMetrics answers 503.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type { Event as CoreEvent, Deployment, HorizontalPodAutoscaler, Node } from '@kubit/api';
import { StatusError } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { unmountUnder } from '@kubit/cri/node-teardown';
import {
  type ControlPlane,
  freePort,
  pushTestImages,
  startContainerd,
  startControlPlane,
  startRegistry,
  startTestKubelet,
  type TestContainerd,
  type TestProcess,
  type TestRegistry,
  tempDir,
  waitFor,
} from '@kubit/testkit';
import { hpaResource } from '../src/hpa/api.js';
import { startSchedulerAndControllers, w } from './cm-process.js';

const NODE = 'node-a';
const NS = 'default';
const BURN_SECONDS = 70;

let cp: ControlPlane | undefined;
let registry: TestRegistry | undefined;
let containerd: TestContainerd | undefined;
let kubelet: TestProcess | undefined;
let root: { path: string; cleanup: () => Promise<void> } | undefined;
let client: KubeClient | undefined;
const daemons: TestProcess[] = [];

async function kubectl(
  args: string[],
  allowFail = false,
  input?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const full = [
    '--kubeconfig',
    cp?.kubeconfigPath ?? '',
    '--cache-dir',
    join(root?.path ?? '', 'kubectl-cache'),
    ...args,
  ];
  try {
    if (input !== undefined) {
      const file = join(root?.path ?? '', `input-${Date.now()}.yaml`);
      await writeFile(file, input);
      full.push('-f', file);
    }
    const r = await promisify(execFile)('kubectl', full, { timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    const res = {
      code: typeof e.code === 'number' ? e.code : 1,
      stdout: e.stdout ?? '',
      stderr: e.stderr ?? '',
    };
    if (!allowFail) throw new Error(`kubectl ${args.join(' ')} failed (${res.code}): ${res.stderr}`);
    return res;
  }
}

/** Parses kubectl's table output into rows of cells. */
const rows = (out: string) =>
  out
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s{2,}/));

/** A kubectl CPU cell ("199m", "1") in millicores. */
const milli = (cell: string) => (cell.endsWith('m') ? Number(cell.slice(0, -1)) : Number(cell) * 1000);

before(async () => {
  root = await tempDir('kubit-hpa-stack-');
  const started = await Promise.allSettled([
    startControlPlane({ nodes: [NODE], apiserverArgs: ['--metric-resolution=2s'] }).then((c) => {
      cp = c;
    }),
    startRegistry().then((r) => {
      registry = r;
    }),
  ]);
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  const plane = cp!;
  await pushTestImages(registry!.host);
  containerd = await startContainerd({ mirror: registry!.host });
  ({ process: kubelet } = await startTestKubelet(plane, {
    node: NODE,
    containerd,
    dir: root.path,
    rootDir: join(root.path, NODE),
    logFile: join(root.path, `kubelet-${NODE}.log`),
    name: `kubelet-${NODE}`,
  }));
  daemons.push(
    ...(await startSchedulerAndControllers(
      plane,
      root?.path ?? '',
      ['deployment', 'replicaset', 'horizontalpodautoscaling'],
      ['--horizontal-pod-autoscaler-sync-period=2s'],
    )),
  );
  client = KubeClient.fromKubeconfig({ kubeconfig: plane.kubeconfigPath });
  await waitFor(
    `${NODE} Ready`,
    async () => {
      if (!kubelet?.running) throw new Error('the kubelet exited');
      const n = await client!.get<Node>(resources.nodes, NODE).catch(() => undefined);
      return n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    },
    180_000,
    250,
  );
});

after(async () => {
  for (const d of daemons.reverse()) await d.stop();
  await kubelet?.stop();
  client?.close();
  await containerd?.stop();
  if (root) await unmountUnder(root.path);
  await registry?.stop();
  await cp?.stop();
  await root?.cleanup();
});

/** Burns CPU (no forks: `read` is a shell builtin) until BURN_SECONDS after its start, then sleeps. */
const BURN = `read s _ < /proc/uptime; end=$((\${s%.*}+${BURN_SECONDS})); while :; do read n _ < /proc/uptime; [ \${n%.*} -ge $end ] && break; done; exec sleep 3600`;

const deploymentReplicas = async () =>
  (await client!.get<Deployment>(resources.deployments, 'burn', { namespace: NS })).spec?.replicas;

test('kubectl top nodes and top pods --containers show a pod burning CPU', { timeout: 240_000 }, async () => {
  await client!.create(
    resources.deployments,
    w<Deployment>({
      metadata: { name: 'burn', namespace: NS },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'burn' } },
        template: {
          metadata: { labels: { app: 'burn' } },
          spec: {
            terminationGracePeriodSeconds: 0,
            containers: [
              {
                name: 'burner',
                image: 'busybox:latest',
                command: ['sh', '-c', BURN],
                resources: { requests: { cpu: '100m', memory: '16Mi' }, limits: { cpu: '200m' } },
              },
            ],
          },
        },
      },
    }),
    { namespace: NS },
  );
  const burning = await waitFor(
    'the burning pod in kubectl top pods --containers',
    async () => {
      const r = await kubectl(['top', 'pods', '--containers', '-n', NS], true);
      if (r.code !== 0) return undefined;
      const row = rows(r.stdout).find((cells) => cells[0].startsWith('burn-') && cells[1] === 'burner');
      return row && milli(row[2]) >= 100 ? row : undefined;
    },
    150_000,
    1000,
  );
  // Throttled at its 200m limit: a CPU rate from two samples, not a cumulative counter.
  assert.ok(milli(burning[2]) <= 260, `burner uses ${burning[2]}`);
  assert.match(burning[3], /^\d+Mi$/);

  const all = await kubectl(['top', 'pods', '-A']);
  assert.deepEqual(rows(all.stdout)[0].slice(0, 2), ['NAMESPACE', 'NAME']);
  assert.ok(
    rows(all.stdout).some((cells) => cells[0] === NS && cells[1].startsWith('burn-')),
    all.stdout,
  );

  const nodes = await kubectl(['top', 'nodes']);
  const header = rows(nodes.stdout)[0];
  assert.deepEqual(header.slice(0, 3), ['NAME', 'CPU(cores)', 'CPU(%)']);
  const node = rows(nodes.stdout).find((cells) => cells[0] === NODE);
  assert.ok(node, nodes.stdout);
  assert.ok(milli(node[1]) >= 100, `the node uses at least the burner's CPU: ${nodes.stdout}`);

  // The metrics API itself: a label selector, a get, and the pod's one container.
  const list = await client!.request<{
    items: { metadata: { name: string }; containers: { name: string }[] }[];
  }>({
    method: 'GET',
    path: `/apis/metrics.k8s.io/v1beta1/namespaces/${NS}/pods`,
    query: { labelSelector: 'app=burn' },
  });
  assert.equal(list.items.length, 1);
  assert.deepEqual(
    list.items[0].containers.map((c) => c.name),
    ['burner'],
  );
  const none = await client!.request<{ items: unknown[] }>({
    method: 'GET',
    path: `/apis/metrics.k8s.io/v1beta1/namespaces/${NS}/pods`,
    query: { labelSelector: 'app=nothing' },
  });
  assert.equal(none.items.length, 0);
});

test('an HPA scales the burning Deployment from 1 to 3, then back to 1 after its scale-down window', {
  timeout: 420_000,
}, async () => {
  await client!.create(
    hpaResource,
    w({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'burn', namespace: NS },
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'burn' },
        minReplicas: 1,
        maxReplicas: 3,
        metrics: [
          {
            type: 'Resource',
            resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } },
          },
        ],
        behavior: { scaleDown: { stabilizationWindowSeconds: 10 } },
      },
    }),
    { namespace: NS },
  );
  await waitFor('the Deployment scaled to 3', async () => (await deploymentReplicas()) === 3, 120_000, 1000);
  const hpa = await client!.get<HorizontalPodAutoscaler>(hpaResource, 'burn', { namespace: NS });
  const cond = (t: string) => hpa.status?.conditions?.find((c) => c.type === t);
  assert.equal(cond('AbleToScale')?.status, 'True');
  assert.equal(cond('ScalingActive')?.reason, 'ValidMetricFound');
  const events = await client!.list<CoreEvent>(resources.events, {
    namespace: NS,
  });
  const rescale = events.items.find(
    (e) => e.reason === 'SuccessfulRescale' && e.involvedObject?.kind === 'HorizontalPodAutoscaler',
  );
  assert.ok(rescale, 'a SuccessfulRescale event');
  assert.match(
    rescale.message ?? '',
    /^New size: \d; reason: cpu resource utilization \(percentage of request\) above target$/,
  );

  const get = await kubectl(['get', 'hpa', 'burn', '-n', NS]);
  const [head, row] = rows(get.stdout);
  assert.deepEqual(head, ['NAME', 'REFERENCE', 'TARGETS', 'MINPODS', 'MAXPODS', 'REPLICAS', 'AGE']);
  assert.equal(row[1], 'Deployment/burn');
  assert.match(row[2], /^cpu: (\d+%|<unknown>)\/50%$/);
  assert.deepEqual(row.slice(3, 5), ['1', '3']);

  // Once every pod's burn is over, usage falls to about nothing and the window lets it down.
  await waitFor(
    'the Deployment back to 1',
    async () => (await deploymentReplicas()) === 1,
    (BURN_SECONDS + 120) * 1000,
    1000,
  );
  const after = await client!.get<HorizontalPodAutoscaler>(hpaResource, 'burn', {
    namespace: NS,
  });
  const limited = after.status?.conditions?.find((c) => c.type === 'ScalingLimited');
  assert.ok(limited, 'a ScalingLimited condition');
});

const WIDGETS = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.kubit.dev
spec:
  group: example.kubit.dev
  scope: Namespaced
  names: { plural: widgets, singular: widget, kind: Widget }
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: { specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector }
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: { type: object, properties: { replicas: { type: integer } } }
          status: { type: object, properties: { replicas: { type: integer }, selector: { type: string } } }
`;

test("an HPA holds a custom resource's scale subresource to its maxReplicas", {
  timeout: 120_000,
}, async () => {
  await kubectl(['apply'], false, WIDGETS);
  await waitFor(
    'widgets served',
    async () => (await kubectl(['get', 'widgets', '-n', NS], true)).code === 0,
    30_000,
    500,
  );
  await kubectl(
    ['apply'],
    false,
    'apiVersion: example.kubit.dev/v1\nkind: Widget\nmetadata: { name: gadget, namespace: default }\nspec: { replicas: 5 }\n',
  );
  await client!.create(
    hpaResource,
    w({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'gadget', namespace: NS },
      spec: {
        scaleTargetRef: { apiVersion: 'example.kubit.dev/v1', kind: 'Widget', name: 'gadget' },
        minReplicas: 1,
        maxReplicas: 2,
      },
    }),
    { namespace: NS },
  );
  await waitFor(
    'the Widget scaled to 2 through its scale subresource',
    async () =>
      (await kubectl(['get', 'widget', 'gadget', '-n', NS, '-o', 'jsonpath={.spec.replicas}'])).stdout ===
      '2',
    60_000,
    1000,
  );
  const events = await client!.list<CoreEvent>(resources.events, { namespace: NS });
  assert.ok(
    events.items.some(
      (e) =>
        e.reason === 'SuccessfulRescale' &&
        e.involvedObject?.name === 'gadget' &&
        e.message === 'New size: 2; reason: Current number of replicas above Spec.MaxReplicas',
    ),
    'the rescale event',
  );
  await client!.delete(hpaResource, 'gadget', { namespace: NS });
});

test('a node whose kubelet does not answer: left out of the lists, its NodeMetrics a 503', {
  timeout: 60_000,
}, async () => {
  const closedPort = await freePort();
  await client!.create(
    resources.nodes,
    w<Node>({ metadata: { name: 'node-gone', labels: { gone: 'yes' } }, spec: { unschedulable: true } }),
  );
  const gone = await client!.get<Node>(resources.nodes, 'node-gone');
  await client!.updateStatus(
    resources.nodes,
    w<Node>({
      ...gone,
      status: {
        addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
        daemonEndpoints: { kubeletEndpoint: { Port: closedPort } },
      },
    }),
  );
  const err = await waitFor(
    'a 503 for node-gone',
    async () => {
      try {
        await client!.request({
          method: 'GET',
          path: '/apis/metrics.k8s.io/v1beta1/nodes/node-gone',
          retry: { maxRetries: 0 },
        });
        return undefined;
      } catch (e) {
        return e instanceof StatusError && e.status.code === 503 ? e : undefined;
      }
    },
    30_000,
    500,
  );
  assert.equal(err.status.kind, 'Status');
  assert.match(err.status.message ?? '', /unable to fetch metrics from node node-gone/);
  const list = await client!.request<{ items: { metadata: { name: string } }[] }>({
    method: 'GET',
    path: '/apis/metrics.k8s.io/v1beta1/nodes',
  });
  assert.deepEqual(
    list.items.map((n) => n.metadata.name),
    [NODE],
  );
  const top = await kubectl(['top', 'node', 'node-gone'], true);
  assert.notEqual(top.code, 0);
  await client!.delete(resources.nodes, 'node-gone');
});
