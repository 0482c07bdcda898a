// kubit-test: serial
// The multi-host lab, with network namespaces standing in for VMs: five
// "hosts", each with its own address and a real sshd (root, key-only, a
// test-made host key), on two network segments (bridges this test creates)
// joined by a router namespace: the control plane and node-1 on one, node-2
// alone on the other, so no host route between the nodes can work and pods
// reach the other node's pods only through kubit-net's VXLAN overlay. kubit-install sets the cluster up
// over ssh from an inventory, running each daemon with the command line of its
// systemd unit (direct mode): a 3-member store on the control-plane hosts (the
// first also runs the apiserver, scheduler and controller manager) and a
// containerd and kubelet on each of the two node hosts. Then the issue's
// manifest runs through `kubit`, reachable from the test and from a pod on the
// other node; a local-path claim is provisioned in node-2's storage dir. Everything
// the test creates is removed, also when it fails.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { killStrayShims, removeAllSandboxes, unmountUnder } from '@kubit/cri/node-teardown';
import { unitCommand } from '../src/install/direct.js';
import { loadTemplates } from '../src/install/install.js';
import { InventoryError, parseInventory } from '../src/install/inventory.js';
import { hostPaths, planCluster } from '../src/install/plan.js';
import { expandExecWords, parseEnvironmentFile, splitWords } from '../src/install/unit-file.js';
import type { NodeLayout } from '../src/layout.js';
import {
  expectAppServing,
  fromSources,
  httpGet,
  kubitCli,
  otherNode,
  repoRoot,
  runWithOutput,
  waitFor,
  waitForRunningApp,
} from './helpers.js';

const run = promisify(execFile);
const installer = join(repoRoot, 'packages', 'cluster', 'src', 'install', 'main.ts');
const SSHD = '/usr/sbin/sshd';
/** How long the lab's HTTP probes wait for an answer (shorter than helpers.ts's default). */
const LAB_HTTP_TIMEOUT_MS = 3000;
const REGISTRY = '/usr/bin/docker-registry';

// The manifest of issue 9, unchanged.
const MANIFEST = `apiVersion: v1
kind: Pod
metadata:
  name: my-application
  labels:
    environment: production
spec:
  containers:
  - name: web
    image: nginx:latest
    ports:
    - containerPort: 80
    resources:
      limits:
        memory: "128Mi"
        cpu: "500m"
      requests:
        memory: "64Mi"
        cpu: "250m"
`;

// A Service in front of the issue's pod (its label), with a node port on every node host.
const WEB_SERVICE = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  type: NodePort
  selector:
    environment: production
  ports:
  - port: 80
    targetPort: 80
`;

/** A pod on \`node\` that fetches http://web/ by name (cluster DNS, then the Service's cluster IP). */
function byNamePod(node: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: by-name
spec:
  nodeName: ${node}
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: wget
    image: busybox:latest
    command: ["sh", "-c", "for i in $(seq 30); do wget -qO- -T 3 http://web/ && exit 0; sleep 1; done; exit 1"]
`;
}

/** A busybox httpd on \`node\` serving a 10 MiB file, for the transfer across the overlay. */
function bigFileServer(node: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: big-file
  labels:
    app: big-file
spec:
  nodeName: ${node}
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: busybox:latest
    command: ["sh", "-c", "mkdir -p /www && dd if=/dev/urandom of=/www/big bs=1048576 count=10 2>/dev/null && md5sum /www/big > /www/big.md5 && exec httpd -f -p 8080 -h /www"]
`;
}

/** A pod on \`node\` that fetches the 10 MiB file and prints its size and checksum next to the server's. */
function bigFileClient(node: string, ip: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: big-file-client
spec:
  nodeName: ${node}
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: wget
    image: busybox:latest
    command: ["sh", "-c", "for i in $(seq 30); do wget -q -T 10 -O /tmp/big http://${ip}:8080/big && wget -q -T 5 -O /tmp/big.md5 http://${ip}:8080/big.md5 && break; sleep 1; done; echo size=$(wc -c < /tmp/big); echo got=$(md5sum < /tmp/big | cut -d' ' -f1); echo want=$(cut -d' ' -f1 /tmp/big.md5); cat /sys/class/net/eth0/mtu"]
`;
}

/** What the lab needs on this machine; a missing piece fails the test with what to install. */
function missingPrerequisites(): string[] {
  const problems: string[] = [];
  if (process.getuid?.() !== 0) problems.push('root (network namespaces, containerd, CNI)');
  const files: [string, string][] = [
    [SSHD, 'openssh-server'],
    ['/usr/bin/ssh', 'openssh-client'],
    ['/usr/bin/ssh-keygen', 'openssh-client'],
    ['/usr/bin/nsenter', 'util-linux'],
    ['/usr/bin/setsid', 'util-linux'],
    ['/usr/bin/containerd', 'containerd'],
    ['/usr/sbin/runc', 'runc'],
    ['/usr/lib/cni/bridge', 'containernetworking-plugins'],
    [REGISTRY, 'docker-registry'],
    ['/usr/sbin/ip', 'iproute2'],
    ['/usr/sbin/nft', 'nftables'],
    ['/usr/sbin/conntrack', 'conntrack'],
    ['/usr/sbin/losetup', 'mount'],
    ['/usr/sbin/mkfs.ext4', 'e2fsprogs'],
  ];
  for (const [f, pkg] of files) if (!existsSync(f)) problems.push(`${f} (apt-get install ${pkg})`);
  if (!existsSync(join(repoRoot, 'node_modules', 'tsx'))) problems.push('tsx (pnpm install)');
  return problems;
}

async function sh(cmd: string, args: string[]): Promise<string> {
  try {
    return (await run(cmd, args, { maxBuffer: 16 << 20 })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${(e.stderr ?? '').trim() || e.message}`);
  }
}

/** Two /24s for the lab's segments and a /16 for the pods that no route on this machine touches. */
async function freeNetworks(): Promise<{ lan: string; lanB: string; cidr: string }> {
  const routes = await sh('ip', ['-4', 'route']);
  const addrs = await sh('ip', ['-4', 'addr']);
  const used = (prefix: string) => routes.includes(prefix) || addrs.includes(prefix);
  const pick = (candidates: string[]) => {
    const free = candidates.filter((c) => !used(c));
    if (free.length === 0) throw new Error(`no free network among ${candidates[0]}...`);
    return free[Math.floor(Math.random() * free.length)];
  };
  const lans = Array.from({ length: 50 }, (_, i) => `192.168.${200 + i}.`);
  const lan = pick(lans);
  const lanB = pick(lans.filter((l) => l !== lan));
  const cidr = pick(Array.from({ length: 30 }, (_, i) => `10.${200 + i}.`));
  return { lan, lanB, cidr: `${cidr}0.0/16` };
}

interface LabHost {
  name: string;
  address: string;
  /** Its segment's bridge, and the router's address on that segment. */
  segment: 'a' | 'b';
  /** Not in the first inventory: kubit-install join adds it. */
  joinsLater?: boolean;
  netns: string;
  veth: string;
  prefix: string;
  sshd?: ChildProcess;
  roles?: string[];
}

describe('the multi-host lab (network namespaces, ssh, kubit-install)', { timeout: 600_000 }, () => {
  const id = randomBytes(3).toString('hex');
  const bridge = `klab${id}`;
  const bridgeB = `klab${id}b`;
  const routerNs = `klab${id}-router`;
  let lanPrefixB = '';
  let labDir = '';
  let lanPrefix = '';
  let clusterCidr = '';
  let hosts: LabHost[] = [];
  let registry: ChildProcess | undefined;
  let inventoryFile = '';
  let kubeconfig = '';
  const forwardRules: string[][] = [];
  const cleanupErrors: string[] = [];
  const hostYaml = (h: LabHost) =>
    [
      `  - name: ${h.name}`,
      `    address: ${h.address}`,
      `    prefix: ${h.prefix}`,
      ...(h.roles ? [`    roles: [${h.roles.join(', ')}]`] : []),
    ].join('\n');
  let failed = false;

  const kubit = async (args: string[], input?: string): Promise<string> => {
    const r = await runWithOutput(process.execPath, fromSources(kubitCli, args), {
      env: { ...process.env, KUBECONFIG: kubeconfig },
      timeoutMs: 60_000,
      ...(input ? { input } : {}),
    });
    if (r.code !== 0) throw new Error(`kubit ${args.join(' ')} (exit ${r.code}): ${r.out.trim()}`);
    return r.stdout;
  };
  const runInstaller = (args: string[], timeoutMs: number) =>
    runWithOutput(process.execPath, fromSources(installer, args), { timeoutMs });
  /** The node hosts of the first inventory (node-3 joins later, and leaves). */
  const nodeHosts = () => hosts.filter((h) => !h.roles && !h.joinsLater);
  /** Every node host, node-3 included: for clean-up. */
  const everyNodeHost = () => hosts.filter((h) => !h.roles);
  const nodeLayoutOf = (h: LabHost): NodeLayout => {
    const p = hostPaths({
      name: h.name,
      address: h.address,
      prefix: h.prefix,
      ssh: { user: 'root', port: 22, key: '' },
    });
    return {
      name: h.name,
      index: 0,
      dir: h.prefix,
      containerdConfig: p.containerdConfig,
      containerdRoot: p.containerdRoot,
      containerdState: p.containerdState,
      socket: p.socket,
      cniConfDir: p.cniConfDir,
      cniConflist: join(p.cniConfDir, '10-kubit.conflist'),
      registryConfigDir: p.registryConfigDir,
      kubeletRootDir: p.kubeletRoot,
      kubeconfig: join(p.kubeconfigs, 'kubelet.kubeconfig'),
      bridge: 'kubit0',
      networkName: `lab${id}-${h.name}`,
    };
  };

  before(async () => {
    const missing = missingPrerequisites();
    if (missing.length > 0) throw new Error(`the lab test needs: ${missing.join('; ')}`);
    labDir = await mkdtemp(join(tmpdir(), `kubit-lab-${id}-`));
    const nets = await freeNetworks();
    lanPrefix = nets.lan;
    lanPrefixB = nets.lanB;
    clusterCidr = nets.cidr;
    const gateway = `${lanPrefix}1`;
    const names: [string, string[] | undefined][] = [
      ['cp-1', ['store', 'apiserver', 'scheduler', 'controller-manager']],
      ['cp-2', ['store']],
      ['cp-3', ['store']],
      ['node-1', undefined],
      ['node-2', undefined],
      ['node-3', undefined],
    ];
    hosts = names.map(([name, roles], i) => ({
      name,
      // node-2 (and later node-3) on segment B.
      segment: name === 'node-2' || name === 'node-3' ? 'b' : 'a',
      address: `${name === 'node-2' || name === 'node-3' ? lanPrefixB : lanPrefix}${11 + i}`,
      ...(name === 'node-3' ? { joinsLater: true } : {}),
      netns: `klab${id}-${name}`,
      veth: `kl${id}h${i}`,
      prefix: join(labDir, 'hosts', name),
      ...(roles ? { roles } : {}),
    }));

    // Two "LANs": segment A, a bridge with the test's address, and segment B, a bridge without one;
    // one veth per namespace, and a router namespace with a leg (.254) on each. Each host routes
    // only the other segment through the router (no default route), so a pod subnet is reachable
    // from a node only through a route kubit-net made.
    await sh('ip', ['link', 'add', bridge, 'type', 'bridge']);
    await sh('ip', ['addr', 'add', `${gateway}/24`, 'dev', bridge]);
    await sh('ip', ['link', 'set', bridge, 'up']);
    await sh('ip', ['link', 'add', bridgeB, 'type', 'bridge']);
    await sh('ip', ['link', 'set', bridgeB, 'up']);
    // Bridged frames pass the host's FORWARD chain when br_netfilter is loaded (e.g. Docker sets it to DROP).
    if (existsSync('/usr/sbin/iptables')) {
      for (const b of [bridge, bridgeB]) {
        const rule = ['FORWARD', '-i', b, '-o', b, '-j', 'ACCEPT'];
        await sh('iptables', ['-I', ...rule]);
        forwardRules.push(rule);
      }
    }
    const segment = (s: 'a' | 'b') =>
      s === 'a'
        ? { bridge, router: `${lanPrefix}254`, other: `${lanPrefixB}0/24` }
        : { bridge: bridgeB, router: `${lanPrefixB}254`, other: `${lanPrefix}0/24` };
    await sh('ip', ['netns', 'add', routerNs]);
    await sh('ip', ['-n', routerNs, 'link', 'set', 'lo', 'up']);
    await sh('ip', ['netns', 'exec', routerNs, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    for (const [i, s] of (['a', 'b'] as const).entries()) {
      const leg = `kl${id}r${i}`;
      await sh('ip', ['link', 'add', leg, 'type', 'veth', 'peer', 'name', `eth${i}`, 'netns', routerNs]);
      await sh('ip', ['link', 'set', leg, 'master', segment(s).bridge, 'up']);
      await sh('ip', ['-n', routerNs, 'addr', 'add', `${segment(s).router}/24`, 'dev', `eth${i}`]);
      await sh('ip', ['-n', routerNs, 'link', 'set', `eth${i}`, 'up']);
    }
    for (const h of hosts) {
      const seg = segment(h.segment);
      await sh('ip', ['netns', 'add', h.netns]);
      await sh('ip', ['link', 'add', h.veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', h.netns]);
      await sh('ip', ['link', 'set', h.veth, 'master', seg.bridge, 'up']);
      await sh('ip', ['-n', h.netns, 'addr', 'add', `${h.address}/24`, 'dev', 'eth0']);
      await sh('ip', ['-n', h.netns, 'link', 'set', 'eth0', 'up']);
      await sh('ip', ['-n', h.netns, 'link', 'set', 'lo', 'up']);
      await sh('ip', ['-n', h.netns, 'route', 'add', seg.other, 'via', seg.router]);
    }
    // The test (on segment A) reaches segment B through the router too.
    await sh('ip', ['route', 'add', `${lanPrefixB}0/24`, 'via', `${lanPrefix}254`]);

    // ssh: one client key for root everywhere, one host key per host, a known_hosts naming them.
    const sshDir = join(labDir, 'ssh');
    await mkdir(sshDir, { recursive: true, mode: 0o700 });
    const clientKey = join(sshDir, 'id_ed25519');
    await sh('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `kubit-lab-${id}`, '-f', clientKey]);
    await writeFile(join(sshDir, 'authorized_keys'), readFileSync(`${clientKey}.pub`), { mode: 0o600 });
    await mkdir('/run/sshd', { recursive: true, mode: 0o755 }); // sshd's privilege-separation directory
    const knownHosts: string[] = [];
    for (const h of hosts) {
      const hostKey = join(sshDir, `host-${h.name}`);
      await sh('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', h.name, '-f', hostKey]);
      knownHosts.push(
        `${h.address} ${readFileSync(`${hostKey}.pub`, 'utf8').split(' ').slice(0, 2).join(' ')}`,
      );
      const config = join(sshDir, `sshd-${h.name}.conf`);
      await writeFile(
        config,
        [
          `ListenAddress ${h.address}:22`,
          `HostKey ${hostKey}`,
          `PidFile ${join(sshDir, `sshd-${h.name}.pid`)}`,
          `AuthorizedKeysFile ${join(sshDir, 'authorized_keys')}`,
          'PermitRootLogin prohibit-password',
          'PasswordAuthentication no',
          'KbdInteractiveAuthentication no',
          'UsePAM no',
          // The keys live in the test's temp dir, not in ~/.ssh: skip the home-directory mode checks.
          'StrictModes no',
          'MaxStartups 50',
          '',
        ].join('\n'),
      );
      const log = openSync(join(sshDir, `sshd-${h.name}.log`), 'a');
      // nsenter --net only: the "host" shares the filesystem and mounts (cgroups, /run) with the test.
      h.sshd = spawn('nsenter', [`--net=/run/netns/${h.netns}`, SSHD, '-D', '-e', '-f', config], {
        stdio: ['ignore', log, log],
      });
      closeSync(log);
    }
    await writeFile(join(sshDir, 'known_hosts'), `${knownHosts.join('\n')}\n`);

    // The node image registry, on the bridge address every namespace reaches.
    const registryConfig = join(labDir, 'registry.yml');
    const registryPort = 5000;
    await writeFile(
      registryConfig,
      [
        'version: 0.1',
        'log:',
        '  level: warn',
        'storage:',
        '  filesystem:',
        `    rootdirectory: ${join(labDir, 'registry')}`,
        'http:',
        `  addr: ${gateway}:${registryPort}`,
        '',
      ].join('\n'),
    );
    const regLog = openSync(join(labDir, 'registry.log'), 'a');
    registry = spawn(REGISTRY, ['serve', registryConfig], { stdio: ['ignore', regLog, regLog] });
    closeSync(regLog);
    const mirror = `${gateway}:${registryPort}`;
    await waitFor(
      'the registry',
      async () =>
        (await httpGet(`http://${mirror}/v2/`, LAB_HTTP_TIMEOUT_MS)).status === 200 ? true : undefined,
      20_000,
    );
    await sh(join(repoRoot, 'scripts', 'images'), [mirror]);

    for (const h of hosts) {
      await waitFor(
        `sshd on ${h.name}`,
        async () => {
          if (h.sshd?.exitCode !== null)
            throw new Error(`sshd exited: ${readFileSync(join(sshDir, `sshd-${h.name}.log`), 'utf8')}`);
          await sh('ssh', [
            '-i',
            clientKey,
            '-o',
            'BatchMode=yes',
            '-o',
            `UserKnownHostsFile=${join(sshDir, 'known_hosts')}`,
            `root@${h.address}`,
            'true',
          ]);
          return true;
        },
        20_000,
      );
    }

    inventoryFile = join(labDir, 'inventory.yaml');
    await writeFile(
      inventoryFile,
      [
        'cluster:',
        `  name: lab${id}`,
        `  clusterCidr: ${clusterCidr}`,
        'kubit:',
        `  root: ${repoRoot}`,
        // The sources, as every test runs them (a dist/ may be stale); the units say how.
        '  run: source',
        `  node: ${process.execPath}`,
        'registry:',
        `  mirror: ${mirror}`,
        'ssh:',
        '  user: root',
        `  key: ${clientKey}`,
        `  knownHosts: ${join(sshDir, 'known_hosts')}`,
        'controlPlane:',
        ...hosts.filter((h) => h.roles).map(hostYaml),
        'nodes:',
        ...nodeHosts().map(hostYaml),
        '',
      ].join('\n'),
    );
    kubeconfig = join(labDir, 'install', 'admin.kubeconfig');
  });

  /** The end of every daemon's log, for a failure's report (the lab dir goes away in clean-up). */
  const dumpLogs = () => {
    for (const h of hosts) {
      const dir = join(h.prefix, 'var', 'log', 'kubit');
      if (!existsSync(dir)) continue;
      for (const f of readdirSync(dir)) {
        const lines = readFileSync(join(dir, f), 'utf8').trimEnd().split('\n').slice(-15);
        process.stderr.write(`--- ${h.name}: ${f}\n${lines.join('\n')}\n`);
      }
    }
  };

  after(async () => {
    if (failed) dumpLogs();
    const step = async (what: string, fn: () => Promise<unknown>) => {
      try {
        await fn();
      } catch (err) {
        cleanupErrors.push(`${what}: ${(err as Error).message}`);
      }
    };
    // Pods first, while their containerd runs, so CNI frees addresses and veths.
    for (const h of everyNodeHost())
      await step(`sandboxes of ${h.name}`, () => removeAllSandboxes(nodeLayoutOf(h).socket));
    if (inventoryFile && existsSync(inventoryFile)) {
      await step('kubit-install down', async () => {
        const r = await runInstaller(
          ['down', '-i', inventoryFile, '--mode', 'direct', '--work-dir', join(labDir, 'install')],
          90_000,
        );
        if (r.code !== 0) throw new Error(r.out);
      });
    }
    // Whatever down could not reach (e.g. ssh failed): the PID files are on this filesystem.
    for (const h of hosts) {
      const runDir = join(h.prefix, 'run', 'kubit');
      if (!existsSync(runDir)) continue;
      for (const f of readdirSync(runDir).filter((n) => n.endsWith('.pid'))) {
        const pid = Number(readFileSync(join(runDir, f), 'utf8').trim());
        const cmdline = existsSync(`/proc/${pid}/cmdline`)
          ? readFileSync(`/proc/${pid}/cmdline`, 'utf8')
          : '';
        if (pid > 1 && cmdline.includes(h.prefix)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone meanwhile
          }
        }
      }
    }
    for (const h of everyNodeHost()) {
      const node = nodeLayoutOf(h);
      killStrayShims(node.socket);
      await step(`mounts of ${h.name}`, () => unmountUnder(node.dir));
      await rm(join('/var/lib/cni/networks', node.networkName), { recursive: true, force: true });
    }
    for (const h of hosts) {
      if (h.sshd?.pid !== undefined && h.sshd.exitCode === null) h.sshd.kill('SIGTERM');
    }
    if (registry?.pid !== undefined && registry.exitCode === null) registry.kill('SIGTERM');
    for (const h of hosts) await step(`netns ${h.netns}`, () => sh('ip', ['netns', 'del', h.netns]));
    await step(`netns ${routerNs}`, () => sh('ip', ['netns', 'del', routerNs]));
    for (const rule of forwardRules) await step('iptables rule', () => sh('iptables', ['-D', ...rule]));
    await step(`bridge ${bridge}`, () => sh('ip', ['link', 'del', bridge]));
    await step(`bridge ${bridgeB}`, () => sh('ip', ['link', 'del', bridgeB]));
    if (labDir) await step('lab dir', () => rm(labDir, { recursive: true, force: true }));
    // Nothing of the lab's networks is left on this machine: no address, no route (the test's pod routes went with the bridge).
    if (lanPrefix) {
      await step('leftover addresses', async () => {
        const left = [await sh('ip', ['-4', 'addr']), await sh('ip', ['-4', 'route'])]
          .join('\n')
          .split('\n')
          .filter(
            (l) =>
              l.includes(lanPrefix) ||
              (lanPrefixB && l.includes(lanPrefixB)) ||
              (clusterCidr && l.includes(clusterCidr.split('.').slice(0, 2).join('.') + '.')),
          );
        if (left.length > 0) throw new Error(left.join('; '));
      });
    }
    if (cleanupErrors.length > 0)
      process.stderr.write(`lab clean-up problems:\n${cleanupErrors.join('\n')}\n`);
  });

  it('rejects a bad inventory naming the field, and an unreachable host', async () => {
    const bad = join(labDir, 'bad.yaml');
    await writeFile(
      bad,
      readFileSync(inventoryFile, 'utf8').replace(`address: ${hosts[1].address}`, 'address: 10.0.0'),
    );
    const r1 = await runInstaller(['check', '-i', bad], 30_000);
    assert.notEqual(r1.code, 0);
    assert.match(r1.out, /controlPlane\[1\]\.address: "10\.0\.0" is not an IPv4 address/);
    // .99 is on the lab's bridge but no namespace has it: nothing answers there.
    const gone = join(labDir, 'unreachable.yaml');
    await writeFile(
      gone,
      readFileSync(inventoryFile, 'utf8').replace(`address: ${hosts[4].address}`, `address: ${lanPrefix}99`),
    );
    const r2 = await runInstaller(['check', '-i', gone], 60_000);
    assert.notEqual(r2.code, 0);
    assert.match(
      r2.out,
      new RegExp(`cannot reach host node-2 over ssh \\(root@${lanPrefix.replace(/\./g, '\\.')}99:22\\)`),
    );
  });

  it('installs the cluster over ssh and runs the issue manifest across nodes', async (t) => {
    failed = true;
    const up = await runInstaller(
      [
        'up',
        '-i',
        inventoryFile,
        '--mode',
        'direct',
        '--work-dir',
        join(labDir, 'install'),
        '--timeout',
        '180',
      ],
      300_000,
    );
    t.diagnostic(up.out.trim());
    assert.equal(up.code, 0, `kubit-install up failed:\n${up.out}`);
    assert.match(up.out, /2 node\(s\) Ready/);

    // The daemons run the ExecStart of their units: the store member on cp-2 has exactly that command line.
    const cp2 = hosts[1];
    const storePid = Number(
      readFileSync(join(cp2.prefix, 'run', 'kubit', 'kubit-store@cp-2.service.pid'), 'utf8'),
    );
    const argv = readFileSync(`/proc/${storePid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    assert.equal(argv[0], process.execPath);
    assert.ok(argv.includes(join(repoRoot, 'packages', 'store', 'src', 'main.ts')), argv.join(' '));
    assert.ok(argv.includes(`--listen-peer-urls=https://${cp2.address}:2380`), argv.join(' '));
    const netns = readFileSync(`/proc/${storePid}/net/fib_trie`, 'utf8');
    assert.ok(netns.includes(cp2.address), 'the store member runs in its host namespace');

    const nodes = JSON.parse(await kubit(['get', 'nodes', '-o', 'json'])) as {
      items: { metadata: { name: string }; spec: { podCIDR?: string } }[];
    };
    const podCidrs = new Map(nodes.items.map((n) => [n.metadata.name, n.spec.podCIDR ?? '']));
    assert.deepEqual([...podCidrs.keys()].sort(), ['node-1', 'node-2']);
    // The test (not in the inventory) routes to each node's pod subnet: node-1's through node-1, on its
    // segment; node-2's through the router, which is told where it is, as a lab's router would be for
    // the machine (the nodes themselves have no route through the router to any pod subnet).
    for (const h of nodeHosts()) {
      const cidr = podCidrs.get(h.name) ?? '';
      if (h.segment === 'a') {
        await sh('ip', ['route', 'replace', cidr, 'via', h.address]);
      } else {
        await sh('ip', ['-n', routerNs, 'route', 'replace', cidr, 'via', h.address]);
        await sh('ip', ['route', 'replace', cidr, 'via', `${lanPrefix}254`]);
      }
    }
    // kubit-net (auto) chose VXLAN between the two segments: each node has the device, and routes
    // the other node's pod subnet through it.
    for (const h of nodeHosts()) {
      const other = nodeHosts().find((o) => o.name !== h.name);
      const link = await waitFor(
        `the VXLAN device on ${h.name}`,
        async () => {
          const out = await sh('ip', ['-n', h.netns, '-d', 'link', 'show', 'type', 'vxlan']).catch(() => '');
          return /vxlan id \d+/.test(out) ? out : undefined;
        },
        30_000,
      );
      assert.match(link, /dstport 8472/, link);
      assert.match(link, /mtu 1450/, `the device's MTU leaves room for the 50-byte VXLAN header:\n${link}`);
      const device = /^\d+: ([^:@]+)/m.exec(link)?.[1] ?? '';
      const route = await waitFor(
        `${h.name}'s route to ${other?.name}'s pods`,
        async () => {
          const r = await sh('ip', [
            '-n',
            h.netns,
            '-4',
            'route',
            'show',
            podCidrs.get(other?.name ?? '') ?? '',
          ]);
          return r.includes(`dev ${device}`) ? r : undefined;
        },
        30_000,
      );
      t.diagnostic(`${h.name}: ${route.trim()}`);
    }

    const manifest = join(labDir, 'my-application.yaml');
    await writeFile(manifest, MANIFEST);
    await kubit(['apply', '-f', manifest]);
    const [ip, node] = await waitForRunningApp(kubit, 120_000);
    // The other node's pod reaches it through the installer's routes between the hosts.
    await expectAppServing(kubit, {
      ip,
      node,
      podCidr: podCidrs.get(node) ?? '',
      httpTimeoutMs: LAB_HTTP_TIMEOUT_MS,
    });

    // 10 MiB between pods on the two segments: the pods' MTU leaves room for the VXLAN header, or
    // full-size segments would be dropped and the transfer would stall.
    await kubit(['delete', 'pod', 'client']);
    await kubit(['apply', '-f', '-'], bigFileServer(node));
    const bigIp = await waitFor(
      'the big-file server',
      async () => {
        const out = await kubit(['get', 'pod', 'big-file', '-o', 'jsonpath={.status.phase} {.status.podIP}']);
        const [phase, podIp] = out.trim().split(' ');
        return phase === 'Running' && podIp ? podIp : undefined;
      },
      120_000,
    );
    await kubit(['apply', '-f', '-'], bigFileClient(otherNode(node), bigIp));
    const bigPhase = await waitFor(
      'the big-file client to finish',
      async () => {
        const p = (await kubit(['get', 'pod', 'big-file-client', '-o', 'jsonpath={.status.phase}'])).trim();
        return p === 'Succeeded' || p === 'Failed' ? p : undefined;
      },
      180_000,
    );
    const bigLog = await kubit(['logs', 'big-file-client']).catch((e: Error) => e.message);
    assert.equal(bigPhase, 'Succeeded', bigLog);
    assert.match(bigLog, /size=10485760\b/, bigLog);
    const sums = /got=(\w+)\s+want=(\w+)/.exec(bigLog);
    assert.ok(sums && sums[1] === sums[2], `the file arrived intact: ${bigLog}`);
    assert.match(bigLog, /^1450$/m, `the pod's eth0 MTU is the overlay's: ${bigLog}`);
    await kubit(['delete', 'pod', 'big-file', 'big-file-client']);

    // Services: kubit-proxy on each node host, kubit-dns on both (advertised at the host addresses, port 53).
    await kubit(['apply', '-f', '-'], WEB_SERVICE);
    const service = JSON.parse(await kubit(['get', 'service', 'web', '-o', 'json'])) as {
      spec: { clusterIP: string; ports: { nodePort: number }[] };
    };
    const nodePort = service.spec.ports[0]?.nodePort;
    assert.match(service.spec.clusterIP, /^10\.(9[6-9]|10[0-9]|11[01])\./, 'a cluster IP from 10.96.0.0/12');
    assert.ok(nodePort && nodePort >= 30000 && nodePort <= 32767, `node port ${nodePort}`);
    // A node port answers on every node host's address: locally, or forwarded (masqueraded) to the other node.
    for (const h of nodeHosts()) {
      const res = await waitFor(
        `NodePort ${h.address}:${nodePort}`,
        () => httpGet(`http://${h.address}:${nodePort}/`, LAB_HTTP_TIMEOUT_MS),
        60_000,
      );
      assert.equal(res.status, 200, h.name);
      assert.match(res.body, /Welcome to nginx/);
    }
    const dnsEndpoints = async () => {
      const slices = JSON.parse(
        await kubit([
          'get',
          'endpointslices',
          '-n',
          'kube-system',
          '-l',
          'kubernetes.io/service-name=kube-dns',
          '-o',
          'json',
        ]),
      ) as { items: { endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[] }[] };
      return slices.items
        .flatMap((sl) => sl.endpoints ?? [])
        .filter((e) => e.conditions?.ready)
        .flatMap((e) => e.addresses)
        .sort();
    };
    const dnsAddresses = await waitFor(
      'both kubit-dns endpoints',
      async () => ((await dnsEndpoints()).length === 2 ? dnsEndpoints() : undefined),
      60_000,
    );
    assert.deepEqual(
      dnsAddresses,
      nodeHosts()
        .map((h) => h.address)
        .sort(),
    );
    // From a pod on the other node, by name: its resolv.conf names 10.96.0.10 (kubelet --cluster-dns).
    await kubit(['apply', '-f', '-'], byNamePod(otherNode(node)));
    const phase = await waitFor(
      'the by-name pod to finish',
      async () => {
        const p = (await kubit(['get', 'pod', 'by-name', '-o', 'jsonpath={.status.phase}'])).trim();
        return p === 'Succeeded' || p === 'Failed' ? p : undefined;
      },
      120_000,
    );
    const byNameLog = await kubit(['logs', 'by-name']).catch((e: Error) => e.message);
    assert.equal(phase, 'Succeeded', byNameLog);
    assert.match(byNameLog, /Welcome to nginx/);
    t.diagnostic(
      `web ${service.spec.clusterIP}, NodePort :${nodePort} on ${nodeHosts()
        .map((h) => h.address)
        .join(', ')}`,
    );
    await kubit(['delete', 'service', 'web']);

    await kubit(['delete', 'pod', 'my-application', 'by-name']);
    await waitFor(
      'the pods to be gone',
      async () => ((await kubit(['get', 'pods', '-o', 'name'])).trim() === '' ? true : undefined),
      60_000,
    );
    // Its containers went with it: nothing answers on the pod IP any more.
    await waitFor(
      'nginx to stop answering',
      async () => {
        try {
          await httpGet(`http://${ip}/`, LAB_HTTP_TIMEOUT_MS);
          return undefined;
        } catch {
          return true;
        }
      },
      30_000,
    );
    failed = false;
  });

  it('a local-path claim is provisioned in the storage dir of the lab node its pod runs on, and removed with it', async () => {
    failed = true;
    const node2 = nodeHosts().find((h) => h.name === 'node-2');
    if (!node2) throw new Error('no node-2 in the lab');
    await kubit(
      ['apply', '-f', '-'],
      `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: lab-notes
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 16Mi
---
apiVersion: v1
kind: Pod
metadata:
  name: lab-writer
spec:
  terminationGracePeriodSeconds: 1
  nodeSelector:
    kubernetes.io/hostname: node-2
  containers:
  - name: c
    image: busybox:latest
    command: ["sh", "-c", "echo lab > /notes/log; sleep 3600"]
    volumeMounts:
    - {name: notes, mountPath: /notes}
  volumes:
  - {name: notes, persistentVolumeClaim: {claimName: lab-notes}}
`,
    );
    await waitFor(
      'lab-writer to run with its claim',
      async () =>
        (await kubit(['get', 'pod', 'lab-writer', '-o', 'jsonpath={.status.phase}'])).trim() === 'Running'
          ? true
          : undefined,
      120_000,
    );
    const [phase, cls, affinity, dir] = (
      await kubit([
        'get',
        'pv',
        '-o',
        'jsonpath={.items[0].status.phase} {.items[0].spec.storageClassName} {.items[0].spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]} {.items[0].spec.local.path}',
      ])
    )
      .trim()
      .split(' ');
    assert.deepEqual([phase, cls, affinity], ['Bound', 'local-path', 'node-2']);
    // The installer's --local-storage-dir on node-2 (the lab's hosts share this machine's file system).
    const storage = join(
      hostPaths({
        name: node2.name,
        address: node2.address,
        prefix: node2.prefix,
        ssh: { user: 'root', port: 22, key: '' },
      }).kubeletRoot,
      'storage',
    );
    assert.ok(dir.startsWith(`${storage}/`), `the volume ${dir} is in node-2's storage dir ${storage}`);
    await waitFor(
      'the pod to have written into the volume',
      async () =>
        existsSync(join(dir, 'log')) && readFileSync(join(dir, 'log'), 'utf8') === 'lab\n' ? true : undefined,
      30_000,
    );

    await kubit(['delete', 'pod', 'lab-writer']);
    await kubit(['delete', 'pvc', 'lab-notes']);
    await waitFor(
      'the PV and its directory to be removed',
      async () =>
        (await kubit(['get', 'pv', '-o', 'name'])).trim() === '' && !existsSync(dir) ? true : undefined,
      60_000,
    );
    failed = false;
  });

  it('kubit-install join adds node-3 on the other segment; remove drains it and every node forgets its routes', async (t) => {
    failed = true;
    const node3 = hosts.find((h) => h.name === 'node-3');
    const [node1, node2] = ['node-1', 'node-2'].map((n) => hosts.find((h) => h.name === n));
    if (!node3 || !node1 || !node2) throw new Error('the lab has no node-3');
    // The inventory with node-3 listed under nodes (the last section).
    const joined = join(labDir, 'inventory-with-node-3.yaml');
    await writeFile(joined, `${readFileSync(inventoryFile, 'utf8').trimEnd()}\n${hostYaml(node3)}\n`);
    const installArgs = [
      '-i',
      joined,
      '--mode',
      'direct',
      '--work-dir',
      join(labDir, 'install'),
      '--timeout',
      '180',
    ];
    const j = await runInstaller(['join', 'node-3', ...installArgs], 300_000);
    t.diagnostic(j.out.trim());
    assert.equal(j.code, 0, `kubit-install join failed:\n${j.out}`);
    const cidr = (await kubit(['get', 'node', 'node-3', '-o', 'jsonpath={.spec.podCIDR}'])).trim();
    assert.ok(cidr, 'node-3 has a pod subnet');
    const routeOn = async (h: LabHost) =>
      (await sh('ip', ['-n', h.netns, '-4', 'route', 'show', cidr])).trim();
    // node-2 shares node-3's segment: a host-gw route; node-1 does not: through the VXLAN device.
    await waitFor(
      'node-2 and node-1 to route to node-3',
      async () => {
        const [r1, r2] = [await routeOn(node1), await routeOn(node2)];
        return r1.includes('dev kubit.1') && r2.includes(`via ${node3.address}`) ? true : undefined;
      },
      30_000,
    );
    // A pod on node-3 serves a pod on node-1, across the segments.
    await kubit(['apply', '-f', '-'], bigFileServer('node-3'));
    const ip = await waitFor(
      'the pod on node-3',
      async () => {
        const [phase, podIp] = (
          await kubit(['get', 'pod', 'big-file', '-o', 'jsonpath={.status.phase} {.status.podIP}'])
        )
          .trim()
          .split(' ');
        return phase === 'Running' && podIp ? podIp : undefined;
      },
      120_000,
    );
    await kubit(['apply', '-f', '-'], bigFileClient('node-1', ip));
    const phase = await waitFor(
      'the client on node-1 to finish',
      async () => {
        const p = (await kubit(['get', 'pod', 'big-file-client', '-o', 'jsonpath={.status.phase}'])).trim();
        return p === 'Succeeded' || p === 'Failed' ? p : undefined;
      },
      180_000,
    );
    const log = await kubit(['logs', 'big-file-client']).catch((e: Error) => e.message);
    assert.equal(phase, 'Succeeded', log);
    assert.match(log, /size=10485760\b/, log);
    await kubit(['delete', 'pod', 'big-file-client']);

    // remove: cordon, evict (the pod on node-3 goes), stop, clean up, delete the Node.
    const r = await runInstaller(['remove', 'node-3', ...installArgs], 300_000);
    t.diagnostic(r.out.trim());
    assert.equal(r.code, 0, `kubit-install remove failed:\n${r.out}`);
    assert.match(r.out, /node-3: cordoned; evicting its pods/);
    const nodes = await kubit(['get', 'nodes', '-o', 'name']);
    assert.doesNotMatch(nodes, /node\/node-3/);
    assert.match(
      await kubit(['get', 'pod', 'big-file']).catch((e: Error) => e.message),
      /NotFound|not found/,
      'the pod on node-3 was evicted',
    );
    await waitFor(
      'every node to forget node-3',
      async () => {
        const fdb = await sh('ip', ['netns', 'exec', node1.netns, 'bridge', 'fdb', 'show', 'dev', 'kubit.1']);
        return (await routeOn(node1)) === '' && (await routeOn(node2)) === '' && !fdb.includes(node3.address)
          ? true
          : undefined;
      },
      30_000,
    );
    const left = await sh('ip', ['-n', node3.netns, '-d', 'link', 'show', 'type', 'vxlan']);
    assert.equal(left.trim(), '', "node-3's VXLAN device is gone");
    failed = false;
  });

  it('kubit-install down stops every daemon and leaves no kubit-proxy or kubit-net table, route or VXLAN device in the node hosts', async () => {
    failed = true;
    const r = await runInstaller(
      ['down', '-i', inventoryFile, '--mode', 'direct', '--work-dir', join(labDir, 'install')],
      90_000,
    );
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /stopped kubit-proxy\.service/);
    assert.match(r.out, /stopped kubit-dns@node-1\.service/);
    assert.match(r.out, /stopped kubit-net@node-2\.service/);
    for (const h of nodeHosts()) {
      const tables = await sh('ip', ['netns', 'exec', h.netns, 'nft', 'list', 'tables']);
      assert.doesNotMatch(tables, /kubit-proxy|kubit-netpol/, `${h.name}: ${tables}`);
      const vxlan = await sh('ip', ['-n', h.netns, '-d', 'link', 'show', 'type', 'vxlan']);
      assert.equal(vxlan.trim(), '', `${h.name}: ${vxlan}`);
      // Only the node's own pod bridge still routes a pod subnet (CNI leaves the bridge).
      const podPrefix = `${clusterCidr.split('.').slice(0, 2).join('.')}.`;
      const routes = (await sh('ip', ['-n', h.netns, '-4', 'route']))
        .split('\n')
        .filter((l) => l.startsWith(podPrefix) && !l.includes('dev kubit0'));
      assert.deepEqual(routes, [], `${h.name}: kubit-net's routes are gone`);
    }
    failed = false;
  });
});

describe('kubit-install without hosts: inventory, units, command lines', () => {
  const key = join(repoRoot, 'package.json'); // any file that exists stands in for a key here
  const inventory = (extra = '') => `ssh:
  key: ${key}
kubit:
  root: /opt/kubit
controlPlane:
  - { name: cp-1, address: 10.9.0.11, roles: [store, apiserver, scheduler, controller-manager] }
  - { name: cp-2, address: 10.9.0.12, roles: [store] }
  - { name: cp-3, address: 10.9.0.13, roles: [store] }
nodes:
  - { name: node-1, address: 10.9.0.21 }
${extra}`;

  it('names the wrong field of a bad inventory', () => {
    const bad = (text: string) => () => parseInventory(text, 'inv.yaml', '/');
    assert.throws(
      bad(inventory().replace('10.9.0.12', '10.9.0')),
      /inv\.yaml: controlPlane\[1\]\.address: "10\.9\.0" is not an IPv4 address/,
    );
    assert.throws(
      bad(inventory().replace('roles: [store] }\n  - { name: cp-3', 'roles: [stor] }\n  - { name: cp-3')),
      /controlPlane\[1\]\.roles\[0\]: "stor" is not one of/,
    );
    assert.throws(
      bad(inventory('  - { name: node-1, address: 10.9.0.22 }\n')),
      /nodes\[1\]\.name: "node-1" is also nodes\[0\]'s name/,
    );
    assert.throws(
      bad(
        inventory().replace('[store] }\n  - { name: cp-3, address: 10.9.0.13, roles: [store] }', '[store] }'),
      ),
      /odd number of members/,
    );
    assert.throws(bad(`${inventory()}colour: blue\n`), /colour: is not a known field/);
    assert.throws(
      bad(inventory().replace(`key: ${key}`, 'key: /nonexistent/key')),
      /controlPlane\[0\]\.ssh\.key: \/nonexistent\/key does not exist/,
    );
    assert.throws(bad('nodes: [\n'), InventoryError);
    assert.throws(
      bad(`cluster:\n  loadBalancerRange: 10.9.0.250-10.9.0.200\n${inventory()}`),
      /inv\.yaml: cluster\.loadBalancerRange: "10\.9\.0\.250-10\.9\.0\.200" must be an IPv4 range/,
    );
  });

  it('splits and expands Exec lines as systemd does', () => {
    assert.deepEqual(splitWords(`a "b c" 'd e' f\\ g`), ['a', 'b c', 'd e', 'f g']);
    const env = parseEnvironmentFile('# c\nKUBIT_ROOT=/r\nKUBIT_ARGS="--a=1 --b=2"\n');
    // biome-ignore lint/suspicious/noTemplateCurlyInString: systemd's ${VAR} syntax, not a template
    assert.deepEqual(expandExecWords(['/usr/bin/node', '${KUBIT_ROOT}/m.js', '$KUBIT_ARGS'], env), [
      '/usr/bin/node',
      '/r/m.js',
      '--a=1',
      '--b=2',
    ]);
    assert.throws(() => expandExecWords(['$NOPE'], env), /\$NOPE is not set/);
  });

  it("resolves each planned unit to its daemon's real command line", async () => {
    const inv = parseInventory(inventory(), 'inv.yaml', '/');
    const plans = planCluster(inv, await loadTemplates(repoRoot));
    const node = plans.find((p) => p.host.name === 'node-1');
    assert.ok(node);
    const files = new Map(
      node.files.flatMap((f) => ('text' in f.content ? [[f.path, f.content.text] as const] : [])),
    );
    const kubelet = node.units.find((u) => u.name === 'kubit-kubelet@node-1.service');
    assert.ok(kubelet);
    const cmd = unitCommand(node.paths, kubelet, (p) => files.get(p));
    assert.deepEqual(cmd.start.argv.slice(0, 2), [
      '/usr/bin/node',
      '/opt/kubit/packages/kubelet/dist/src/main.js',
    ]);
    assert.ok(cmd.start.argv.includes('--node-ip=10.9.0.21'));
    assert.ok(cmd.start.argv.includes('--container-runtime-endpoint=unix:///run/kubit/containerd.sock'));
    assert.equal(cmd.env.get('NODE_OPTIONS'), '--max-semi-space-size=1');
    assert.ok(cmd.start.argv.includes('--cluster-dns=10.96.0.10'));
    // Every node host runs kubit-proxy; the first two also kubit-dns on their address, port 53.
    assert.deepEqual(
      node.units.map((u) => u.name),
      [
        'containerd-kubit@node-1.service',
        'kubit-kubelet@node-1.service',
        'kubit-proxy.service',
        'kubit-net@node-1.service',
        'kubit-dns@node-1.service',
      ],
    );
    const argvOf = (plan: (typeof plans)[number], unitName: string) => {
      const u = plan.units.find((x) => x.name === unitName);
      assert.ok(u, unitName);
      const texts = new Map(
        plan.files.flatMap((f) => ('text' in f.content ? [[f.path, f.content.text] as const] : [])),
      );
      return unitCommand(plan.paths, u, (p) => texts.get(p)).start.argv;
    };
    const proxy = argvOf(node, 'kubit-proxy.service');
    assert.equal(proxy[1], '/opt/kubit/packages/proxy/dist/src/main.js');
    assert.ok(proxy.includes('--hostname-override=node-1'));
    assert.ok(proxy.includes('--kubeconfig=/etc/kubit/kubeconfigs/kube-proxy.kubeconfig'));
    assert.ok(!proxy.some((a) => a.startsWith('--network-namespace')), 'the host namespace is its own');
    const dns = argvOf(node, 'kubit-dns@node-1.service');
    for (const flag of ['--advertise-address=10.9.0.21', '--bind-address=10.9.0.21', '--port=53'])
      assert.ok(dns.includes(flag), `${flag} in ${dns.join(' ')}`);
    assert.ok(files.has('/etc/kubit/kubeconfigs/kubit-dns.kubeconfig'));
    // kubit-net in the host's namespace, on its address, in the inventory's overlay mode (auto by default).
    const net = argvOf(node, 'kubit-net@node-1.service');
    assert.equal(net[1], '/opt/kubit/packages/net/dist/src/main.js');
    for (const flag of [
      '--hostname-override=node-1',
      '--overlay-mode=auto',
      '--underlay-address=10.9.0.21',
      '--kubeconfig=/etc/kubit/kubeconfigs/kubit-net.kubeconfig',
    ])
      assert.ok(net.includes(flag), `${flag} in ${net.join(' ')}`);
    assert.ok(files.has('/etc/kubit/kubeconfigs/kubit-net.kubeconfig'));
    assert.throws(
      () => parseInventory(`cluster:\n  overlayMode: flannel\n${inventory()}`, 'inv.yaml', '/'),
      /cluster\.overlayMode: "flannel" is not one of host-gw, vxlan, auto/,
    );
    const cp1 = plans.find((p) => p.host.name === 'cp-1');
    assert.ok(cp1);
    const apiserver = argvOf(cp1, 'kubit-apiserver.service');
    for (const flag of [
      '--advertise-address=10.9.0.11',
      '--service-cluster-ip-range=10.96.0.0/12',
      '--service-account-signing-key-file=/etc/kubit/pki/sa.key',
      '--service-account-key-file=/etc/kubit/pki/sa.pub',
    ])
      assert.ok(apiserver.includes(flag), `${flag} in ${apiserver.join(' ')}`);
    const cm = argvOf(cp1, 'kubit-controller-manager.service');
    assert.ok(cm.includes('--root-ca-file=/etc/kubit/pki/ca.crt'));
    // The default LoadBalancer pool: .200-.250 of the apiserver host's /24; the inventory may set another.
    assert.ok(cm.includes('--load-balancer-ip-range=10.9.0.200-10.9.0.250'), cm.join(' '));
    const custom = parseInventory(
      `cluster:\n  loadBalancerRange: 10.9.1.0/28\n${inventory()}`,
      'inv.yaml',
      '/',
    );
    assert.equal(custom.loadBalancerRange, '10.9.1.0/28');
    assert.deepEqual(
      cp1?.units.map((u) => u.name),
      [
        'kubit-store@cp-1.service',
        'kubit-apiserver.service',
        'kubit-scheduler.service',
        'kubit-controller-manager.service',
      ],
    );
    // Only the certificates a host's roles need; never the CA key.
    const certs = (name: string) =>
      plans
        .find((p) => p.host.name === name)
        ?.files.filter((f) => 'localPki' in f.content)
        .map((f) => f.path.split('/').pop());
    assert.deepEqual(certs('cp-2'), ['ca.crt', 'store.crt', 'store.key']);
    assert.ok(certs('cp-1')?.includes('sa.key') && certs('cp-1')?.includes('sa.pub'));
    assert.ok(certs('node-1')?.includes('kube-proxy.key') && certs('node-1')?.includes('kubit-dns.key'));
    assert.ok(!plans.some((p) => p.files.some((f) => f.path.endsWith('ca.key'))));
  });
});
