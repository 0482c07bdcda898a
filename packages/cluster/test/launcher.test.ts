import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { freshBundle } from '@kubit/daemon';
import { parseArgs } from '../src/args.js';
import {
  apiserverCommand,
  clusterCommands,
  controllerManagerCommand,
  type DaemonRunner,
  daemonEnv,
  kubeletCommand,
  schedulerCommand,
  storeCommands,
} from '../src/commands.js';
import {
  allPorts,
  type ClusterSettings,
  clusterPorts,
  DEFAULT_SETTINGS,
  mergeSettings,
  readSettings,
  validateSettings,
  writeSettings,
} from '../src/config.js';
import { envFileText } from '../src/env-files.js';
import { clusterLayout } from '../src/layout.js';
import { fillTemplate } from '../src/node-runtime.js';
import { parseNodeList } from '../src/probes.js';
import {
  isOurs,
  type ProcFs,
  readPidFile,
  runningPid,
  startDetached,
  stopByPidFile,
} from '../src/supervisor.js';
import { repoRoot, runWithOutput } from './helpers.js';

const runner: DaemonRunner = { repoRoot, nodePath: '/usr/bin/node', fromSource: false };
const temps: string[] = [];
async function temp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'kubit-cluster-unit-'));
  temps.push(d);
  return d;
}
after(async () => {
  for (const d of temps) await rm(d, { recursive: true, force: true });
});

describe('layout', () => {
  it('puts everything under the state dir, one directory per node', () => {
    const l = clusterLayout('/srv/kubit/.kubit', 2);
    assert.equal(l.stateDir, '/srv/kubit/.kubit');
    assert.equal(l.adminKubeconfig, '/srv/kubit/.kubit/kubeconfig');
    assert.equal(l.logFile('kubit-apiserver'), '/srv/kubit/.kubit/logs/kubit-apiserver.log');
    assert.equal(l.pidFile('kubit-apiserver'), '/srv/kubit/.kubit/run/kubit-apiserver.pid');
    assert.deepEqual(
      l.store.map((m) => m.name),
      ['store-1', 'store-2', 'store-3'],
    );
    assert.deepEqual(
      l.nodes.map((n) => n.name),
      ['node-1', 'node-2'],
    );
    assert.equal(l.nodes[1].socket, '/srv/kubit/.kubit/nodes/node-2/containerd.sock');
  });

  it('names bridges and CNI networks uniquely per cluster and node, within IFNAMSIZ', () => {
    const a = clusterLayout('/tmp/a', 50);
    const b = clusterLayout('/tmp/b', 50);
    const bridges = [...a.nodes, ...b.nodes].map((n) => n.bridge);
    assert.equal(new Set(bridges).size, 100);
    for (const br of bridges) assert.ok(br.length <= 15, `${br} is longer than 15 characters`);
    assert.notEqual(a.nodes[0].networkName, b.nodes[0].networkName);
    assert.equal(clusterLayout('/tmp/a/', 1).id, a.id, 'the id depends on the resolved path only');
  });
});

describe('settings and ports', () => {
  it('gives every process its own port, for the largest cluster and with an offset', () => {
    for (const s of [DEFAULT_SETTINGS, { ...DEFAULT_SETTINGS, nodes: 50, portOffset: 20000 }]) {
      const ports = allPorts(clusterPorts(s, 3));
      assert.equal(new Set(ports).size, ports.length);
      for (const p of ports) assert.ok(p > 0 && p < 65536);
    }
    assert.equal(clusterPorts({ ...DEFAULT_SETTINGS, portOffset: 100 }, 3).apiserver, 6543);
  });

  it('rejects bad settings with a message naming the problem', () => {
    assert.throws(() => validateSettings({ ...DEFAULT_SETTINGS, nodes: 0 }), /--nodes/);
    assert.throws(() => validateSettings({ ...DEFAULT_SETTINGS, portOffset: 60000 }), /--port-offset/);
    assert.throws(
      () => validateSettings({ ...DEFAULT_SETTINGS, clusterCidr: '10.244.0.0' }),
      /--cluster-cidr/,
    );
    assert.throws(
      () => validateSettings({ ...DEFAULT_SETTINGS, clusterCidr: '10.300.0.0/16' }),
      /--cluster-cidr/,
    );
    assert.throws(
      () => validateSettings({ ...DEFAULT_SETTINGS, nodes: 3, portOffset: 0, clusterCidr: '10.1.0.0/23' }),
      /room for fewer/,
    );
    assert.throws(() => validateSettings({ ...DEFAULT_SETTINGS, name: 'Bad_Name' }), /--name "Bad_Name"/);
    assert.throws(
      () => validateSettings({ ...DEFAULT_SETTINGS, serviceCidr: '10.96.0.0/8' }),
      /--service-cidr "10\.96\.0\.0\/8" must be an IPv4 CIDR from \/12 to \/24/,
    );
  });

  it('keeps a cluster on its saved ports and network; it may only grow', () => {
    const saved: ClusterSettings = {
      ...DEFAULT_SETTINGS,
      nodes: 2,
      portOffset: 7,
      clusterCidr: '10.99.0.0/16',
    };
    assert.deepEqual(mergeSettings(saved, {}), saved);
    assert.deepEqual(mergeSettings(saved, { nodes: 3 }), { ...saved, nodes: 3 });
    assert.throws(() => mergeSettings(saved, { nodes: 1 }), /cannot shrink/);
    assert.throws(() => mergeSettings(saved, { portOffset: 8 }), /portOffset=7/);
    assert.throws(() => mergeSettings(saved, { name: 'other' }), /name=kubit/);
    assert.deepEqual(mergeSettings(undefined, { nodes: 4 }), { ...DEFAULT_SETTINGS, nodes: 4 });
    assert.deepEqual(mergeSettings(undefined, {}, 'kubit-abc123').name, 'kubit-abc123');
  });

  it('reads back what it wrote, and names a broken cluster.json', async () => {
    const dir = await temp();
    const file = join(dir, 'cluster.json');
    assert.equal(readSettings(file), undefined);
    const written = {
      ...DEFAULT_SETTINGS,
      name: 'two',
      nodes: 3,
      portOffset: 1,
      clusterCidr: '10.50.0.0/16',
    };
    await writeSettings(file, written);
    assert.deepEqual(readSettings(file), written);
    // A file from before names and Service ranges: the defaults it ran with, and the name it is given.
    await writeFile(file, '{"nodes": 2, "portOffset": 0, "clusterCidr": "10.244.0.0/16"}');
    assert.deepEqual(readSettings(file, 'kubit-old'), { ...DEFAULT_SETTINGS, name: 'kubit-old' });
    await writeFile(file, '{nope');
    assert.throws(() => readSettings(file), /cluster\.json is not valid JSON/);
    await writeFile(file, '{"nodes": 0}');
    assert.throws(() => readSettings(file), /--nodes/);
  });
});

describe('launcher arguments', () => {
  it('parses up, down and status with both flag spellings', () => {
    const a = parseArgs(['up', '--nodes', '3', '--state-dir=/x', '--port-offset=10', '--timeout', '30']);
    assert.equal(a.command, 'up');
    assert.deepEqual(a.settings, { nodes: 3, portOffset: 10 });
    assert.equal(a.stateDir, '/x');
    assert.equal(a.timeoutMs, 30_000);
    assert.equal(parseArgs(['down', '--purge']).purge, true);
    assert.equal(parseArgs(['down']).purge, false);
    assert.equal(parseArgs(['status']).command, 'status');
  });

  it('refuses unknown commands, unknown flags and bad numbers', () => {
    assert.throws(() => parseArgs([]), /unknown command/);
    assert.throws(() => parseArgs(['start']), /unknown command "start"/);
    assert.throws(() => parseArgs(['up', '--purge']), /unknown flag --purge/);
    assert.throws(() => parseArgs(['up', '--nodes', 'two']), /--nodes needs a whole number/);
    assert.throws(() => parseArgs(['up', '--nodes']), /--nodes needs a whole number/);
  });
});

describe('command lines', () => {
  const layout = clusterLayout('/var/lib/kubit-state', 2);
  const settings = { ...DEFAULT_SETTINGS, portOffset: 1000 };
  const ports = clusterPorts(settings, 3);
  const all = clusterCommands(layout, ports, settings, runner);

  it('mentions the state dir in every command line, which is how down recognizes its processes', () => {
    for (const c of all) {
      assert.ok(
        c.args.some((a) => a.includes(layout.stateDir)),
        `${c.name}: ${c.args.join(' ')}`,
      );
    }
    assert.equal(new Set(all.map((c) => c.name)).size, all.length, 'names (log and PID files) are unique');
  });

  it('builds a 3-member store over TLS that every member agrees on', () => {
    const stores = storeCommands(layout, ports, runner);
    const clusters = stores.map((c) => c.args.find((a) => a.startsWith('--initial-cluster='))!);
    assert.equal(new Set(clusters).size, 1);
    assert.equal(
      clusters[0],
      '--initial-cluster=store-1=https://127.0.0.1:3380,store-2=https://127.0.0.1:3390,store-3=https://127.0.0.1:3400',
    );
    assert.ok(stores[0].args.includes('--client-cert-auth'));
    assert.ok(stores[0].args.includes('--data-dir=/var/lib/kubit-state/store/store-1'));
    const built = join(repoRoot, 'packages/store/dist/src/main.js');
    assert.equal(
      stores[0].args[0],
      freshBundle(built) ?? built,
      'the built daemon, bundled when the bundle is fresh',
    );
  });

  it('points the apiserver at every member and the controller manager at node IPAM', () => {
    const api = apiserverCommand(layout, ports, settings, runner);
    assert.ok(
      api.args.includes(
        '--etcd-servers=https://127.0.0.1:3379,https://127.0.0.1:3389,https://127.0.0.1:3399',
      ),
    );
    assert.ok(api.args.includes('--secure-port=7443'));
    assert.ok(api.args.includes('--service-cluster-ip-range=10.96.0.0/12'));
    const cm = controllerManagerCommand(layout, ports, settings, runner);
    assert.ok(cm.args.includes('--allocate-node-cidrs=true'));
    assert.ok(cm.args.includes('--cluster-cidr=10.244.0.0/16'));
  });

  it('gives each kubelet its own runtime socket, port, name and certificates', () => {
    const [k1, k2] = layout.nodes.map((n) => kubeletCommand(layout, n, ports, settings, runner));
    assert.ok(
      k1.args.includes(
        '--container-runtime-endpoint=unix:///var/lib/kubit-state/nodes/node-1/containerd.sock',
      ),
    );
    assert.ok(k2.args.includes('--hostname-override=node-2'));
    assert.ok(k1.args.includes('--port=11300') && k2.args.includes('--port=11301'));
    assert.ok(k2.args.includes('--tls-cert-file=/var/lib/kubit-state/pki/kubelet-node-2-server.crt'));
    assert.ok(!k1.args.some((a) => a.startsWith('--pod-cidr')), 'the pod subnet comes from node IPAM');
    // The kubelet writes its node's CNI network into the conf dir of its own containerd.
    assert.ok(k2.args.includes(`--cni-conf-dir=${layout.nodes[1].cniConfDir}`));
    assert.ok(k2.args.includes(`--cni-bridge-name=${layout.nodes[1].bridge}`));
    assert.ok(k2.args.includes(`--cni-network-name=${layout.nodes[1].networkName}`));
    assert.notEqual(layout.nodes[0].bridge, layout.nodes[1].bridge);
    assert.ok(
      k1.args.includes(`--cni-conf-template=${join(repoRoot, 'deploy/containerd/10-kubit.conflist.tmpl')}`),
    );
  });

  it('runs daemons from the TypeScript sources when asked', () => {
    const src = schedulerCommand(layout, ports, { ...runner, fromSource: true });
    assert.deepEqual(src.args.slice(0, 4), [
      '--conditions=kubit-source',
      '--import',
      'tsx',
      join(repoRoot, 'packages/scheduler/src/main.ts'),
    ]);
  });

  it('writes systemd env files with the flags only', () => {
    const text = envFileText(schedulerCommand(layout, ports, runner), runner);
    assert.match(text, /^KUBIT_ROOT=/m);
    const args = /^KUBIT_ARGS="(.*)"$/m.exec(text)?.[1] ?? '';
    assert.ok(args.startsWith('--kubeconfig=/var/lib/kubit-state/kubeconfigs/scheduler.kubeconfig'), args);
    assert.ok(!args.includes('main.js'));
    const spaced = schedulerCommand(clusterLayout('/a b', 1), ports, runner);
    assert.throws(() => envFileText(spaced, runner), /whitespace/);
  });
});

describe('daemon bundles (scripts/bundle.mjs, part of pnpm build)', () => {
  // The launcher runs these when fresh: a bundle that cannot load its dependencies
  // (a package left outside it that Node cannot resolve from there, say) must fail here.
  for (const [pkg, entry, usage] of [
    ['store', 'main', 'kubit-store'],
    ['apiserver', 'main', 'kubit-apiserver'],
    ['scheduler', 'main', 'kubit-scheduler'],
    ['controllers', 'main', 'kubit-controller-manager'],
    ['kubelet', 'main', 'kubit-kubelet'],
    ['kubelet', 'hollow', 'kubit-hollow'],
    ['proxy', 'main', 'kubit-proxy'],
    ['net', 'main', 'kubit-net'],
    ['dns', 'main', 'kubit-dns'],
  ]) {
    it(`${pkg}/dist/src/${entry}.bundle.mjs is fresh and loads`, async () => {
      const built = join(repoRoot, 'packages', pkg, 'dist', 'src', `${entry}.js`);
      const bundle = freshBundle(built);
      assert.ok(bundle, `no fresh bundle beside ${built}: run pnpm build`);
      const { code, out } = await runWithOutput(process.execPath, [bundle, '--help'], {
        stdin: 'ignore',
        until: 'exit',
        timeoutMs: 120_000,
      });
      assert.equal(code, 0, `exit ${code}:\n${out}`);
      assert.match(out, new RegExp(`^Usage: ${usage} `));
    });
  }
});

describe('daemon environment and systemd units', () => {
  it("adds the V8 flags and JSON logs, keeping a person's own NODE_OPTIONS last so they win", () => {
    const env = daemonEnv({ PATH: '/bin', NODE_OPTIONS: '--max-semi-space-size=8' });
    assert.equal(env.PATH, '/bin');
    assert.equal(env.KUBIT_LOG_FORMAT, 'json');
    assert.equal(env.NODE_OPTIONS, '--max-semi-space-size=1 --max-semi-space-size=8');
    assert.equal(daemonEnv({}).NODE_OPTIONS, '--max-semi-space-size=1');
  });

  it('has a unit for every supervised process, reading the env file env-files writes for it', async () => {
    const layout = clusterLayout('/var/lib/kubit-state', 2);
    const ports = clusterPorts(DEFAULT_SETTINGS, 3);
    const units: Record<string, { unit: string; instance?: string }> = {
      'kubit-store-1': { unit: 'kubit-store@.service', instance: '1' },
      registry: { unit: 'kubit-registry.service' },
      'containerd-node-2': { unit: 'containerd-kubit@.service', instance: 'node-2' },
      'kubit-apiserver': { unit: 'kubit-apiserver.service' },
      'kubit-scheduler': { unit: 'kubit-scheduler.service' },
      'kubit-controller-manager': { unit: 'kubit-controller-manager.service' },
      'kubit-kubelet-node-2': { unit: 'kubit-kubelet@.service', instance: 'node-2' },
    };
    const names = clusterCommands(layout, ports, DEFAULT_SETTINGS, runner).map((c) => c.name);
    for (const [name, { unit, instance }] of Object.entries(units)) {
      assert.ok(names.includes(name), name);
      const text = await readFile(join(repoRoot, 'deploy/systemd', unit), 'utf8');
      const envFile = /^EnvironmentFile=(.*)$/m.exec(text)?.[1].replace('%i', instance ?? '');
      assert.equal(envFile, `/etc/kubit/${name}.env`, unit);
      assert.match(text, /^ExecStart=.*\$KUBIT_ARGS$/m, unit);
    }
  });
});

describe('node runtime templates', () => {
  it('fills every placeholder and refuses one without a value', () => {
    assert.equal(fillTemplate('a={{A}} b={{B_C}}', { A: '1', B_C: '2' }), 'a=1 b=2');
    assert.throws(() => fillTemplate('{{MISSING}}', {}), /\{\{MISSING\}\} has no value/);
  });
});

describe('node list', () => {
  it('reads readiness, heartbeat and pod subnet', () => {
    const nodes = parseNodeList({
      items: [
        {
          metadata: { name: 'node-1' },
          spec: { podCIDR: '10.244.0.0/24' },
          status: {
            conditions: [
              { type: 'MemoryPressure', status: 'False' },
              { type: 'Ready', status: 'True', lastHeartbeatTime: '2026-01-01T00:00:01Z' },
            ],
          },
        },
        { metadata: { name: 'node-2' }, status: { conditions: [{ type: 'Ready', status: 'False' }] } },
      ],
    });
    assert.deepEqual(nodes, [
      {
        name: 'node-1',
        ready: true,
        readySince: Date.parse('2026-01-01T00:00:01Z'),
        podCidr: '10.244.0.0/24',
      },
      { name: 'node-2', ready: false },
    ]);
  });
});

describe('PID files', () => {
  const fake = (procs: Record<number, string[]>, zombies: number[] = []): ProcFs => ({
    cmdline: (pid) => procs[pid],
    isZombie: (pid) => zombies.includes(pid),
  });

  it('trusts a PID only while it runs our program with our state dir', () => {
    const procs = fake(
      {
        10: ['/usr/bin/node', '/repo/packages/store/dist/src/main.js', '--data-dir=/s/.kubit/store/store-1'],
        11: ['/usr/bin/node', '/other/app.js'],
        12: ['containerd', '--config', '/s/.kubit/nodes/node-1/containerd/config.toml'],
        13: ['/usr/bin/node', '--data-dir=/s/.kubit/x'],
      },
      [13],
    );
    assert.equal(isOurs(10, '/s/.kubit', '/usr/bin/node', procs), true);
    assert.equal(isOurs(10, '/t/.kubit', '/usr/bin/node', procs), false, 'another cluster');
    assert.equal(isOurs(11, '/s/.kubit', '/usr/bin/node', procs), false, 'a reused PID');
    assert.equal(isOurs(12, '/s/.kubit', 'containerd', procs), true);
    assert.equal(isOurs(12, '/s/.kubit', '/usr/bin/node', procs), false, 'another program');
    assert.equal(isOurs(13, '/s/.kubit', '/usr/bin/node', procs), false, 'a zombie');
    assert.equal(isOurs(99, '/s/.kubit', '/usr/bin/node', procs), false, 'no such process');
  });

  it('ignores PID files that hold no PID', async () => {
    const dir = await temp();
    const f = join(dir, 'x.pid');
    assert.equal(readPidFile(f), undefined);
    for (const text of ['', 'abc', '1', '-5', '12 13']) {
      await writeFile(f, text);
      assert.equal(readPidFile(f), undefined, JSON.stringify(text));
    }
    await writeFile(f, '4242\n');
    assert.equal(readPidFile(f), 4242);
  });

  it('never signals a process whose PID file points at something else', async () => {
    const dir = await temp();
    const pidFile = join(dir, 'run', 'victim.pid');
    // A process that is not ours: its command line does not mention the state dir.
    const victim = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      await new Promise((r) => victim.once('spawn', r));
      await mkdir(join(dir, 'run'));
      await writeFile(pidFile, `${victim.pid}\n`);
      assert.equal(await stopByPidFile(pidFile, dir, process.execPath, 1000), 'not-running');
      assert.equal(victim.exitCode, null);
      assert.ok(!victim.killed);
      process.kill(victim.pid as number, 0); // still there
      assert.equal(existsSync(pidFile), false, 'the stale PID file is removed');
    } finally {
      victim.kill('SIGKILL');
    }
  });

  it('starts a detached process, finds it by its PID file and stops it with SIGTERM', async () => {
    const dir = await temp();
    const pidFile = join(dir, 'run', 'sleeper.pid');
    const logFile = join(dir, 'logs', 'sleeper.log');
    const cmd = {
      name: 'sleeper',
      command: process.execPath,
      args: ['-e', "console.log('hello', process.argv[1]); setInterval(() => {}, 1000)", `${dir}/marker`],
    };
    const pid = await startDetached(cmd, logFile, pidFile, process.env, dir);
    assert.equal(readPidFile(pidFile), pid);
    assert.equal(runningPid(pidFile, dir, process.execPath), pid);
    // Its output goes to the log file (wait for it: the machine may be slow to start node).
    for (let i = 0; i < 200 && !/hello/.test(readFileSync(logFile, 'utf8')); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(await stopByPidFile(pidFile, dir, process.execPath, 5000), 'stopped');
    assert.equal(runningPid(pidFile, dir, process.execPath), undefined);
    assert.equal(existsSync(pidFile), false);
    assert.match(readFileSync(logFile, 'utf8'), /hello .*marker/);
  });
});
