// What the whole-cluster tests (up-down: the launcher on one machine; lab:
// kubit-install over ssh into network namespaces; compose) share: running Kubit's
// own entry points from their sources, polling until the cluster gets somewhere,
// asking a pod over HTTP, the pod that asks another pod, and the checks of the
// issue's manifest (examples/pod.yaml) once it runs.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { join, resolve } from 'node:path';

export const repoRoot = resolve(import.meta.dirname, '../../..');
/** The `kubit` command line's entry point. */
export const kubitCli = join(repoRoot, 'packages', 'cli', 'src', 'main.ts');

/**
 * node's arguments that run a Kubit entry point from its TypeScript sources, as
 * every test runs them (a dist/ may be stale).
 */
export function fromSources(entry: string, args: readonly string[] = []): string[] {
  return ['--conditions=kubit-source', '--import', 'tsx', entry, ...args];
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** Written to the child's stdin, which is then closed (default: closed at once). */
  input?: string;
  /** The child is killed (SIGKILL) when it runs longer. */
  timeoutMs: number;
  /**
   * 'close' (default) waits for the output streams too, so nothing of the end
   * is lost; 'exit' returns when the process ends, for one that leaves
   * daemons behind (the launcher), whose output must not keep us waiting.
   */
  until?: 'close' | 'exit';
  /** 'ignore' gives the child /dev/null as stdin (then `input` is not used). */
  stdin?: 'pipe' | 'ignore';
}

export interface RunResult {
  code: number | null;
  /** stdout and stderr interleaved as they came. */
  out: string;
  stdout: string;
}

/** Runs a command to the end with a time limit, collecting its output; never rejects. */
export function runWithOutput(command: string, args: string[], opts: RunOptions): Promise<RunResult> {
  return new Promise((res) => {
    const child = spawn(command, args, {
      cwd: repoRoot,
      env: opts.env ?? process.env,
      stdio: [opts.stdin ?? 'pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let stdout = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c;
      stdout += c;
    });
    child.stderr?.on('data', (c: Buffer) => {
      out += c;
    });
    if (child.stdin) {
      child.stdin.on('error', () => {});
      child.stdin.end(opts.input ?? '');
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.once(opts.until ?? 'close', (code: number | null) => {
      clearTimeout(timer);
      res({ code, out, stdout });
    });
  });
}

/** One GET without keep-alive; rejects on a connection error or after `timeoutMs` of silence. */
export function httpGet(url: string, timeoutMs = 5000): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    const req = request(url, { agent: false }, (r) => {
      let body = '';
      r.on('data', (c: Buffer) => {
        body += c;
      });
      r.on('end', () => res({ status: r.statusCode ?? 0, body }));
    });
    req.on('error', rej);
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
    req.end();
  });
}

/**
 * Polls `fn` every half second until it returns something other than
 * undefined; a throw counts as "not yet" and its message ends the timeout's
 * error, which says what was awaited.
 */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs: number,
): Promise<T> {
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

/** The other one of a two-node cluster's nodes. */
export function otherNode(node: string): string {
  return node === 'node-1' ? 'node-2' : 'node-1';
}

/** A pod pinned to `node` that fetches http://<ip>/ once: it Succeeds when the pod network reaches `ip`. */
export function clientPod(node: string, ip: string): string {
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

/** Runs `kubit` with these arguments (and optional stdin) against the cluster under test; resolves to stdout. */
export type KubitRunner = (args: string[], input?: string) => Promise<string>;

/** Waits until my-application runs with a pod IP; resolves to [pod IP, node name]. */
export async function waitForRunningApp(kubit: KubitRunner, timeoutMs: number): Promise<[string, string]> {
  return waitFor(
    'my-application to run with a pod IP',
    async () => {
      const out = await kubit([
        'get',
        'pod',
        'my-application',
        '-o',
        'jsonpath={.status.phase} {.status.podIP} {.spec.nodeName}',
      ]);
      const [phase, podIp, nodeName] = out.trim().split(' ');
      return phase === 'Running' && podIp && nodeName ? [podIp, nodeName] : undefined;
    },
    timeoutMs,
  );
}

export interface ServingApp {
  ip: string;
  node: string;
  /** The node's pod subnet (node.spec.podCIDR), which the pod IP must be in. */
  podCidr: string;
  /** How long one GET from the test may stay silent (a lab host is slower to answer). */
  httpTimeoutMs?: number;
}

/**
 * The issue's manifest at work: the pod IP is in its node's subnet, nginx answers
 * the test with its page, `kubit logs` shows the access line of that request, and
 * a pod on the other node reaches the pod IP too.
 */
export async function expectAppServing(kubit: KubitRunner, app: ServingApp): Promise<void> {
  const prefix = `${app.podCidr.split('.').slice(0, 3).join('.')}.`;
  assert.ok(app.podCidr && app.ip.startsWith(prefix), `pod IP ${app.ip} is in ${app.node}'s ${app.podCidr}`);
  const res = await waitFor(
    'nginx to answer the test',
    () => httpGet(`http://${app.ip}/`, app.httpTimeoutMs),
    30_000,
  );
  assert.equal(res.status, 200);
  assert.match(res.body, /Welcome to nginx/);
  await expectAccessLine(kubit);
  await expectReachableFrom(kubit, otherNode(app.node), app.ip);
}

/** `kubit logs my-application` shows nginx's access line for a GET of / (the request a test just made). */
export async function expectAccessLine(kubit: KubitRunner): Promise<void> {
  const logs = await waitFor(
    'the access line in kubit logs',
    async () => {
      const l = await kubit(['logs', 'my-application']);
      return /"GET \/ HTTP\/1\.1" 200/.test(l) ? l : undefined;
    },
    30_000,
  );
  assert.match(logs, /GET \/ HTTP\/1\.1/);
}

/** A pod on `node` fetches http://<ip>/ and gets nginx's page: the pod network reaches `ip` from there. */
export async function expectReachableFrom(kubit: KubitRunner, node: string, ip: string): Promise<void> {
  await kubit(['apply', '-f', '-'], clientPod(node, ip));
  const phase = await waitFor(
    'the client pod to finish',
    async () => {
      const p = (await kubit(['get', 'pod', 'client', '-o', 'jsonpath={.status.phase}'])).trim();
      return p === 'Succeeded' || p === 'Failed' ? p : undefined;
    },
    120_000,
  );
  assert.equal(phase, 'Succeeded', await kubit(['logs', 'client']).catch((e: Error) => e.message));
  assert.match(await kubit(['logs', 'client']), /Welcome to nginx/);
}

/** `kubit describe pod my-application` lists Scheduled, Pulling, Pulled, Created and Started, in that order. */
export async function expectStartEventsInOrder(kubit: KubitRunner, node: string): Promise<void> {
  const order = ['Scheduled', 'Pulling', 'Pulled', 'Created', 'Started'];
  const described = await waitFor(
    'the five events in kubit describe',
    async () => {
      const out = await kubit(['describe', 'pod', 'my-application']);
      const events = out.slice(out.indexOf('\nEvents:'));
      return order.every((r) => new RegExp(`\\b${r}\\b`).test(events)) ? events : undefined;
    },
    30_000,
  );
  const reasons = described
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[1])
    .filter((r) => order.includes(r));
  assert.deepEqual(reasons, order, described);
  assert.match(described, new RegExp(`Successfully assigned default/my-application to ${node}`));
  assert.match(described, /Pulling image "nginx:latest"/);
}

/** nginx behind a readiness probe, labelled app=web: what the Services checks put behind `kubectl expose`. */
export function webDeployment(replicas: number): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: ${replicas}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: nginx
        image: nginx:latest
        ports:
        - containerPort: 80
        readinessProbe:
          httpGet:
            path: /
            port: 80
          periodSeconds: 1
`;
}

/** A busybox pod that stays up, from which the Services checks run wget. */
export const SERVICE_CLIENT_POD = `apiVersion: v1
kind: Pod
metadata:
  name: svc-client
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: client
    image: busybox:latest
    command: ["sleep", "3600"]
`;
