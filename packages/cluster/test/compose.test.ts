// kubit-test: serial
// docker-compose.yml, for real: a private Docker Engine (Debian's docker.io: its
// own data root, exec root and socket, stopped by PID), the offline base image
// from scripts/base-image (its root file system cached in /var/tmp between runs
// on one machine), the images from deploy/docker/ and `docker-compose up` of
// the unchanged file (settings through environment variables only): 3 store
// members, the apiserver, scheduler, controller manager, a registry with the
// test images and two kind-like nodes. The issue's manifest (examples/pod.yaml),
// applied unchanged with `kubit apply -f` through the admin kubeconfig the
// init service writes to the host, runs nginx with a pod IP that answers the
// host (through a route to the node container) and a pod on the other node
// (kubit-net's VXLAN between the node containers, forced with
// KUBIT_OVERLAY_MODE=vxlan); its events come in the order users know;
// `kubit logs` shows the request; `kubit delete pod` removes it and its
// containers; kubectl works with the same kubeconfig. Services: nginx behind
// `kubectl expose`, fetched by name (cluster DNS on the nodes, kubit-proxy's
// rules) from a busybox pod, also after kill -9 of the node's kubit-proxy (the
// entrypoint restarts it, with the very same rules). Persistent volumes: a
// local-path and a kubit-disk claim (a loop device of the host) on node-2.
// Then compose down -v and the engine stops, leaving no container, mount,
// route, bridge, iptables rule or loop device.
//
// KUBIT_KEEP_CLUSTER=1 leaves the engine and the cluster running for a post-mortem.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { freePort, startDockerEngine, type TestDockerEngine } from '@kubit/testkit';
import {
  expectAppServing,
  expectStartEventsInOrder,
  kubitCli,
  repoRoot,
  SERVICE_CLIENT_POD,
  waitFor,
  waitForRunningApp,
  webDeployment,
} from './helpers.js';

const run = promisify(execFile);
const cli = kubitCli;
const manifest = join(repoRoot, 'examples', 'pod.yaml');
/** scripts/base-image keeps the base image's root file system here, named by a key of its inputs. */
const baseImageCache = '/var/tmp/kubit-base-image';
const keepCluster = process.env.KUBIT_KEEP_CLUSTER === '1';

/** Debian's docker-compose 1.29 (what ./scripts/test installs), else the `docker compose` plugin. */
async function composeCommand(): Promise<string[] | undefined> {
  if (existsSync('/usr/bin/docker-compose')) return ['/usr/bin/docker-compose'];
  try {
    await run('docker', ['compose', 'version']);
    return ['docker', 'compose'];
  } catch {
    return undefined;
  }
}

/** A missing prerequisite is a failure, not a skip: ./scripts/test installs them all. */
async function prerequisitesProblem(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'the compose end-to-end test needs root (dockerd, host routes)';
  const path = (process.env.PATH ?? '').split(':');
  const onPath = (cmd: string) => path.some((dir) => existsSync(join(dir, cmd)));
  const missing = [
    ...['/usr/sbin/dockerd', '/usr/bin/kubectl'].filter((f) => !existsSync(f)),
    ...['docker', 'debootstrap', 'pnpm', 'ip', 'iptables-save'].filter((c) => !onPath(c)),
  ];
  if (!(await composeCommand())) missing.push('docker-compose');
  return missing.length > 0
    ? `the compose end-to-end test needs ${missing.join(', ')} (./scripts/test installs them: apt-get install -y docker.io docker-compose debootstrap)`
    : undefined;
}

/** Runs a program to the end; rejects with the end of its output when it fails or outlives timeoutMs. */
function exec(program: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<string> {
  return new Promise((res, rej) => {
    const child = spawn(program, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) res(out);
      else rej(new Error(`${program} ${args.join(' ')} failed (${signal ?? code}):\n${out.slice(-4000)}`));
    });
  });
}

/** A 172.28.x.0/24 for the compose network and a 10.x.0.0/16 for pods that no route here touches. */
async function freeNetworks(): Promise<{ net: string; clusterCidr: string }> {
  const { stdout } = await run('ip', ['-4', 'route']);
  const nets = Array.from({ length: 200 }, (_, i) => `172.28.${50 + i}`).filter(
    (n) => !stdout.includes(`${n}.`),
  );
  const pods = Array.from({ length: 16 }, (_, i) => `10.${224 + i}`).filter((n) => !stdout.includes(`${n}.`));
  if (nets.length === 0 || pods.length === 0)
    throw new Error('no free address ranges for the compose cluster');
  const pick = <T>(xs: T[]) => xs[Math.floor(Math.random() * xs.length)];
  return { net: pick(nets), clusterCidr: `${pick(pods)}.0.0/16` };
}

/**
 * The host's attached loop devices (loop devices are host-global: a node container's too),
 * each with the "major:minor inode" of its backing file. The name of that file is no help:
 * seen from the host, a file a container attached has the path it has in the container.
 */
async function hostLoopDevices(): Promise<{ name: string; file: string; id: string }[]> {
  const { stdout } = await run('losetup', [
    '--list',
    '--json',
    '--output',
    'NAME,BACK-FILE,BACK-INO,BACK-MAJ:MIN',
  ]);
  if (!stdout.trim()) return [];
  const list = JSON.parse(stdout) as {
    loopdevices: { name: string; 'back-file': string; 'back-ino': number; 'back-maj:min': string }[];
  };
  return list.loopdevices.map((l) => ({
    name: l.name,
    file: l['back-file'],
    id: `${l['back-maj:min'].trim()} ${l['back-ino']}`,
  }));
}

/** The "major:minor inode" of every kubit-disk backing file in the engine's volumes (node-N-storage). */
function diskFileIds(volumes: string): string[] {
  if (!existsSync(volumes)) return [];
  return readdirSync(volumes).flatMap((v) => {
    const disks = join(volumes, v, '_data', 'disks');
    if (!existsSync(disks)) return [];
    return readdirSync(disks).map((f) => {
      const st = statSync(join(disks, f));
      const major = (st.dev >> 8) & 0xfff;
      const minor = (st.dev & 0xff) | ((st.dev >> 12) & 0xfff00);
      return `${major}:${minor} ${st.ino}`;
    });
  });
}

/** What a test could leave behind on the host, one line each: routes, links, iptables rules and mounts. */
async function hostState(): Promise<Set<string>> {
  const lines = (text: string, prefix: string) =>
    text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .map((l) => `${prefix} ${l}`);
  const routes = (await run('ip', ['-4', 'route'])).stdout;
  // Names only: counters, indexes and states change by themselves.
  const links = (await run('ip', ['-o', 'link'])).stdout
    .split('\n')
    .map((l) => l.split(':')[1]?.trim().split('@')[0])
    .filter((l): l is string => !!l)
    .join('\n');
  const rules = (await run('iptables-save')).stdout
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .map((l) => l.replace(/\[\d+:\d+\]/, ''))
    .join('\n');
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .join('\n');
  return new Set([
    ...lines(routes, 'route'),
    ...lines(links, 'link'),
    ...lines(rules, 'iptables'),
    ...lines(mounts, 'mount'),
  ]);
}

describe('docker-compose.yml on a private Docker Engine', { timeout: 1_200_000 }, () => {
  let engine: TestDockerEngine | undefined;
  let work = '';
  let env: NodeJS.ProcessEnv = {};
  let compose: string[] = [];
  let composeUp = false;
  let net = '';
  let clusterCidr = '';
  let hostBefore = new Set<string>();
  let ours = /$^/;
  const hostRoutes: string[] = [];
  let kubeconfig = '';
  /** The "major:minor inode" of every kubit-disk backing file the nodes made. */
  const diskIds = new Set<string>();

  const composeRun = (args: string[], timeoutMs: number) =>
    exec(compose[0], [...compose.slice(1), ...args], env, timeoutMs);
  const docker = (args: string[]) => exec('docker', args, env, 60_000);
  /** Runs a command-line tool with the admin kubeconfig the init service wrote; rejects with its stderr. */
  const tool = (program: string, prefix: string[], args: string[], input?: string): Promise<string> =>
    new Promise((res, rej) => {
      const child = execFile(
        program,
        [...prefix, '--kubeconfig', kubeconfig, ...args],
        { cwd: repoRoot, env: { ...process.env, NO_COLOR: '1' }, maxBuffer: 16 << 20 },
        (err, stdout, stderr) =>
          err ? rej(new Error(`${program} ${args.join(' ')}: ${stderr || err.message}`)) : res(stdout),
      );
      child.stdin?.end(input ?? '');
    });
  const kubectl = (args: string[], input?: string) => tool('kubectl', [], args, input);
  const kubit = (args: string[], input?: string) =>
    tool(process.execPath, ['--conditions=kubit-source', '--import', 'tsx', cli], args, input);
  /** Containers (not sandboxes) the node container's containerd holds for a pod. */
  const containersOf = async (node: string, pod: string): Promise<string[]> => {
    const container = (await composeRun(['ps', '-q', node], 60_000)).trim();
    const out = await docker([
      'exec',
      container,
      'ctr',
      '-n',
      'k8s.io',
      'containers',
      'ls',
      '-q',
      `labels."io.kubernetes.pod.name"==${pod},labels."io.cri-containerd.kind"==container`,
    ]);
    return out.split('\n').filter(Boolean);
  };

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

  before(async () => {
    const problem = await prerequisitesProblem();
    if (problem) throw new Error(problem);
    compose = (await composeCommand()) ?? [];
    hostBefore = await hostState();
    work = await mkdtemp(join(tmpdir(), 'kubit-compose-'));
    kubeconfig = join(work, 'state', 'kubeconfig');
    engine = await startDockerEngine({ outliveTest: keepCluster });
  });

  after(async () => {
    if (keepCluster && engine) {
      const settings = Object.entries(env)
        .filter(([k]) =>
          /^(KUBIT_COMPOSE_|KUBIT_CLUSTER_CIDR|KUBIT_APISERVER_PORT|COMPOSE_PROJECT_NAME|DOCKER_HOST)/.test(
            k,
          ),
        )
        .map(([k, v]) => `${k}=${v}`)
        .join(' ');
      const routes = hostRoutes.map((r) => `ip route del ${r}; `).join('');
      process.stderr.write(
        [
          'KUBIT_KEEP_CLUSTER=1: the engine and the cluster are still running.',
          `  export ${settings}`,
          `  kubectl --kubeconfig ${kubeconfig} get pods -A; docker-compose ps`,
          `  clean up: ${routes}docker-compose down -v; kill ${engine.process.pid}; rm -rf ${engine.dir} ${work}`,
          '',
        ].join('\n'),
      );
      return;
    }
    for (const r of hostRoutes.splice(0)) await run('ip', ['route', 'del', r]).catch(() => undefined);
    if (composeUp) {
      await composeRun(['down', '-v', '--timeout', '5'], 180_000).catch((err: Error) =>
        process.stderr.write(`compose down in clean-up failed: ${err.message}\n`),
      );
    }
    await engine?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  step('the base image, the images and `compose up` need no registry on the internet', async (t) => {
    if (!engine) throw new Error('no docker engine');
    const started = Date.now();
    const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
    const base = await exec(
      join(repoRoot, 'scripts', 'base-image'),
      ['--cache-dir', baseImageCache],
      engine.env,
      900_000,
    );
    for (const line of base.trim().split('\n')) t.diagnostic(line);
    t.diagnostic(`base image ready (${elapsed()})`);
    const context = join(work, 'context');
    await exec(join(repoRoot, 'deploy', 'docker', 'stage-context.sh'), [context], process.env, 300_000);
    t.diagnostic(`staged the build context (${elapsed()})`);
    const networks = await freeNetworks();
    net = networks.net;
    clusterCidr = networks.clusterCidr;
    const literal = (x: string) => x.replace(/[./]/g, '\\$&');
    ours = new RegExp(
      [
        'docker',
        String.raw`\bbr-[0-9a-f]{12}\b`,
        String.raw`\bveth[0-9a-f]{7}\b`,
        literal(`${net}.`),
        literal(`${clusterCidr.split('.').slice(0, 2).join('.')}.`),
        literal(work),
        literal(engine.dataRoot.replace(/\/data$/, '')),
      ].join('|'),
      'i',
    );
    env = {
      ...engine.env,
      COMPOSE_PROJECT_NAME: `kubittest${process.pid}`,
      KUBIT_COMPOSE_CONTEXT: context,
      KUBIT_COMPOSE_STATE: join(work, 'state'),
      KUBIT_COMPOSE_NET: net,
      KUBIT_CLUSTER_CIDR: clusterCidr,
      KUBIT_APISERVER_PORT: String(await freePort()),
      // kubit-net's VXLAN between the node containers (host-gw, the default, is the lab's and up's).
      KUBIT_OVERLAY_MODE: 'vxlan',
    };
    await composeRun(['build'], 600_000);
    t.diagnostic(`built the images (${elapsed()})`);
    composeUp = true;
    // `up -d` returns once every service started in order, each after its dependencies were healthy.
    await composeRun(['up', '-d'], 600_000);
    t.diagnostic(`compose up (${elapsed()})`);
  });

  let nodes: string[][] = [];
  step(
    'both nodes are Ready with pod subnets; kubectl works with the admin kubeconfig on the host',
    async (t) => {
      assert.ok(existsSync(kubeconfig), 'the init service wrote the admin kubeconfig to the host');
      nodes = await waitFor(
        'two Ready nodes with pod subnets',
        async () => {
          const out = await kubit([
            'get',
            'nodes',
            '-o',
            'jsonpath={range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
          ]);
          const rows = out
            .trim()
            .split('\n')
            .filter(Boolean)
            .map((l) => l.split(' '));
          return rows.length === 2 && rows.every((r) => r[1] && r[2] === 'True') ? rows : undefined;
        },
        240_000,
      );
      assert.deepEqual(
        nodes.map((r) => r[0]),
        ['node-1', 'node-2'],
      );
      const clusterPrefix = clusterCidr.split('.').slice(0, 2).join('.');
      for (const [name, cidr] of nodes) {
        assert.ok(cidr.startsWith(`${clusterPrefix}.`), `${name}'s podCIDR ${cidr} is in ${clusterCidr}`);
        // The host reaches the pods of a node through that node container's address.
        const via = `${net}.${name === 'node-1' ? 21 : 22}`;
        await run('ip', ['route', 'replace', cidr, 'via', via]);
        hostRoutes.push(cidr);
      }
      // kubit-net (vxlan) in each node container: its device, and the other node's pods through it.
      for (const [name] of nodes) {
        const other = nodes.find(([n]) => n !== name)?.[1] ?? '';
        const container = (await composeRun(['ps', '-q', name], 60_000)).trim();
        const routed = await waitFor(
          `${name} to route ${other} through its VXLAN device`,
          async () => {
            const out = await docker(['exec', container, 'ip', '-4', 'route', 'show', other]).catch(() => '');
            return out.includes('dev kubit.1') ? out : undefined;
          },
          60_000,
        );
        const link = await docker(['exec', container, 'ip', '-d', 'link', 'show', 'kubit.1']);
        assert.match(link, /vxlan id 1 .*dstport 8472/s, link);
        t.diagnostic(`${name}: ${routed.trim()}`);
      }
      const table = await kubectl(['get', 'nodes', '-o', 'wide']);
      assert.match(table, /node-1\s+Ready/);
      assert.match(table, /node-2\s+Ready/);
      assert.match(table, new RegExp(`${net.replace(/\./g, '\\.')}\\.21`), 'node-1 has its compose address');
      for (const line of (await composeRun(['ps'], 60_000)).trim().split('\n')) t.diagnostic(line);
    },
  );

  let appIp = '';
  let appNode = '';
  step(
    'kubit apply -f examples/pod.yaml: Running with a pod IP that answers the host and a pod on the other node',
    async () => {
      assert.equal(
        (await kubit(['apply', '-f', manifest])).trim(),
        'pod/my-application created',
        'the manifest of issue 9, unchanged',
      );
      [appIp, appNode] = await waitForRunningApp(kubit, 180_000);
      // Served to the host through a route via the node container; the other node's pod
      // reaches it through the nodes' route sync.
      const podCidr = nodes.find(([n]) => n === appNode)?.[1] ?? '';
      await expectAppServing(kubit, { ip: appIp, node: appNode, podCidr });
    },
  );

  step('kubit describe pod lists Scheduled, Pulling, Pulled, Created and Started in that order', async () => {
    await expectStartEventsInOrder(kubit, appNode);
  });

  step('kubit delete pod removes the pod and its containers', async () => {
    assert.ok((await containersOf(appNode, 'my-application')).length > 0, 'nginx has a container before');
    assert.match(await kubit(['delete', 'pod', 'my-application']), /pod "my-application" deleted/);
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
  });

  step(
    'Services: kubectl expose, wget http://web from a pod by name; kill -9 of kubit-proxy: restarted, same rules',
    async (t) => {
      await kubectl(['apply', '-f', '-'], webDeployment(2));
      await kubectl(['expose', 'deployment', 'web', '--port=80']);
      await kubectl(['apply', '-f', '-'], SERVICE_CLIENT_POD);
      await waitFor(
        '2 ready endpoints of web',
        async () => {
          const out = await kubectl([
            'get',
            'endpointslices',
            '-l',
            'kubernetes.io/service-name=web',
            '-o',
            'jsonpath={range .items[*].endpoints[?(@.conditions.ready==true)]}{.addresses[0]}{"\\n"}{end}',
          ]);
          return out.split('\n').filter(Boolean).length === 2 ? true : undefined;
        },
        180_000,
      );
      const clientNode = await waitFor(
        'the client pod to run',
        async () => {
          const [phase, node] = (
            await kubectl(['get', 'pod', 'svc-client', '-o', 'jsonpath={.status.phase} {.spec.nodeName}'])
          ).split(' ');
          return phase === 'Running' ? node : undefined;
        },
        120_000,
      );
      const fetchWeb = async (what: string) => {
        const page = await waitFor(
          `http://web from the client pod (${what})`,
          () => kubectl(['exec', 'svc-client', '--', 'sh', '-c', 'wget -qO- -T 5 http://web']),
          60_000,
        );
        assert.match(page, /Welcome to nginx/, what);
      };
      await fetchWeb('by name, through kubit-dns on the nodes');

      // kill -9 of the kubit-proxy of the client's node: the entrypoint runs it again, and its
      // first sync replaces the table in one transaction: the same rules, none twice.
      const container = (await composeRun(['ps', '-q', clientNode], 60_000)).trim();
      const inNode = (args: string[]) => docker(['exec', container, ...args]);
      const rules = async () =>
        (await inNode(['nft', 'list', 'table', 'ip', 'kubit-proxy']))
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean)
          .sort();
      const before = await rules();
      assert.ok(
        before.some((l) => l.includes('dnat')),
        'kubit-proxy programmed DNAT rules',
      );
      const pidFile = '/run/kubit/kubit-proxy.pid';
      const oldPid = (await inNode(['cat', pidFile])).trim();
      await inNode(['kill', '-9', oldPid]);
      const newPid = await waitFor(
        'kubit-proxy to run again, synced (/healthz 200)',
        async () => {
          const pid = (await inNode(['cat', pidFile])).trim();
          if (pid === oldPid) return undefined;
          await inNode(['/opt/kubit/deploy/docker/healthcheck.sh', 'http://127.0.0.1:10256/healthz']);
          return pid;
        },
        60_000,
      );
      assert.deepEqual(await rules(), before, 'the restarted proxy programmed exactly the same rules');
      await fetchWeb('after kubit-proxy was killed and restarted');
      t.diagnostic(
        `kubit-proxy on ${clientNode}: pid ${oldPid} killed, ${newPid} synced, ${before.length} lines of rules`,
      );

      await kubectl(['delete', 'service', 'web']);
      await kubectl(['delete', 'deployment', 'web']);
      await kubectl(['delete', 'pod', 'svc-client', '--wait=false']);
      await waitFor(
        'the pods to be gone',
        async () => ((await kubit(['get', 'pods', '-o', 'name'])).trim() === '' ? true : undefined),
        120_000,
      );
    },
  );

  step(
    'persistent volumes on node-2: a local-path and a kubit-disk claim written by a pod, Bound there, the disk its own ext4; gone with the claims',
    async () => {
      if (!engine) throw new Error('no docker engine');
      const claim = (name: string, cls: string, size: string) => `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: ${name}
spec:
  storageClassName: ${cls}
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: ${size}
`;
      const pod = (name: string, script: string, claims: string[]) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 1
  nodeSelector:
    kubernetes.io/hostname: node-2
  containers:
  - name: c
    image: busybox:latest
    command: ["sh", "-c", "${script}; sleep 3600"]
    volumeMounts:
${claims.map((c) => `    - {name: ${c}, mountPath: /${c}}`).join('\n')}
  volumes:
${claims.map((c) => `  - {name: ${c}, persistentVolumeClaim: {claimName: ${c}}}`).join('\n')}
`;
      // `kept` stays for compose down: the node's entrypoint must detach its loop device.
      await kubectl(
        ['apply', '-f', '-'],
        [
          claim('notes', 'local-path', '16Mi'),
          claim('disk', 'kubit-disk', '64Mi'),
          claim('kept', 'kubit-disk', '16Mi'),
          pod('writer', 'echo hello > /notes/log; echo hello > /disk/log', ['notes', 'disk']),
          pod('keeper', 'echo kept > /kept/log', ['kept']),
        ].join('---\n'),
      );
      for (const name of ['writer', 'keeper'])
        await waitFor(
          `${name} to run with its volumes`,
          async () =>
            (await kubectl(['get', 'pod', name, '-o', 'jsonpath={.status.phase}'])) === 'Running'
              ? true
              : undefined,
          240_000,
        );
      const pvs = await kubectl([
        'get',
        'pv',
        '-o',
        'jsonpath={range .items[*]}{.spec.claimRef.name} {.status.phase} {.spec.storageClassName} {.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}{"\\n"}{end}',
      ]);
      assert.deepEqual(pvs.trim().split('\n').sort(), [
        'disk Bound kubit-disk node-2',
        'kept Bound kubit-disk node-2',
        'notes Bound local-path node-2',
      ]);
      assert.equal(
        await waitFor(
          'writer to have written both volumes',
          async () => {
            const out = await kubectl(['exec', 'writer', '--', 'cat', '/notes/log', '/disk/log']);
            return out.trim() === 'hello\nhello' ? out : undefined;
          },
          30_000,
        ),
        'hello\nhello\n',
      );
      // The disk is a loop device of its own with an ext4 of about the claim's size (less its metadata).
      const [dev, kib] = (await kubectl(['exec', 'writer', '--', 'df', '-k', '/disk']))
        .trim()
        .split('\n')[1]
        .split(/\s+/);
      assert.match(dev, /^\/dev\/loop\d+$/);
      assert.ok(
        Number(kib) > 48 * 1024 && Number(kib) <= 64 * 1024,
        `df: /disk has ${kib} KiB of a 64Mi claim`,
      );
      // Their loop devices are the host's, with backing files in node-2's storage volume.
      for (const id of diskFileIds(join(engine.dataRoot, 'volumes'))) diskIds.add(id);
      const ourLoops = async () =>
        (await hostLoopDevices()).filter((l) => diskIds.has(l.id)).map((l) => `${l.name} ${l.file}`);
      assert.equal(
        (await ourLoops()).length,
        2,
        `a loop device on the host for each of the 2 disks: ${await ourLoops()}`,
      );

      await kubectl(['delete', 'pod', 'writer', '--wait=true']);
      await kubectl(['delete', 'pvc', 'notes', 'disk']);
      await waitFor(
        'the PVs of notes and disk to be deleted',
        async () =>
          (await kubectl(['get', 'pv', '-o', 'jsonpath={.items[*].spec.claimRef.name}'])).trim() === 'kept'
            ? true
            : undefined,
        120_000,
      );
      assert.equal((await ourLoops()).length, 1, `only kept's loop device is left: ${await ourLoops()}`);
    },
  );

  step('compose down -v and the engine stop leave nothing behind on the host', async () => {
    if (!engine) throw new Error('no docker engine');
    if (keepCluster) return;
    for (const r of hostRoutes.splice(0)) await run('ip', ['route', 'del', r]);
    await composeRun(['down', '-v', '--timeout', '5'], 180_000);
    composeUp = false;
    assert.equal((await docker(['ps', '-aq'])).trim(), '', 'no containers are left');
    assert.equal((await docker(['volume', 'ls', '-q'])).trim(), '', 'no volumes are left');
    const networks = (await docker(['network', 'ls', '--format', '{{.Name}}'])).trim().split('\n');
    assert.deepEqual(
      networks.filter((n) => n.startsWith('kubittest')).sort(),
      [],
      'no compose network is left',
    );
    const { dataRoot } = engine;
    await engine.stop();
    assert.ok(!existsSync(dataRoot), 'the engine removed its data root');
    // Only what names Docker, the test's networks or its directories counts, so that
    // another engineer's test on a shared machine cannot fail this one (under
    // ./scripts/test a serial file runs alone anyway).
    const loops = (await hostLoopDevices()).filter((l) => diskIds.has(l.id));
    assert.deepEqual(loops, [], "loop devices of the nodes' disks (kept's was mounted at down)");
    const left = [...(await hostState())].filter((l) => !hostBefore.has(l) && ours.test(l));
    assert.deepEqual(left, [], 'routes, links, iptables rules or mounts the cluster left behind');
  });
});
