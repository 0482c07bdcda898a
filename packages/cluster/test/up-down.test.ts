// The whole one-machine cluster, as a person runs it: the launcher brings up a
// 3-member store, the apiserver, scheduler, controller manager and two nodes
// (each its own containerd and pod subnet) in a temporary state dir; the real
// kubectl runs nginx on it; a pod on the other node reaches it by its pod IP;
// down and up resume it with the pod; then down stops every process by PID.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, '../../..');
const launcher = join(repoRoot, 'packages', 'cluster', 'src', 'main.ts');

const missing = [
  '/usr/bin/containerd',
  '/usr/bin/docker-registry',
  '/usr/lib/cni/bridge',
  '/usr/bin/kubectl',
].filter((f) => !existsSync(f));
const skip =
  process.getuid?.() !== 0
    ? 'needs root (containerd, CNI)'
    : missing.length > 0
      ? `missing ${missing.join(', ')}`
      : false;

/** Runs the launcher from its sources (it then runs the daemons from theirs: KUBIT_SOURCE=1). */
function launch(args: string[], timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((res) => {
    const child = spawn(
      process.execPath,
      ['--conditions=kubit-source', '--import', 'tsx', launcher, ...args],
      {
        cwd: repoRoot,
        env: { ...process.env, KUBIT_SOURCE: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      res({ code, out });
    });
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

function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = request(url, { agent: false }, (r) => {
      let body = '';
      r.on('data', (c: Buffer) => {
        body += c;
      });
      r.on('end', () => res({ status: r.statusCode ?? 0, body }));
    });
    req.on('error', rej);
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.end();
  });
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last}` : ''}`);
}

// The manifest of issue 9.
const NGINX_POD = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: nginx
    image: nginx:latest
    ports:
    - containerPort: 80
    resources:
      requests:
        cpu: 100m
        memory: 64Mi
      limits:
        cpu: 500m
        memory: 128Mi
`;

function clientPod(node: string, ip: string): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  nodeName: ${node}
  restartPolicy: Never
  containers:
  - name: wget
    image: busybox:latest
    command: ["wget", "-q", "-O", "-", "http://${ip}/"]
`;
}

describe('./scripts/up and ./scripts/down', { skip, timeout: 420_000 }, () => {
  let stateDir = '';
  let kubeconfig = '';
  const kubectl = async (args: string[], input?: string): Promise<string> => {
    if (input === undefined) return (await run('kubectl', ['--kubeconfig', kubeconfig, ...args])).stdout;
    return new Promise((res, rej) => {
      const child = execFile('kubectl', ['--kubeconfig', kubeconfig, ...args], (err, stdout, stderr) =>
        err ? rej(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : res(stdout),
      );
      child.stdin?.end(input);
    });
  };

  before(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'kubit-up-'));
    kubeconfig = join(stateDir, 'kubeconfig');
  });

  after(async () => {
    if (!stateDir) return;
    if (existsSync(join(stateDir, 'cluster.json'))) {
      const r = await launch(['down', '--purge', '--state-dir', stateDir], 120_000);
      if (r.code !== 0) process.stderr.write(`down --purge in clean-up failed:\n${r.out}\n`);
    }
    await rm(stateDir, { recursive: true, force: true });
  });

  it('starts two Ready nodes, runs nginx reachable across nodes, resumes, and stops every process', async (t) => {
    const offset = await freeOffset();
    const cidr = await freeClusterCidr();
    const upArgs = [
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
    const podCidrs = nodes
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    assert.deepEqual(
      podCidrs.map(([n]) => n),
      ['node-1', 'node-2'],
    );
    for (const [, c] of podCidrs)
      assert.ok(c?.startsWith(cidr.split('.').slice(0, 2).join('.')), `podCIDR ${c} in ${cidr}`);

    await kubectl(['apply', '-f', '-'], NGINX_POD);
    const [ip, node] = await waitFor(
      'pod web to run with an IP',
      async () => {
        const out = await kubectl([
          'get',
          'pod',
          'web',
          '-o',
          'jsonpath={.status.phase} {.status.podIP} {.spec.nodeName}',
        ]);
        const [phase, podIp, nodeName] = out.trim().split(' ');
        return phase === 'Running' && podIp ? [podIp, nodeName] : undefined;
      },
      150_000,
    );
    const nodeCidr = podCidrs.find(([n]) => n === node)?.[1] ?? '';
    assert.ok(
      ip.startsWith(nodeCidr.split('.').slice(0, 3).join('.')),
      `pod IP ${ip} is in ${node}'s ${nodeCidr}`,
    );
    const res = await waitFor('nginx to answer', () => httpGet(`http://${ip}/`), 30_000);
    assert.equal(res.status, 200);
    const logs = await waitFor(
      'the access line in kubectl logs',
      async () => {
        const l = await kubectl(['logs', 'web']);
        return /"GET \/ HTTP\/1\.1" 200/.test(l) ? l : undefined;
      },
      30_000,
    );
    assert.match(logs, /GET \/ HTTP\/1\.1/);

    // A pod on the other node reaches nginx by its pod IP (the host routes between the node bridges).
    const other = node === 'node-1' ? 'node-2' : 'node-1';
    await kubectl(['apply', '-f', '-'], clientPod(other, ip));
    const phase = await waitFor(
      'the client pod to finish',
      async () => {
        const p = (await kubectl(['get', 'pod', 'client', '-o', 'jsonpath={.status.phase}'])).trim();
        return p === 'Succeeded' || p === 'Failed' ? p : undefined;
      },
      120_000,
    );
    assert.equal(phase, 'Succeeded', await kubectl(['logs', 'client']).catch((e: Error) => e.message));
    assert.match(await kubectl(['logs', 'client']), /Welcome to nginx/);

    // down then up resumes the same cluster: same store, nodes and pod; the kubelet runs the pod again.
    const firstDown = await launch(['down', '--state-dir', stateDir], 120_000);
    assert.equal(firstDown.code, 0, `down failed:\n${firstDown.out}`);
    const resume = await launch(['up', '--state-dir', stateDir, '--timeout', '180'], 300_000);
    assert.equal(resume.code, 0, `resume failed:\n${resume.out}`);
    t.diagnostic(resume.out.trim());
    assert.match(resume.out, /started 11 processes/);
    const ipAgain = await waitFor(
      'pod web to run again after the resume',
      async () => {
        const out = await kubectl(['get', 'pod', 'web', '-o', 'jsonpath={.status.phase} {.status.podIP}']);
        const [p, podIp] = out.trim().split(' ');
        if (p !== 'Running' || !podIp) return undefined;
        return (await httpGet(`http://${podIp}/`)).status === 200 ? podIp : undefined;
      },
      150_000,
    );
    assert.ok(ipAgain.startsWith(nodeCidr.split('.').slice(0, 3).join('.')), `${ipAgain} in ${nodeCidr}`);

    await kubectl(['delete', 'pod', 'web', 'client', '--wait=false']);
    await waitFor(
      'the pods to be gone',
      async () => ((await kubectl(['get', 'pods', '-o', 'name'])).trim() === '' ? true : undefined),
      120_000,
    );

    const runDir = join(stateDir, 'run');
    const pids = readdirSync(runDir).map((f) => Number(readFileSync(join(runDir, f), 'utf8')));
    assert.equal(
      pids.length,
      11,
      'store x3, registry, apiserver, scheduler, controller manager, containerd x2, kubelet x2',
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
    assert.match(down.out, /Stopped 11 processes/);
    for (const pid of pids) {
      const cmdline = existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
      assert.ok(!cmdline.includes(stateDir), `process ${pid} (${cmdline.replace(/\0/g, ' ')}) still runs`);
    }
    assert.deepEqual(readdirSync(runDir), [], 'no PID files are left');
  });
});
