// What people do to look into a running cluster, with the real kubectl against a
// real apiserver and a real kubit-kubelet on a real containerd (one shared stack):
// `kubectl proxy` and the pods/services proxy subresources (the Kubernetes Basics
// tutorial's URL), WebSocket upgrades through them, `kubectl debug` with an
// ephemeral container sharing its target's process namespace, `kubectl debug
// node/...`, the `kubectl logs` flags, `kubectl cp` both ways, `kubectl exec -it`
// and `kubectl attach -it` on a TTY.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect } from 'node:tls';
import { type KubeClient, resources } from '@kubit/client';
import { type ControlPlane, runCommand, startTestKubelet, type TestKubelet, waitFor } from '@kubit/testkit';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { type NodeStack, startNodeStack } from './node-stack.js';

const NODE = 'node-1';
const NS = 'default';
let stack: NodeStack;
let cp: ControlPlane;
let client: KubeClient;
let kubelet: TestKubelet;
let webIP = '';

const kubectl = (args: string[], stdin?: string, timeoutMs = 60_000) =>
  runCommand('kubectl', ['--kubeconfig', cp.kubeconfigPath, ...args], { stdin, timeoutMs });

async function runningPod(name: string, timeoutMs = 90_000): Promise<Pod> {
  return waitFor(
    `pod ${name} to run`,
    async () => {
      const p = await client.get<Pod>(resources.pods, name, { namespace: NS });
      return p.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.state?.running)
        ? p
        : undefined;
    },
    timeoutMs,
    250,
  );
}

before(async () => {
  stack = await startNodeStack(NODE, 'kubit-debugging-');
  ({ cp, client } = stack);
  kubelet = await startTestKubelet(cp, { node: NODE, containerd: stack.containerd, dir: stack.root.path });
  // What `kubectl debug node/...` must find under /host.
  await writeFile(join(stack.root.path, 'marker'), 'kubit-node-marker\n');
  await client.create(
    resources.pods,
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: NS, labels: { app: 'web' } },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: 'nginx', image: 'nginx:latest', ports: [{ containerPort: 80 }] },
          {
            // Answers one upgrade on 9000 with a 101 and a greeting, and logs what it was sent.
            name: 'upgrader',
            image: 'busybox:latest',
            command: [
              'sh',
              '-c',
              "while true; do printf 'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\nhello-from-pod' | nc -l -p 9000; done",
            ],
          },
        ],
      },
    },
    { namespace: NS },
  );
  const web = await runningPod('web');
  webIP = web.status?.podIP ?? '';
  await waitFor('nginx to answer on the pod IP', () => fetch(`http://${webIP}/`).catch(() => undefined));
  // A Service without a selector and its Endpoints written by hand (no controller manager here).
  await client.create(
    resources.services,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: NS },
      spec: { ports: [{ name: 'http', port: 8080, targetPort: 80 }] },
    },
    { namespace: NS },
  );
  await client.create(
    resources.endpoints,
    {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name: 'web', namespace: NS },
      subsets: [{ addresses: [{ ip: webIP }], ports: [{ name: 'http', port: 80 }] }],
    },
    { namespace: NS },
  );
});

after(async () => {
  await kubelet?.stop();
  await stack?.stop();
});

/**
 * Runs kubectl with its stdin kept open: writes `input`, waits for `expect` on its stdout,
 * then ends stdin. (containerd ends an attach when its client's stdin closes, so input
 * piped all at once would cut the answer off.)
 */
async function interactive(
  args: string[],
  input: string,
  expect: RegExp,
  timeoutMs = 90_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('kubectl', ['--kubeconfig', cp.kubeconfigPath, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
    if (expect.test(stdout)) child.stdin?.end('exit\n');
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  child.stdin?.write(input);
  const timer = setTimeout(() => child.kill(), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** `kubectl proxy --port=0`, and the address it printed. */
async function startKubectlProxy(): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn('kubectl', ['--kubeconfig', cp.kubeconfigPath, 'proxy', '--port=0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let printed = '';
  child.stdout?.on('data', (d: Buffer) => {
    printed += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    printed += d.toString();
  });
  const port = await waitFor(
    'kubectl proxy to print its port',
    async () => /Starting to serve on 127\.0\.0\.1:(\d+)/.exec(printed)?.[1],
  );
  return { child, base: `http://127.0.0.1:${port}` };
}

describe('kubectl proxy and the proxy subresources', () => {
  let proxy: { child: ChildProcess; base: string };
  before(async () => {
    proxy = await startKubectlProxy();
  });
  after(() => {
    proxy?.child.kill();
  });

  it("answers the tutorial's pods/NAME:80/proxy/ URL with nginx's page", async () => {
    const r = await fetch(`${proxy.base}/api/v1/namespaces/default/pods/web:80/proxy/`);
    assert.equal(r.status, 200);
    assert.match(await r.text(), /Welcome to nginx!/);
    // No port: the pod's first declared container port; a scheme may be named.
    const plain = await fetch(`${proxy.base}/api/v1/namespaces/default/pods/web/proxy/index.html`);
    assert.equal(plain.status, 200);
    assert.match(await plain.text(), /Welcome to nginx!/);
    const http = await fetch(`${proxy.base}/api/v1/namespaces/default/pods/http:web:80/proxy/`);
    assert.equal(http.status, 200);
  });

  it('passes the method and the backend status through, and redirects .../proxy to .../proxy/', async () => {
    const post = await fetch(`${proxy.base}/api/v1/namespaces/default/pods/web:80/proxy/`, {
      method: 'POST',
      body: 'x'.repeat(100_000),
    });
    // nginx refuses a POST to a static page itself: the answer is its, not the apiserver's.
    assert.equal(post.status, 405);
    assert.match(await post.text(), /nginx/);
    const missing = await fetch(`${proxy.base}/api/v1/namespaces/default/pods/web:80/proxy/nothing`);
    assert.equal(missing.status, 404);
    assert.match(await missing.text(), /nginx/);
    const bare = await kubectl(['get', '--raw', '/api/v1/namespaces/default/pods/web:80/proxy']);
    assert.match(bare.stdout, /Welcome to nginx!/, bare.stderr);
  });

  it('reaches a ready endpoint of a Service by port name or number', async () => {
    for (const id of ['web', 'web:http', 'web:8080', 'http:web:http']) {
      const r = await fetch(`${proxy.base}/api/v1/namespaces/default/services/${id}/proxy/`);
      assert.equal(r.status, 200, id);
      assert.match(await r.text(), /Welcome to nginx!/, id);
    }
    const raw = await kubectl(['get', '--raw', '/api/v1/namespaces/default/services/web:http/proxy/']);
    assert.match(raw.stdout, /Welcome to nginx!/, raw.stderr);
  });

  it('answers a port nothing listens on with a 503 naming it, and a missing pod or Service with a 404', async () => {
    const refused = await fetch(`${proxy.base}/api/v1/namespaces/default/pods/web:81/proxy/`);
    assert.equal(refused.status, 503);
    const status = (await refused.json()) as { kind: string; message: string; reason: string };
    assert.equal(status.kind, 'Status');
    assert.equal(status.reason, 'ServiceUnavailable');
    assert.match(
      status.message,
      new RegExp(`error trying to reach service: .*${webIP.replaceAll('.', '\\.')}:81`),
    );
    const ghost = await fetch(`${proxy.base}/api/v1/namespaces/default/pods/ghost:80/proxy/`);
    assert.equal(ghost.status, 404);
    assert.equal(((await ghost.json()) as { message: string }).message, 'pods "ghost" not found');
    const noSvc = await fetch(`${proxy.base}/api/v1/namespaces/default/services/ghost/proxy/`);
    assert.equal(noSvc.status, 404);
    const badPort = await fetch(`${proxy.base}/api/v1/namespaces/default/services/web:9999/proxy/`);
    assert.equal(badPort.status, 503);
    assert.match(
      ((await badPort.json()) as { message: string }).message,
      /no endpoints available for service "web:9999"/,
    );
    const badId = await fetch(`${proxy.base}/api/v1/namespaces/default/pods/ftp:web:80/proxy/`);
    assert.equal(badId.status, 400);
  });

  it('is authorized as the verb on pods/proxy', async () => {
    const can = await kubectl(['auth', 'can-i', 'create', 'pods/proxy', '--as', 'nobody']);
    assert.equal(can.stdout.trim(), 'no');
    const r = await kubectl([
      'get',
      '--raw',
      '/api/v1/namespaces/default/pods/web:80/proxy/',
      '--as',
      'nobody',
    ]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Forbidden|forbidden/);
  });

  it('passes a WebSocket upgrade through to the pod, and the bytes after it', async () => {
    const url = new URL(cp.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect({
        host: url.hostname,
        port: Number(url.port),
        cert: readFileSync(cp.pki.admin.cert),
        key: readFileSync(cp.pki.admin.key),
        ca: readFileSync(cp.pki.caFile),
      });
      let got = '';
      socket.on('secureConnect', () => {
        socket.write(
          'GET /api/v1/namespaces/default/pods/web:9000/proxy/chat?room=1 HTTP/1.1\r\n' +
            `Host: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\nclient-bytes\n',
        );
      });
      socket.on('data', (d: Buffer) => {
        got += d.toString();
        if (got.includes('hello-from-pod')) {
          socket.destroy();
          resolve(got);
        }
      });
      socket.on('error', reject);
      setTimeout(() => reject(new Error(`no upgrade answer; got ${JSON.stringify(got)}`)), 15_000).unref();
    });
    assert.match(answer, /^HTTP\/1\.1 101 Switching Protocols/);
    let logs = '';
    await waitFor('the upgrade request in the pod log', async () => {
      logs = (await kubectl(['logs', 'web', '-c', 'upgrader'])).stdout;
      return logs.includes('client-bytes');
    }).catch((err) => assert.fail(`${err}; the log: ${JSON.stringify(logs)}`));
    assert.match(logs, /GET \/chat\?room=1 HTTP\/1\.1/);
    assert.match(logs, /Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==/i);
  });
});

/** PATCHes pods/web/ephemeralcontainers as kubectl debug does (a strategic merge patch). */
async function patchEphemeral(name: string, containers: unknown[]) {
  return runCommand(
    'kubectl',
    [
      '--kubeconfig',
      cp.kubeconfigPath,
      'patch',
      'pod',
      name,
      '--subresource=ephemeralcontainers',
      '--type=strategic',
      '-p',
      JSON.stringify({ spec: { ephemeralContainers: containers } }),
    ],
    { timeoutMs: 30_000 },
  );
}

describe('kubectl debug', () => {
  it('runs an ephemeral container in the pod that sees its target container processes', async () => {
    const r = await interactive(
      ['debug', '-i', 'web', '--image=busybox:latest', '--target=nginx', '-c', 'dbg', '--', 'sh'],
      'ps\n',
      /nginx: master process/,
    );
    const diag = async () => {
      const p = await client.get<Pod>(resources.pods, 'web', { namespace: NS });
      const logs = await kubectl(['logs', 'web', '-c', 'dbg']);
      return `${r.stdout}\n${r.stderr}\nstatus: ${JSON.stringify(p.status?.ephemeralContainerStatuses)}\nspec: ${JSON.stringify(p.spec?.ephemeralContainers)}\nlogs: ${logs.stdout}${logs.stderr}`;
    };
    assert.equal(r.code, 0, await diag());
    assert.match(r.stdout, /nginx: master process/, await diag());
    const pod = await waitFor('the ephemeral container to be reported exited', async () => {
      const p = await client.get<Pod>(resources.pods, 'web', { namespace: NS });
      const s = p.status?.ephemeralContainerStatuses?.find((c) => c.name === 'dbg');
      return s?.state?.terminated ? p : undefined;
    });
    const dbg = pod.spec?.ephemeralContainers?.find((c) => c.name === 'dbg');
    assert.equal(dbg?.targetContainerName, 'nginx');
    const status = pod.status?.ephemeralContainerStatuses?.find((c) => c.name === 'dbg');
    assert.equal(status?.restartCount, 0);
    assert.equal(status?.state?.terminated?.exitCode, 0);
    // The pod itself is untouched: still Running and Ready with its own containers.
    assert.equal(pod.status?.phase, 'Running');
    assert.equal(pod.status?.containerStatuses?.length, 2);
    // Never started again, however often the pod syncs.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const later = await client.get<Pod>(resources.pods, 'web', { namespace: NS });
    const again = later.status?.ephemeralContainerStatuses?.find((c) => c.name === 'dbg');
    assert.ok(again?.state?.terminated, JSON.stringify(again));
    assert.equal(again?.restartCount, 0);
  });

  it('refuses what Kubernetes refuses in pods/ephemeralcontainers, naming the field', async () => {
    const current = await client.get<Pod>(resources.pods, 'web', { namespace: NS });
    const existing = current.spec?.ephemeralContainers ?? [];
    let r = await patchEphemeral('web', [
      { name: 'bad', image: 'busybox:latest', ports: [{ containerPort: 80 }] },
    ]);
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr,
      /spec\.ephemeralContainers\[\d\]\.ports: Forbidden: cannot be set for an Ephemeral Container/,
    );
    r = await patchEphemeral('web', [{ name: 'nginx', image: 'busybox:latest' }]);
    assert.match(r.stderr, /spec\.ephemeralContainers\[\d\]\.name: Duplicate value: "nginx"/);
    r = await patchEphemeral('web', [
      { name: 'lost', image: 'busybox:latest', targetContainerName: 'ghost' },
    ]);
    assert.match(r.stderr, /spec\.ephemeralContainers\[\d\]\.targetContainerName: Not found: "ghost"/);
    // Removing one through a full update is refused too.
    const replaced = await kubectl(
      ['replace', '--subresource=ephemeralcontainers', '-f', '-'],
      JSON.stringify({
        ...current,
        metadata: { ...current.metadata, resourceVersion: undefined },
        spec: { ...current.spec, ephemeralContainers: [] },
      }),
    );
    assert.notEqual(replaced.code, 0);
    assert.match(replaced.stderr, /existing ephemeral containers "dbg" may not be removed/);
    // A plain pod update may not touch them; a pod may not be created with them.
    const plain = await kubectl(
      ['replace', '-f', '-'],
      JSON.stringify({
        ...current,
        metadata: { ...current.metadata, resourceVersion: undefined },
        spec: { ...current.spec, ephemeralContainers: [...existing, { name: 'x', image: 'busybox:latest' }] },
      }),
    );
    assert.notEqual(plain.code, 0);
    assert.match(plain.stderr, /Forbidden: pod updates may not change fields/);
    const created = await kubectl(
      ['create', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'born-debugged' },
        spec: {
          containers: [{ name: 'c', image: 'busybox:latest' }],
          ephemeralContainers: [{ name: 'e', image: 'busybox:latest' }],
        },
      }),
    );
    assert.match(created.stderr, /spec\.ephemeralContainers: Forbidden: cannot be set on create/);
    // Nothing was half-written.
    const after = await client.get<Pod>(resources.pods, 'web', { namespace: NS });
    assert.deepEqual(after.spec?.ephemeralContainers, current.spec?.ephemeralContainers);
  });

  it('debugs a node: a pod on it with the host filesystem at /host, its PIDs and network', async () => {
    const r = await interactive(
      ['debug', `node/${NODE}`, '-i', '--image=busybox:latest', '--', 'sh'],
      `cat /host${stack.root.path}/marker; ls /proc | grep -c '^[0-9]'\n`,
      /kubit-node-marker\n\d+\n/,
    );
    const pods = await client.list<Pod>(resources.pods, { namespace: NS });
    const debugger_ = pods.items.find((p) => p.metadata?.name?.startsWith(`node-debugger-${NODE}-`));
    try {
      const events = await kubectl([
        'get',
        'events',
        '--field-selector',
        `involvedObject.name=${debugger_?.metadata?.name}`,
      ]);
      const why = `${r.stdout}\n${r.stderr}\n${JSON.stringify(debugger_?.status)}\n${events.stdout}`;
      assert.equal(r.code, 0, why);
      assert.match(r.stdout, /kubit-node-marker/, why);
      // The host's PID namespace: many more processes than a pod of its own would see.
      const pids = Number(/^(\d+)$/m.exec(r.stdout.replace('kubit-node-marker', ''))?.[1] ?? 0);
      assert.ok(pids > 10, `processes seen: ${pids}`);
      assert.equal(debugger_?.spec?.hostPID, true);
      assert.equal(debugger_?.spec?.hostNetwork, true);
    } finally {
      if (debugger_?.metadata?.name)
        await client.delete(resources.pods, debugger_.metadata.name, {
          namespace: NS,
          gracePeriodSeconds: 0,
        });
    }
  });
});
