// kubit-test: serial
// The whole one-machine cluster, as a person runs it: the launcher brings up a
// 3-member store, the apiserver, scheduler, controller manager and two nodes
// (each its own containerd and pod subnet) in a temporary state dir. The
// issue's manifest (examples/pod.yaml), applied unchanged with `kubit apply -f`,
// runs nginx with a pod IP that answers the host and a pod on the other node;
// its events come in the order users know; kill -9 of the store leader, the
// apiserver, the scheduler and a kubelet while pods are being created leaves
// every pod Running exactly once; down and up resume the cluster with its
// pods; `kubit delete` removes the pod and its containers; down stops every
// process by PID.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import {
  expectAppServing,
  expectStartEventsInOrder,
  fromSources,
  httpGet,
  kubitCli,
  otherNode,
  repoRoot,
  runWithOutput,
  SERVICE_CLIENT_POD,
  waitFor,
  waitForRunningApp,
  webDeployment,
} from './helpers.js';

const run = promisify(execFile);
const launcher = join(repoRoot, 'packages', 'cluster', 'src', 'main.ts');

const missing = [
  '/usr/bin/containerd',
  '/usr/bin/docker-registry',
  '/usr/lib/cni/bridge',
  '/usr/bin/kubectl',
].filter((f) => !existsSync(f));
// A missing prerequisite is a failure, not a skip: ./scripts/test installs them all.
const prerequisitesProblem =
  process.getuid?.() !== 0
    ? 'the cluster end-to-end test needs root (containerd, CNI)'
    : missing.length > 0
      ? `the cluster end-to-end test needs ${missing.join(', ')} (installed by ./scripts/test)`
      : undefined;
const manifest = join(repoRoot, 'examples', 'pod.yaml');

/** Runs the launcher from its sources (it then runs the daemons from theirs: KUBIT_SOURCE=1). */
function launch(args: string[], timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return runWithOutput(process.execPath, fromSources(launcher, args), {
    env: { ...process.env, KUBIT_SOURCE: '1' },
    stdin: 'ignore',
    until: 'exit',
    timeoutMs,
  });
}

function portFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const srv = createServer();
    srv.once('error', () => res(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
  });
}

/** A port offset whose every cluster port is free now (the launcher's ports: 2379+..10300+nodes). */
async function freeOffset(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const offset = 20000 + 100 * Math.floor(Math.random() * 100);
    const ports = [
      2379, 2380, 2381, 2389, 2390, 2391, 2399, 2400, 2401, 5000, 6443, 10257, 10259, 10300, 10301,
      // kubit-proxy's health and metrics, kubit-dns's DNS, health and metrics ports.
      10256, 10249, 10053, 10054, 10060, 10061, 9153, 9154,
      // Each node's kubit-net (health and metrics).
      10400, 10401,
    ];
    const free = await Promise.all(ports.map((p) => portFree(p + offset)));
    if (free.every(Boolean)) return offset;
  }
  throw new Error('no free port range for the test cluster');
}

/** A 10.x.0.0/16 no route on this machine touches, for the test cluster's pods. */
async function freeClusterCidr(): Promise<string> {
  const { stdout } = await run('ip', ['-4', 'route']);
  for (let x = 240; x < 256; x++) if (!stdout.includes(`10.${x}.`)) return `10.${x}.0.0/16`;
  throw new Error('no free 10.x.0.0/16 for the test cluster');
}

/** The network namespace (a name in /run/netns, where containerd's CNI puts them) holding a pod's address. */
async function podNetns(podIp: string): Promise<string> {
  const { stdout } = await run('ip', ['netns', 'list']);
  for (const name of stdout
    .split('\n')
    .map((l) => l.split(' ')[0])
    .filter(Boolean)) {
    const addrs = await run('ip', ['-n', name, '-4', '-o', 'addr']).then(
      (r) => r.stdout,
      () => '',
    );
    if (addrs.includes(`inet ${podIp}/`)) return name;
  }
  throw new Error(`no network namespace in /run/netns has the pod address ${podIp}`);
}

/** A pod that runs the host's kubectl (a static binary) as its ServiceAccount, with in-cluster config. */
function inClusterKubectlPod(binary: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: incluster
spec:
  serviceAccountName: lister
  terminationGracePeriodSeconds: 1
  containers:
  - name: kubectl
    image: busybox:latest
    command: ["sleep", "3600"]
    volumeMounts:
    - name: kubectl
      mountPath: /kubectl
  volumes:
  - name: kubectl
    hostPath:
      path: ${binary}
      type: File
`;
}

/** `busybox sleep` pods for the resilience run, one per name. */
function sleeperPod(name: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  labels:
    app: resilience
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: sleep
    image: busybox:latest
    command: ["sleep", "3600"]
    resources:
      requests:
        cpu: 10m
        memory: 8Mi
`;
}

describe('./scripts/up and ./scripts/down', { timeout: 900_000 }, () => {
  let stateDir = '';
  let kubeconfig = '';
  let offset = 0;
  let upArgs: string[] = [];
  /** Runs a command-line tool with the cluster's admin kubeconfig; rejects with its stderr. */
  const tool = (program: string, prefix: string[], args: string[], input?: string): Promise<string> =>
    new Promise((res, rej) => {
      const child = execFile(
        program,
        [...prefix, '--kubeconfig', kubeconfig, ...args],
        { cwd: repoRoot, env: { ...process.env, KUBIT_SOURCE: '1', NO_COLOR: '1' }, maxBuffer: 16 << 20 },
        (err, stdout, stderr) =>
          err ? rej(new Error(`${program} ${args.join(' ')}: ${stderr || err.message}`)) : res(stdout),
      );
      child.stdin?.end(input ?? '');
    });
  const kubectl = (args: string[], input?: string) => tool('kubectl', [], args, input);
  const kubit = (args: string[], input?: string) =>
    tool(process.execPath, fromSources(kubitCli), args, input);
  /** `kubit get pod <name> -o jsonpath=<template>`, split at spaces. */
  const podFields = async (pod: string, template: string): Promise<string[]> =>
    (await kubit(['get', 'pod', pod, '-o', `jsonpath=${template}`])).trim().split(' ');
  const pidOf = (name: string) => Number(readFileSync(join(stateDir, 'run', `${name}.pid`), 'utf8'));
  /** Containers (not sandboxes) containerd holds for a pod on a node, by the kubelet's labels. */
  const containersOf = async (node: string, pod: string): Promise<string[]> => {
    const socket = join(stateDir, 'nodes', node, 'containerd.sock');
    const { stdout } = await run('ctr', [
      '--address',
      socket,
      '-n',
      'k8s.io',
      'containers',
      'ls',
      '-q',
      // One filter: conditions joined by commas must all hold (separate filters would be ORed).
      `labels."io.kubernetes.pod.name"==${pod},labels."io.cri-containerd.kind"==container`,
    ]);
    return stdout.split('\n').filter(Boolean);
  };

  before(async () => {
    if (prerequisitesProblem) throw new Error(prerequisitesProblem);
    stateDir = await mkdtemp(join(tmpdir(), 'kubit-up-'));
    kubeconfig = join(stateDir, 'kubeconfig');
  });

  after(async () => {
    if (!stateDir) return;
    // KUBIT_KEEP_CLUSTER=1 leaves the cluster running for a post-mortem (stop it with down --purge --state-dir).
    if (process.env.KUBIT_KEEP_CLUSTER === '1') {
      process.stderr.write(`kept the test cluster in ${stateDir}\n`);
      return;
    }
    if (existsSync(join(stateDir, 'cluster.json'))) {
      const r = await launch(['down', '--purge', '--state-dir', stateDir], 120_000);
      if (r.code !== 0) process.stderr.write(`down --purge in clean-up failed:\n${r.out}\n`);
    }
    await rm(stateDir, { recursive: true, force: true });
  });

  let podCidrs: string[][] = [];
  let cidr = '';
  /** Each step builds on the one before: once one fails, the rest fail at once instead of waiting out their timeouts. */
  let failedStep: string | undefined;
  const step = (name: string, fn: (t: TestContext) => Promise<void>) =>
    it(name, async (t) => {
      if (failedStep) throw new Error(`not run: an earlier step failed (${failedStep})`);
      try {
        await fn(t);
      } catch (err) {
        failedStep = name;
        throw err;
      }
    });

  step('up starts two Ready nodes with pod subnets from the cluster CIDR', async (t) => {
    offset = await freeOffset();
    cidr = await freeClusterCidr();
    upArgs = [
      '--state-dir',
      stateDir,
      '--nodes',
      '2',
      '--port-offset',
      String(offset),
      '--cluster-cidr',
      cidr,
    ];
    const up = await launch(['up', ...upArgs, '--timeout', '180'], 300_000);
    assert.equal(up.code, 0, `up failed:\n${up.out}`);
    t.diagnostic(up.out.trim());
    assert.match(up.out, /2 node\(s\) Ready/);
    assert.match(up.out, new RegExp(`export KUBECONFIG=${kubeconfig}`));

    const nodes = await kubectl([
      'get',
      'nodes',
      '-o',
      'jsonpath={range .items[*]}{.metadata.name} {.spec.podCIDR}{"\\n"}{end}',
    ]);
    podCidrs = nodes
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    assert.deepEqual(
      podCidrs.map(([n]) => n),
      ['node-1', 'node-2'],
    );
    for (const [, c] of podCidrs)
      assert.ok(c?.startsWith(cidr.split('.').slice(0, 2).join('.')), `podCIDR ${c} in ${cidr}`);
  });

  let appIp = '';
  let appNode = '';

  step(
    'kubit apply -f examples/pod.yaml: Running with a pod IP that answers the host and the other node',
    async () => {
      assert.equal(
        (await kubit(['apply', '-f', manifest])).trim(),
        'pod/my-application created',
        'the manifest of issue 9, unchanged',
      );
      [appIp, appNode] = await waitForRunningApp(kubit, 150_000);
      // The host routes between the node bridges, so the other node's pod reaches it too.
      const podCidr = podCidrs.find(([n]) => n === appNode)?.[1] ?? '';
      await expectAppServing(kubit, { ip: appIp, node: appNode, podCidr });
    },
  );

  step('kubit describe pod lists Scheduled, Pulling, Pulled, Created and Started in that order', async () => {
    await expectStartEventsInOrder(kubit, appNode);
  });

  step(
    'Services: a Deployment behind a ClusterIP Service by name through cluster DNS, NodePort, LoadBalancer, port-forward svc, kill -9 of kubit-proxy and kubit-dns, scale to 0',
    async (t) => {
      await kubectl(['apply', '-f', '-'], webDeployment(3));
      await kubectl(['expose', 'deployment', 'web', '--port=80']);
      await kubectl(['apply', '-f', '-'], SERVICE_CLIENT_POD);
      const readyEndpoints = async () =>
        (
          await kubectl([
            'get',
            'endpointslices',
            '-l',
            'kubernetes.io/service-name=web',
            '-o',
            'jsonpath={range .items[*].endpoints[?(@.conditions.ready==true)]}{.addresses[0]}{"\\n"}{end}',
          ])
        )
          .split('\n')
          .filter(Boolean);
      await waitFor(
        '3 ready endpoints of web',
        async () => ((await readyEndpoints()).length === 3 ? true : undefined),
        180_000,
      );
      await waitFor(
        'the client pod to run',
        async () =>
          (await kubectl(['get', 'pod', 'svc-client', '-o', 'jsonpath={.status.phase}'])) === 'Running'
            ? true
            : undefined,
        120_000,
      );
      const clusterIP = (await kubectl(['get', 'svc', 'web', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
      assert.match(clusterIP, /^10\.(9[6-9]|10[0-9]|11[01])\./, 'a cluster IP from 10.96.0.0/12');
      const inClient = (script: string) => kubectl(['exec', 'svc-client', '--', 'sh', '-c', script]);
      for (const url of ['http://web', 'http://web.default.svc.cluster.local', `http://${clusterIP}`]) {
        const page = await waitFor(
          `${url} from the client pod`,
          async () => inClient(`wget -qO- -T 5 ${url}`),
          60_000,
        );
        assert.match(page, /Welcome to nginx/, url);
      }
      // 300 requests: every endpoint answers some (each pod's access log says so), none fails.
      const failures = await inClient(
        'n=0; for i in $(seq 300); do wget -qO- -T 5 http://web >/dev/null || n=$((n+1)); done; echo $n',
      );
      assert.equal(failures.trim(), '0', 'failed requests of 300');
      const pods = (
        await kubectl(['get', 'pods', '-l', 'app=web', '-o', 'jsonpath={.items[*].metadata.name}'])
      )
        .trim()
        .split(' ');
      for (const pod of pods) {
        const log = await kubectl(['logs', pod]);
        assert.match(log, /"GET \/ HTTP\/1\.1" 200/, `${pod} answered some of the requests`);
      }
      // Cluster DNS from the host, through the kube-dns Service's cluster IP.
      const dig = await run('dig', ['@10.96.0.10', '+short', '+time=3', 'web.default.svc.cluster.local']);
      assert.equal(dig.stdout.trim(), clusterIP);
      // The host's address on its bridge: the `kubernetes` Service's endpoint.
      const hostIP = (
        await kubectl(['get', 'endpoints', 'kubernetes', '-o', 'jsonpath={.subsets[0].addresses[0].ip}'])
      ).trim();
      await kubectl(['expose', 'deployment', 'web', '--name=web-np', '--type=NodePort', '--port=80']);
      const nodePort = (
        await kubectl(['get', 'svc', 'web-np', '-o', 'jsonpath={.spec.ports[0].nodePort}'])
      ).trim();
      const np = await waitFor(
        `NodePort ${hostIP}:${nodePort}`,
        async () => httpGet(`http://${hostIP}:${nodePort}/`),
        30_000,
      );
      assert.equal(np.status, 200);
      await kubectl([
        'expose',
        'deployment',
        'web',
        '--name=web-lb',
        '--type=LoadBalancer',
        '--port=8080',
        '--target-port=80',
      ]);
      const lbIP = await waitFor(
        'a LoadBalancer address',
        async () =>
          (
            await kubectl(['get', 'svc', 'web-lb', '-o', 'jsonpath={.status.loadBalancer.ingress[0].ip}'])
          ).trim() || undefined,
        30_000,
      );
      const lb = await waitFor(
        `LoadBalancer ${lbIP}:8080`,
        async () => httpGet(`http://${lbIP}:8080/`),
        30_000,
      );
      assert.equal(lb.status, 200);
      t.diagnostic(`web ${clusterIP}, NodePort ${hostIP}:${nodePort}, LoadBalancer ${lbIP}:8080`);
      // kubectl port-forward svc/web: kubectl picks a pod behind the Service and forwards to it.
      const forward = spawn(
        'kubectl',
        ['--kubeconfig', kubeconfig, 'port-forward', 'svc/web', `${offset + 18080}:80`],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      try {
        const fwd = await waitFor(
          'port-forward svc/web',
          async () => httpGet(`http://127.0.0.1:${offset + 18080}/`),
          30_000,
        );
        assert.equal(fwd.status, 200);
      } finally {
        forward.kill('SIGTERM');
      }
      // kill -9 of kubit-proxy and one kubit-dns: the rules stay in the kernel meanwhile, ./scripts/up
      // restarts both, and the restarted proxy rebuilds exactly the same table (no duplicates).
      // A cluster not named kubit (this one is kubit-<id>, from its --state-dir) has a table of its own.
      const { name } = JSON.parse(readFileSync(join(stateDir, 'cluster.json'), 'utf8')) as { name: string };
      const table = name === 'kubit' ? 'kubit-proxy' : `kubit-proxy-${name}`;
      const ruleset = async () => (await run('nft', ['list', 'table', 'ip', table])).stdout;
      const rulesBefore = await ruleset();
      for (const victim of ['kubit-proxy', 'kubit-dns-node-1']) process.kill(pidOf(victim), 'SIGKILL');
      const duringRestart = await inClient(
        'n=0; for i in $(seq 20); do wget -qO- -T 5 http://' +
          clusterIP +
          ' >/dev/null || n=$((n+1)); done; echo $n',
      );
      assert.equal(duringRestart.trim(), '0', 'requests to the cluster IP while kubit-proxy is down');
      const again = await launch(['up', ...upArgs, '--timeout', '180'], 300_000);
      assert.equal(again.code, 0, `up after killing kubit-proxy and kubit-dns failed:\n${again.out}`);
      await waitFor(
        'the restarted kubit-proxy to rebuild the same table',
        async () => ((await ruleset()) === rulesBefore ? true : undefined),
        30_000,
      );
      const byName = await waitFor(
        'names to resolve through both kubit-dns instances again',
        async () => {
          const n = await inClient(
            'n=0; for i in $(seq 20); do wget -qO- -T 5 http://web >/dev/null || n=$((n+1)); done; echo $n',
          );
          return n.trim() === '0' ? n : undefined;
        },
        60_000,
      );
      assert.equal(byName.trim(), '0');
      await kubectl(['scale', 'deployment', 'web', '--replicas=0']);
      await waitFor(
        'no ready endpoints of web',
        async () => ((await readyEndpoints()).length === 0 ? true : undefined),
        120_000,
      );
      const refused = await waitFor(
        'the cluster IP to refuse',
        async () => {
          const out = await inClient(`wget -O- -T 5 http://${clusterIP} 2>&1; echo rc=$?`);
          return /refused/i.test(out) ? out : undefined;
        },
        30_000,
      );
      assert.match(refused, /rc=[1-9]/);
      await kubectl(['delete', 'svc', 'web', 'web-np', 'web-lb']);
      await kubectl(['delete', 'deployment', 'web']);
    },
  );

  step(
    'a pod lists pods through kubernetes.default.svc with its ServiceAccount token, as RBAC allows',
    async () => {
      const kubectlBinary = realpathSync('/usr/bin/kubectl');
      await kubectl(['create', 'serviceaccount', 'lister']);
      await kubectl(['apply', '-f', '-'], inClusterKubectlPod(kubectlBinary));
      await waitFor(
        'the in-cluster kubectl pod to run',
        async () =>
          (await kubectl(['get', 'pod', 'incluster', '-o', 'jsonpath={.status.phase}'])) === 'Running'
            ? true
            : undefined,
        120_000,
      );
      const inPod = (args: string[]) =>
        kubectl(['exec', 'incluster', '--', '/kubectl', ...args]).catch((err: Error) => err.message);
      const denied = await waitFor(
        'an answer from the apiserver',
        async () => {
          const out = await inPod(['get', 'pods']);
          return /forbidden|NAME/i.test(out) ? out : undefined;
        },
        60_000,
      );
      assert.match(denied, /User "system:serviceaccount:default:lister" cannot list resource "pods"/);
      await kubectl(['create', 'role', 'pod-reader', '--verb=get,list', '--resource=pods']);
      await kubectl([
        'create',
        'rolebinding',
        'lister-reads',
        '--role=pod-reader',
        '--serviceaccount=default:lister',
      ]);
      const listed = await waitFor(
        'the pods, listed in the pod',
        async () => {
          const out = await inPod(['get', 'pods', '-o', 'name']);
          return out.includes('pod/incluster') ? out : undefined;
        },
        30_000,
      );
      assert.match(listed, /pod\/svc-client/);
      await kubectl(['delete', 'pod', 'svc-client', '--wait=false']);

      // @kubernetes/client-node's loadFromCluster(), as a controller in the pod would run it: the
      // host's node in the pod's network namespace, with the pod's ServiceAccount files mounted
      // at the in-cluster path (a private tmpfs on /run) and the pod's KUBERNETES_SERVICE_* variables.
      const saDir = await mkdtemp(join(tmpdir(), 'kubit-sa-files-'));
      try {
        for (const f of ['token', 'ca.crt', 'namespace']) {
          const text = await kubectl([
            'exec',
            'incluster',
            '--',
            'cat',
            `/var/run/secrets/kubernetes.io/serviceaccount/${f}`,
          ]);
          await writeFile(join(saDir, f), text, { mode: 0o600 });
        }
        const podEnv = await kubectl(['exec', 'incluster', '--', 'env']);
        const envOf = (name: string) => new RegExp(`^${name}=(.*)$`, 'm').exec(podEnv)?.[1] ?? '';
        const podIp = (await kubectl(['get', 'pod', 'incluster', '-o', 'jsonpath={.status.podIP}'])).trim();
        const netns = await podNetns(podIp);
        const script = join(repoRoot, 'packages', 'cluster', 'test', 'incluster-client.mjs');
        const secrets = '/run/secrets/kubernetes.io/serviceaccount';
        const { stdout } = await run(
          'nsenter',
          [
            `--net=/run/netns/${netns}`,
            'unshare',
            '--mount',
            '--propagation',
            'private',
            'sh',
            '-c',
            `mount -t tmpfs tmpfs /run && mkdir -p ${secrets} && cp "$0"/* ${secrets}/ && exec "$1" "$2"`,
            saDir,
            process.execPath,
            script,
          ],
          {
            env: {
              PATH: process.env.PATH,
              KUBERNETES_SERVICE_HOST: envOf('KUBERNETES_SERVICE_HOST'),
              KUBERNETES_SERVICE_PORT: envOf('KUBERNETES_SERVICE_PORT'),
            },
            timeout: 60_000,
          },
        );
        const seen = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as {
          server?: string;
          pods?: string[];
        };
        assert.equal(
          seen.server,
          `https://${envOf('KUBERNETES_SERVICE_HOST')}:${envOf('KUBERNETES_SERVICE_PORT')}`,
        );
        assert.ok(seen.pods?.includes('incluster'), stdout);
      } finally {
        await rm(saDir, { recursive: true, force: true });
      }
      const token = await kubectl([
        'exec',
        'incluster',
        '--',
        'cat',
        '/var/run/secrets/kubernetes.io/serviceaccount/token',
      ]);
      const apiserver = (
        await kubectl(['config', 'view', '--minify', '-o', 'jsonpath={.clusters[0].cluster.server}'])
      ).trim();
      const asPod = () =>
        run('kubectl', [
          '--server',
          apiserver,
          '--insecure-skip-tls-verify',
          '--token',
          token.trim(),
          'get',
          'pods',
          '-o',
          'name',
        ])
          .then((r) => r.stdout)
          .catch((err: { stderr?: string }) => err.stderr ?? '');
      assert.match(await asPod(), /pod\/incluster/, 'the token works from outside while its pod lives');
      await kubectl(['delete', 'pod', 'incluster', '--grace-period=1']);
      await waitFor(
        'the token to be refused once its pod is gone',
        async () => ((await asPod()).includes('Unauthorized') ? true : undefined),
        60_000,
      );
    },
  );

  step(
    'kill -9 of the store leader, the apiserver, the scheduler and a kubelet while pods are created: each pod runs exactly once',
    async (t) => {
      const names = Array.from({ length: 12 }, (_, i) => `sleeper-${i}`);
      const victims = async (): Promise<string[]> => {
        // The leader is whichever member says so on its metrics port (etcd's own gauge).
        const leaders: string[] = [];
        for (let i = 0; i < 3; i++) {
          const metrics = await httpGet(`http://127.0.0.1:${offset + 2381 + 10 * i}/metrics`);
          if (/^etcd_server_is_leader 1$/m.test(metrics.body)) leaders.push(`kubit-store-${i + 1}`);
        }
        assert.equal(leaders.length, 1, `exactly one store leader: ${leaders.join(', ')}`);
        return [leaders[0], 'kubit-apiserver', 'kubit-scheduler', 'kubit-kubelet-node-2'];
      };
      const order = await victims();
      let created = 0;
      const createAll = (async () => {
        for (const name of names) {
          // A create that failed while the apiserver was down is tried again; "AlreadyExists" means it landed.
          await waitFor(
            `create ${name}`,
            async () => {
              try {
                await kubit(['create', '-f', '-'], sleeperPod(name));
              } catch (err) {
                if (!/AlreadyExists|already exists/.test((err as Error).message)) throw err;
              }
              return true;
            },
            180_000,
          );
          created++;
        }
      })();
      for (const victim of order) {
        // Wait for a pod or two to be created between kills, so every kill lands mid-stream.
        const target = Math.min(names.length, created + 2);
        await waitFor(`${target} pods created`, async () => (created >= target ? true : undefined), 180_000);
        const pid = pidOf(victim);
        process.kill(pid, 'SIGKILL');
        t.diagnostic(`killed ${victim} (pid ${pid}) after ${created} creates`);
        await waitFor(
          `${victim} to die`,
          async () => (existsSync(`/proc/${pid}/cmdline`) ? undefined : true),
          10_000,
        );
        // ./scripts/up again restarts what is not running, and nothing else.
        const again = await launch(['up', ...upArgs, '--timeout', '180'], 300_000);
        assert.equal(again.code, 0, `up after killing ${victim} failed:\n${again.out}`);
        assert.notEqual(pidOf(victim), pid, `${victim} runs again under a new PID`);
      }
      await createAll;

      let lastSeen = '';
      const running = await waitFor(
        'every sleeper to be Running',
        async () => {
          const out = await kubit([
            'get',
            'pods',
            '-l',
            'app=resilience',
            '-o',
            'jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.spec.nodeName} {.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].state.waiting.reason}{"\\n"}{end}',
          ]);
          lastSeen = out;
          const rows = out
            .trim()
            .split('\n')
            .filter(Boolean)
            .map((l) => l.split(' '));
          return rows.length === names.length && rows.every((r) => r[1] === 'Running') ? rows : undefined;
        },
        240_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; the pods (name phase node restarts waiting-reason):\n${lastSeen}`);
      });
      assert.deepEqual(running.map((r) => r[0]).sort(), [...names].sort());
      for (const [name, , node, restarts] of running) {
        assert.equal(restarts, '0', `${name} was never restarted`);
        // Exactly one container on the node it is bound to, none on the other.
        assert.equal((await containersOf(node, name)).length, 1, `${name}: one container on ${node}`);
        const other = otherNode(node);
        assert.deepEqual(await containersOf(other, name), [], `${name}: nothing on ${other}`);
      }
      await kubit(['delete', 'pods', '-l', 'app=resilience', '--wait=false']);
    },
  );

  step(
    'persistent volumes: a local-path and a kubit-disk claim provisioned on the pod’s node, the data back in a new pod there, Pending with the reason elsewhere, removed with the claims',
    async () => {
      const claim = (name: string, cls?: string) => `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: ${name}
spec:
${cls ? `  storageClassName: ${cls}\n` : ''}  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 64Mi
`;
      const writer = (name: string, nodeSelector: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 1
${nodeSelector ? `  nodeSelector:\n    kubernetes.io/hostname: ${nodeSelector}\n` : ''}  containers:
  - name: c
    image: busybox:latest
    command: ["sh", "-c", "echo ${name} >> /notes/log; echo ${name} >> /disk/log; sleep 3600"]
    volumeMounts:
    - {name: notes, mountPath: /notes}
    - {name: disk, mountPath: /disk}
  volumes:
  - {name: notes, persistentVolumeClaim: {claimName: notes}}
  - {name: disk, persistentVolumeClaim: {claimName: disk}}
`;
      // The default class is local-path; both are WaitForFirstConsumer, so nothing is made yet.
      await kubectl(['apply', '-f', '-'], `${claim('notes')}---\n${claim('disk', 'kubit-disk')}`);
      assert.match(
        await kubectl(['get', 'storageclass']),
        /local-path \(default\)\s+kubit\.io\/local-path\s+Delete\s+WaitForFirstConsumer/,
      );
      assert.equal(
        (await kubectl(['get', 'pvc', 'notes', '-o', 'jsonpath={.status.phase}'])).trim(),
        'Pending',
      );

      await kubectl(['apply', '-f', '-'], writer('writer-1', 'node-2'));
      await waitFor(
        'writer-1 to run with both volumes',
        async () => ((await podFields('writer-1', '{.status.phase}'))[0] === 'Running' ? true : undefined),
        180_000,
      );
      const pvs = await kubectl([
        'get',
        'pv',
        '-o',
        'jsonpath={range .items[*]}{.spec.claimRef.name} {.status.phase} {.spec.storageClassName} {.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}{"\\n"}{end}',
      ]);
      assert.deepEqual(pvs.trim().split('\n').sort(), [
        'disk Bound kubit-disk node-2',
        'notes Bound local-path node-2',
      ]);
      assert.equal(
        (
          await kubectl(['exec', 'writer-1', '--', 'sh', '-c', 'grep " /disk " /proc/mounts | cut -d" " -f3'])
        ).trim(),
        'ext4',
      );
      // The disk is as big as the claim: df shows its size, and writing past it is ENOSPC.
      const df = (await kubectl(['exec', 'writer-1', '--', 'sh', '-c', 'df -k /disk | tail -1']))
        .trim()
        .split(/\s+/);
      const sizeKiB = Number(df[1]);
      assert.ok(sizeKiB > 48 * 1024 && sizeKiB <= 64 * 1024, `df shows ${sizeKiB} KiB for a 64Mi disk`);
      await assert.rejects(
        kubectl(['exec', 'writer-1', '--', 'sh', '-c', 'dd if=/dev/zero of=/disk/big bs=1M count=100']),
        /No space left on device/,
      );
      await kubectl(['exec', 'writer-1', '--', 'rm', '/disk/big']);

      // A new pod with the same claims goes to the volumes' node by itself and reads what the first wrote.
      await kubectl(['delete', 'pod', 'writer-1', '--wait=true']);
      await kubectl(['apply', '-f', '-'], writer('writer-2', ''));
      await waitFor(
        'writer-2 to run',
        async () => ((await podFields('writer-2', '{.status.phase}'))[0] === 'Running' ? true : undefined),
        180_000,
      );
      assert.equal((await podFields('writer-2', '{.spec.nodeName}'))[0], 'node-2');
      await waitFor(
        'writer-2 to append',
        async () => {
          const both = await kubectl(['exec', 'writer-2', '--', 'sh', '-c', 'cat /notes/log /disk/log']);
          return both.trim() === 'writer-1\nwriter-2\nwriter-1\nwriter-2' ? true : undefined;
        },
        30_000,
      );

      // A pod held to the other node cannot reach the volumes: Pending, with the scheduler's reason.
      await kubectl(['apply', '-f', '-'], writer('elsewhere', 'node-1'));
      const why = await waitFor(
        'elsewhere to be Unschedulable',
        async () => {
          const m = await kubectl([
            'get',
            'pod',
            'elsewhere',
            '-o',
            'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}',
          ]);
          return m.includes('volume node affinity conflict') ? m : undefined;
        },
        60_000,
      );
      assert.match(why, /0\/2 nodes are available: .*1 node\(s\) had volume node affinity conflict/);

      // Claims in use are kept until their pods are gone (pvc-protection); then reclaim Delete removes the volumes.
      await kubectl(['delete', 'pvc', 'notes', 'disk', '--wait=false']);
      assert.equal(
        (await kubectl(['get', 'pvc', 'notes', '-o', 'jsonpath={.status.phase}'])).trim(),
        'Bound',
      );
      await kubectl(['delete', 'pod', 'elsewhere', '--wait=true']);
      // kill -9 of node-2's kubelet while writer-2 is being deleted: the kubelet started again
      // finds the pod's mounts in the mount table, unmounts them and detaches the disk.
      const writerUid = (await kubectl(['get', 'pod', 'writer-2', '-o', 'jsonpath={.metadata.uid}'])).trim();
      await kubectl(['delete', 'pod', 'writer-2', '--wait=false']);
      const kubeletPid = pidOf('kubit-kubelet-node-2');
      process.kill(kubeletPid, 'SIGKILL');
      await waitFor(
        'the kubelet to die',
        async () => (existsSync(`/proc/${kubeletPid}/cmdline`) ? undefined : true),
        10_000,
      );
      const again = await launch(['up', ...upArgs, '--timeout', '180'], 300_000);
      assert.equal(again.code, 0, `up after killing the kubelet failed:\n${again.out}`);
      await waitFor(
        'writer-2 to be gone',
        async () =>
          (await kubectl(['get', 'pods', '-o', 'name'])).includes('pod/writer-2') ? undefined : true,
        120_000,
      );
      await waitFor(
        'writer-2’s volume mounts to be gone',
        async () =>
          readFileSync('/proc/self/mountinfo', 'utf8').includes(`/pods/${writerUid}/`) ? undefined : true,
        60_000,
      );
      await waitFor(
        'the claims and their volumes to be removed',
        async () => ((await kubectl(['get', 'pv,pvc', '-o', 'name'])).trim() === '' ? true : undefined),
        120_000,
      );
      const loops = readdirSync('/sys/block').filter((d) => d.startsWith('loop'));
      const backing = loops
        .map((d) => {
          try {
            return readFileSync(`/sys/block/${d}/loop/backing_file`, 'utf8').trim();
          } catch {
            return '';
          }
        })
        .filter((f) => f.startsWith(stateDir) || f.startsWith(realpathSync(stateDir)));
      assert.deepEqual(backing, [], 'no loop device is left attached to a disk of this cluster');
      const storage = join(stateDir, 'nodes', 'node-2', 'storage');
      assert.deepEqual(
        existsSync(storage) ? readdirSync(storage).filter((f) => f.startsWith('pvc-')) : [],
        [],
        'no volume data left on the node',
      );
    },
  );

  step(
    'workloads on real nodes: Jobs complete, fail at backoffLimit after a back-off and see their index; a DaemonSet runs on each node; a StatefulSet keeps names, claims and data',
    async () => {
      const job = (name: string, spec: string, command: string) => `apiVersion: batch/v1
kind: Job
metadata:
  name: ${name}
spec:
${spec}  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:latest
        command: ["sh", "-c", "${command}"]
`;
      await kubectl(
        ['apply', '-f', '-'],
        [
          job('ok', '  completions: 3\n  parallelism: 2\n', 'echo done'),
          job('bad', '  backoffLimit: 1\n', 'exit 3'),
          job(
            'indexed',
            '  completions: 2\n  parallelism: 2\n  completionMode: Indexed\n',
            'echo index=$JOB_COMPLETION_INDEX',
          ),
        ].join('---\n'),
      );
      await kubectl(['wait', '--for=condition=complete', 'job/ok', 'job/indexed', '--timeout=180s']);
      assert.equal((await kubectl(['get', 'job', 'ok', '-o', 'jsonpath={.status.succeeded}'])).trim(), '3');
      const logs = await kubectl([
        'get',
        'pods',
        '-l',
        'job-name=indexed',
        '-o',
        'jsonpath={range .items[*]}{.metadata.annotations.batch\\.kubernetes\\.io/job-completion-index} {.metadata.name}{"\\n"}{end}',
      ]);
      for (const line of logs.trim().split('\n')) {
        const [index, pod] = line.split(' ');
        assert.equal((await kubectl(['logs', pod])).trim(), `index=${index}`);
      }
      await kubectl(['wait', '--for=condition=failed', 'job/bad', '--timeout=180s']);
      const failed = await kubectl([
        'get',
        'job',
        'bad',
        '-o',
        'jsonpath={.status.failed} {.status.conditions[?(@.type=="Failed")].reason}',
      ]);
      assert.equal(failed.trim(), '2 BackoffLimitExceeded');
      // The retry waited out the back-off (10 s after the first failure) before it was created.
      const starts = (
        await kubectl([
          'get',
          'pods',
          '-l',
          'job-name=bad',
          '-o',
          'jsonpath={.items[*].metadata.creationTimestamp}',
        ])
      )
        .trim()
        .split(' ')
        .map((t) => Date.parse(t))
        .sort();
      assert.equal(starts.length, 2);
      assert.ok(
        starts[1] - starts[0] >= 9_000,
        `the retry came ${starts[1] - starts[0]} ms after the first pod`,
      );
      await kubectl(['delete', 'jobs', 'ok', 'bad', 'indexed', '--wait=true']);

      // One daemon pod on each node.
      await kubectl(
        ['apply', '-f', '-'],
        `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:latest
        command: ["sleep", "3600"]
`,
      );
      await kubectl(['rollout', 'status', 'daemonset/agent', '--timeout=180s']);
      const daemons = await kubectl([
        'get',
        'pods',
        '-l',
        'app=agent',
        '-o',
        'jsonpath={.items[*].spec.nodeName}',
      ]);
      assert.deepEqual(daemons.trim().split(' ').sort(), ['node-1', 'node-2']);
      await kubectl(['delete', 'daemonset', 'agent', '--wait=true']);

      // A StatefulSet: web-0 then web-1, each with its own disk; web-1 comes back as web-1 with its data.
      await kubectl(
        ['apply', '-f', '-'],
        `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: None
  selector: {app: web-sts}
  ports:
  - port: 80
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 2
  selector:
    matchLabels: {app: web-sts}
  template:
    metadata:
      labels: {app: web-sts}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: busybox:latest
        command: ["sh", "-c", "hostname >> /data/boots; sleep 3600"]
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      storageClassName: kubit-disk
      accessModes: [ReadWriteOnce]
      resources:
        requests:
          storage: 32Mi
`,
      );
      await kubectl(['rollout', 'status', 'statefulset/web', '--timeout=240s']);
      const created = await kubectl([
        'get',
        'pods',
        '-l',
        'app=web-sts',
        '-o',
        'jsonpath={range .items[*]}{.metadata.name} {.metadata.creationTimestamp}{"\\n"}{end}',
      ]);
      const byName = Object.fromEntries(
        created
          .trim()
          .split('\n')
          .map((l) => l.split(' ')),
      );
      assert.ok(Date.parse(byName['web-0']) <= Date.parse(byName['web-1']), 'web-0 came first');
      const uid1 = (await kubectl(['get', 'pvc', 'data-web-1', '-o', 'jsonpath={.metadata.uid}'])).trim();
      await kubectl(['delete', 'pod', 'web-1', '--wait=true']);
      await kubectl(['rollout', 'status', 'statefulset/web', '--timeout=240s']);
      await waitFor(
        'web-1 to run again',
        async () => ((await podFields('web-1', '{.status.phase}'))[0] === 'Running' ? true : undefined),
        180_000,
      );
      assert.equal(
        (await kubectl(['get', 'pvc', 'data-web-1', '-o', 'jsonpath={.metadata.uid}'])).trim(),
        uid1,
      );
      await waitFor(
        'web-1 to have booted twice on its disk',
        async () =>
          (await kubectl(['exec', 'web-1', '--', 'cat', '/data/boots'])).trim() === 'web-1\nweb-1'
            ? true
            : undefined,
        30_000,
      );
      // Each pod has its name in cluster DNS through the headless Service.
      const lookup = await waitFor(
        'web-0.web to resolve from web-1',
        async () => {
          try {
            // busybox's nslookup applies no search path to a name with a dot: the FQDN.
            return await kubectl(['exec', 'web-1', '--', 'nslookup', 'web-0.web.default.svc.cluster.local']);
          } catch {
            return undefined;
          }
        },
        60_000,
      );
      const web0 = (await podFields('web-0', '{.status.podIP}'))[0];
      assert.ok(lookup.includes(web0), `web-0.web.default.svc.cluster.local resolves to ${web0}:\n${lookup}`);
      await kubectl(['delete', 'statefulset', 'web', '--wait=true']);
      await kubectl(['delete', 'service', 'web']);
      await kubectl(['delete', 'pvc', 'data-web-0', 'data-web-1', '--wait=true']);
    },
  );

  step('down then up resumes the same cluster with its pod', async (t) => {
    const firstDown = await launch(['down', '--state-dir', stateDir], 120_000);
    assert.equal(firstDown.code, 0, `down failed:\n${firstDown.out}`);
    const resume = await launch(['up', '--state-dir', stateDir, '--timeout', '180'], 300_000);
    assert.equal(resume.code, 0, `resume failed:\n${resume.out}`);
    t.diagnostic(resume.out.trim());
    assert.match(resume.out, /started 16 processes/);
    const nodeCidr = podCidrs.find(([n]) => n === appNode)?.[1] ?? '';
    const ipAgain = await waitFor(
      'my-application to run again after the resume',
      async () => {
        const [p, podIp] = await podFields('my-application', '{.status.phase} {.status.podIP}');
        if (p !== 'Running' || !podIp) return undefined;
        return (await httpGet(`http://${podIp}/`)).status === 200 ? podIp : undefined;
      },
      150_000,
    );
    assert.ok(ipAgain.startsWith(nodeCidr.split('.').slice(0, 3).join('.')), `${ipAgain} in ${nodeCidr}`);
  });

  step('kubit delete pod removes the pod and its containers; down stops every process by PID', async () => {
    assert.ok((await containersOf(appNode, 'my-application')).length > 0, 'nginx has a container before');
    const deleted = await kubit(['delete', 'pod', 'my-application']);
    assert.match(deleted, /pod "my-application" deleted/);
    await assert.rejects(kubit(['get', 'pod', 'my-application']), /NotFound|not found/);
    await waitFor(
      'the containers of my-application to be removed',
      async () => ((await containersOf(appNode, 'my-application')).length === 0 ? true : undefined),
      60_000,
    );
    await kubit(['delete', 'pod', 'client', '--wait=false']);
    await waitFor(
      'the pods to be gone',
      async () => ((await kubit(['get', 'pods', '-o', 'name'])).trim() === '' ? true : undefined),
      120_000,
    );

    const runDir = join(stateDir, 'run');
    const pids = readdirSync(runDir).map((f) => Number(readFileSync(join(runDir, f), 'utf8')));
    assert.equal(
      pids.length,
      16,
      'store x3, registry, apiserver, scheduler, controller manager, containerd x2, kubelet x2, proxy, dns x2, net x2',
    );
    // Every process is still alive before the last down (a dead one names itself with its log's end).
    const dead = readdirSync(runDir)
      .map((f) => [f.replace(/\.pid$/, ''), Number(readFileSync(join(runDir, f), 'utf8'))] as const)
      .filter(([, pid]) => !existsSync(`/proc/${pid}/cmdline`))
      .map(([name]) => {
        const log = join(stateDir, 'logs', `${name}.log`);
        const end = existsSync(log)
          ? readFileSync(log, 'utf8').trimEnd().split('\n').slice(-8).join('\n')
          : '';
        return `${name}:\n${end}`;
      });
    assert.deepEqual(dead, [], 'processes that died');
    const down = await launch(['down', '--state-dir', stateDir], 120_000);
    assert.equal(down.code, 0, `down failed:\n${down.out}`);
    assert.match(down.out, /Stopped 16 processes/);
    assert.match(down.out, /left .* for the next up; down --purge/);
    for (const pid of pids) {
      const cmdline = existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
      assert.ok(!cmdline.includes(stateDir), `process ${pid} (${cmdline.replace(/\0/g, ' ')}) still runs`);
    }
    assert.deepEqual(readdirSync(runDir), [], 'no PID files are left');
  });
});
