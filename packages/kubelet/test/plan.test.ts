// The pod worker's planner (computePodActions and friends), case by case: a pod
// and what the runtime runs for it in, the actions (with their reasons) out.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ContainerState, ContainerStatus, PodSandboxStatus, SandboxState } from '@kubit/cri';
import type { Container, Pod, PodSpec } from 'kubernetes-types/core/v1.js';
import { Backoff } from '../src/pods/backoff.js';
import {
  CONTAINER_HASH_ANNOTATION,
  CONTAINER_NAME_LABEL,
  RESTART_COUNT_ANNOTATION,
} from '../src/pods/labels.js';
import type { Observed } from '../src/pods/observed.js';
import {
  computePodActions,
  computeTerminationActions,
  imageStep,
  type PlanInput,
  type PodActions,
} from '../src/pods/plan.js';
import { containerConfig, containerHash, imagePullPolicy } from '../src/pods/runtime-config.js';
import { makePod } from './helpers.js';

const BACKOFF = { initialMs: 10_000, maxMs: 300_000, resetMs: 600_000 };
/** The planner's clock (inside the backoff), in ms; container times are ns. */
const NOW = 1_000_000_000;
const ns = (ms: number) => ms * 1e6;

const web: Container = { name: 'web', image: 'nginx:1.25' };
const side: Container = { name: 'side', image: 'busybox:1' };

function sandbox(id: string, state: SandboxState = 'SANDBOX_READY', attempt = 0): PodSandboxStatus {
  return {
    id,
    metadata: { name: 'p', uid: 'uid-1', namespace: 'default', attempt },
    state,
    createdAt: 0,
    labels: {},
    annotations: {},
    network: { ip: '10.88.0.5', additionalIps: [] },
  };
}

interface InstanceOpts {
  exitCode?: number;
  restartCount?: number;
  /** When it ran, in ms of the planner's clock. */
  startedAtMs?: number;
  finishedAtMs?: number;
  /** The spec it was created from (default: the container itself). */
  createdFrom?: Container;
}

function instance(id: string, c: Container, state: ContainerState, o: InstanceOpts = {}): ContainerStatus {
  const exited = state === 'CONTAINER_EXITED';
  return {
    id,
    metadata: { name: c.name, attempt: o.restartCount ?? 0 },
    state,
    createdAt: 0,
    startedAt: ns(o.startedAtMs ?? NOW - 60_000),
    finishedAt: exited ? ns(o.finishedAtMs ?? NOW - 1_000) : 0,
    exitCode: o.exitCode ?? 0,
    image: { image: c.image ?? '' },
    imageRef: 'sha256:ab',
    reason: '',
    message: '',
    labels: { [CONTAINER_NAME_LABEL]: c.name },
    annotations: {
      [RESTART_COUNT_ANNOTATION]: String(o.restartCount ?? 0),
      [CONTAINER_HASH_ANNOTATION]: containerHash(o.createdFrom ?? c),
    },
    logPath: '',
  };
}

function observed(sb: PodSandboxStatus | undefined, instances: ContainerStatus[] = [], stale: string[] = []) {
  const byName = new Map<string, ContainerStatus[]>();
  for (const s of instances) byName.set(s.metadata.name, [...(byName.get(s.metadata.name) ?? []), s]);
  return { sandbox: sb, staleSandboxIds: stale, instances: byName } satisfies Observed;
}

function pod(spec: Partial<PodSpec> = {}): Pod {
  const p = makePod('p', { containers: [web], ...spec });
  return { ...p, metadata: { ...p.metadata, uid: 'uid-1' } };
}

interface Case {
  name: string;
  pod?: Pod;
  observed: Observed;
  input?: Partial<PlanInput>;
  /** Crash backoff entries armed before planning: key → when they were armed (ms). */
  armed?: Record<string, number>;
  /** The actions, one line each (see summarize). */
  expect: string[];
  /** Each must match one of the actions' reasons. */
  reasons?: RegExp[];
}

/** The actions as short lines, so a case states them exactly. */
function summarize(a: PodActions): string[] {
  switch (a.kind) {
    case 'report-rejection':
      return ['report-rejection'];
    case 'finished':
      return [`finished stop-sandbox=${a.stopSandboxId ?? '-'}`];
    case 'wait-for-network':
      return [`wait-for-network: ${a.message}`];
    case 'kill-remains':
      return [`kill-remains ${a.containerIdsToKill.join(',')}`];
    case 'run': {
      const lines: string[] = [];
      if (a.killSandbox)
        lines.push(`kill-sandbox ${a.killSandbox.id} containers=${a.killSandbox.containerIds}`);
      if (a.createSandbox) lines.push(`create-sandbox attempt=${a.createSandbox.attempt}`);
      if (a.carryRestarts?.size) lines.push(`carry ${[...a.carryRestarts].map(([n, c]) => `${n}=${c}`)}`);
      if (a.sandboxesToRemove.length) lines.push(`remove-sandboxes ${a.sandboxesToRemove}`);
      for (const c of a.containers) {
        const name = c.container.name;
        if (c.kind === 'start') {
          const flags = [c.isInit && 'init', c.countsAsCrash && 'crash', c.resetBackoff && 'reset-backoff'];
          lines.push(
            `start ${name} restart=${c.restartCount}${flags
              .filter(Boolean)
              .map((f) => ` ${f}`)
              .join('')}${c.targetContainerId ? ` target=${c.targetContainerId}` : ''}`,
          );
        } else if (c.kind === 'start-created') lines.push(`start-created ${name} ${c.id}`);
        else if (c.kind === 'kill') lines.push(`kill ${name} ${c.id}${c.respecify ? ' respecify' : ''}`);
        else if (c.kind === 'back-off')
          lines.push(`back-off ${name} delay=${c.delayMs} left=${c.remainingMs}`);
        else lines.push(`leave-exited ${name}`);
      }
      return lines;
    }
  }
}

function reasonsOf(a: PodActions): string[] {
  if (a.kind === 'finished' || a.kind === 'kill-remains') return [a.reason];
  if (a.kind !== 'run') return [];
  return [
    a.killSandbox?.reason ?? '',
    a.createSandbox?.reason ?? '',
    ...a.containers.map((c) => `${c.container.name}: ${c.reason}`),
  ].filter(Boolean);
}

const initPod = (spec: Partial<PodSpec> = {}) =>
  pod({
    initContainers: [
      { name: 'init-1', image: 'busybox:1' },
      { name: 'init-2', image: 'busybox:1' },
    ],
    containers: [web],
    ...spec,
  });
const init1: Container = { name: 'init-1', image: 'busybox:1' };
const init2: Container = { name: 'init-2', image: 'busybox:1' };

const debug: Container = { name: 'debugger', image: 'busybox:1' };
const debugPod = pod({ ephemeralContainers: [{ ...debug, targetContainerName: 'web' }] });

const cases: Case[] = [
  {
    name: 'an ephemeral container added to a running pod starts, in its target container PID namespace',
    pod: debugPod,
    observed: observed(sandbox('sb-1'), [instance('c-1', web, 'CONTAINER_RUNNING')]),
    expect: ['start debugger restart=0 target=c-1'],
    reasons: [/debugger: ephemeral container not started yet/],
  },
  {
    name: 'an ephemeral container that exited is never started again',
    pod: debugPod,
    observed: observed(sandbox('sb-1'), [
      instance('c-1', web, 'CONTAINER_RUNNING'),
      instance('e-1', debug, 'CONTAINER_EXITED', { exitCode: 1 }),
    ]),
    expect: [],
  },
  {
    name: 'a new sandbox starts the pod containers but not its ephemeral ones',
    pod: debugPod,
    observed: observed(sandbox('sb-1', 'SANDBOX_NOTREADY'), [
      instance('c-1', web, 'CONTAINER_EXITED'),
      instance('e-1', debug, 'CONTAINER_EXITED'),
    ]),
    expect: [
      'kill-sandbox sb-1 containers=',
      'create-sandbox attempt=1',
      'carry web=1,debugger=1',
      'remove-sandboxes sb-1',
      'start web restart=1',
    ],
  },
  {
    name: 'a new pod: a sandbox (attempt 0), then its container',
    observed: observed(undefined),
    expect: ['create-sandbox attempt=0', 'start web restart=0'],
    reasons: [/no sandbox/, /web: not started yet/],
  },
  {
    name: 'a new pod with two containers starts both, in spec order',
    pod: pod({ containers: [web, side] }),
    observed: observed(undefined),
    expect: ['create-sandbox attempt=0', 'start web restart=0', 'start side restart=0'],
  },
  {
    name: 'a running, healthy container: nothing to do',
    observed: observed(sandbox('sb-1'), [instance('c-1', web, 'CONTAINER_RUNNING')]),
    expect: [],
  },
  {
    name: 'stale sandboxes are removed while the current one is ready',
    observed: observed(
      sandbox('sb-2', 'SANDBOX_READY', 1),
      [instance('c-1', web, 'CONTAINER_RUNNING')],
      ['sb-1'],
    ),
    expect: ['remove-sandboxes sb-1'],
  },
  {
    name: 'a sandbox without the container yet (its creation failed last time): the container starts',
    observed: observed(sandbox('sb-1')),
    input: { carriedRestarts: new Map([['web', 4]]) },
    expect: ['start web restart=4'],
  },
  {
    name: 'a created container that never started is started',
    observed: observed(sandbox('sb-1'), [instance('c-1', web, 'CONTAINER_CREATED')]),
    expect: ['start-created web c-1'],
  },
  {
    name: 'restartPolicy Always: exit 0 restarts, and counts as a crash',
    observed: observed(sandbox('sb-1'), [
      instance('c-1', web, 'CONTAINER_EXITED', { exitCode: 0, restartCount: 2 }),
    ]),
    expect: ['start web restart=3 crash'],
    reasons: [/web: exited with code 0; restartPolicy Always/],
  },
  {
    name: 'restartPolicy Always: a non-zero exit restarts',
    observed: observed(sandbox('sb-1'), [instance('c-1', web, 'CONTAINER_EXITED', { exitCode: 137 })]),
    expect: ['start web restart=1 crash'],
  },
  {
    name: 'restartPolicy OnFailure: exit 0 stays exited',
    pod: pod({ restartPolicy: 'OnFailure' }),
    observed: observed(sandbox('sb-1'), [instance('c-1', web, 'CONTAINER_EXITED', { exitCode: 0 })]),
    expect: ['leave-exited web'],
    reasons: [/web: exited with code 0; restartPolicy OnFailure does not restart it/],
  },
  {
    name: 'restartPolicy OnFailure: a non-zero exit restarts',
    pod: pod({ restartPolicy: 'OnFailure' }),
    observed: observed(sandbox('sb-1'), [instance('c-1', web, 'CONTAINER_EXITED', { exitCode: 1 })]),
    expect: ['start web restart=1 crash'],
  },
  {
    name: 'restartPolicy Never: exit 0 stays exited',
    pod: pod({ restartPolicy: 'Never' }),
    observed: observed(sandbox('sb-1'), [instance('c-1', web, 'CONTAINER_EXITED', { exitCode: 0 })]),
    expect: ['leave-exited web'],
  },
  {
    name: 'restartPolicy Never: a non-zero exit stays exited',
    pod: pod({ restartPolicy: 'Never' }),
    observed: observed(sandbox('sb-1'), [instance('c-1', web, 'CONTAINER_EXITED', { exitCode: 2 })]),
    expect: ['leave-exited web'],
  },
  {
    name: 'a crashed container within its backoff waits it out (delay and time left from the backoff)',
    observed: observed(sandbox('sb-1'), [
      instance('c-1', web, 'CONTAINER_EXITED', { exitCode: 1, finishedAtMs: NOW - 4_000, restartCount: 1 }),
    ]),
    armed: { 'uid-1/web': NOW - 5_000 },
    expect: ['back-off web delay=10000 left=6000'],
    reasons: [/web: exited with code 1; waiting out its crash backoff/],
  },
  {
    name: 'a crashed container whose backoff has passed restarts',
    observed: observed(sandbox('sb-1'), [
      instance('c-1', web, 'CONTAINER_EXITED', { exitCode: 1, finishedAtMs: NOW - 11_000, restartCount: 1 }),
    ]),
    armed: { 'uid-1/web': NOW - 12_000 },
    expect: ['start web restart=2 crash'],
  },
  {
    name: 'a container that ran longer than the reset time restarts at once and resets its backoff',
    observed: observed(sandbox('sb-1'), [
      instance('c-1', web, 'CONTAINER_EXITED', {
        exitCode: 1,
        startedAtMs: NOW - 700_000,
        finishedAtMs: NOW - 1_000,
      }),
    ]),
    armed: { 'uid-1/web': NOW - 2_000 },
    expect: ['start web restart=1 crash reset-backoff'],
  },
  {
    name: 'a running container whose spec changed is killed, to be started again from the new spec',
    pod: pod({ containers: [{ ...web, image: 'nginx:1.26' }] }),
    observed: observed(sandbox('sb-1'), [instance('c-1', web, 'CONTAINER_RUNNING')]),
    expect: ['kill web c-1 respecify'],
    reasons: [/web: definition changed/],
  },
  {
    name: 'a container killed for a spec change starts again even under restartPolicy Never, in back-off or not',
    pod: pod({ restartPolicy: 'Never', containers: [{ ...web, image: 'nginx:1.26' }] }),
    observed: observed(sandbox('sb-1'), [
      instance('c-1', web, 'CONTAINER_EXITED', { exitCode: 137, finishedAtMs: NOW - 100 }),
    ]),
    input: { respecified: new Set(['web']) },
    armed: { 'uid-1/web': NOW - 200 },
    expect: ['start web restart=1'],
    reasons: [/web: its spec changed/],
  },
  {
    name: 'a failed liveness probe kills the container (the next sync restarts it)',
    observed: observed(sandbox('sb-1'), [instance('c-1', web, 'CONTAINER_RUNNING')]),
    input: { failedProbes: new Map([['c-1', 'Liveness']]) },
    expect: ['kill web c-1'],
    reasons: [/web: failed liveness probe/],
  },
  {
    name: 'a failed probe of an older instance does not touch the running one',
    observed: observed(sandbox('sb-1'), [instance('c-2', web, 'CONTAINER_RUNNING')]),
    input: { failedProbes: new Map([['c-1', 'Startup']]) },
    expect: [],
  },
  {
    name: 'a dead sandbox: its running containers and it are killed; a new one (attempt + 1) runs them again',
    pod: pod({ containers: [web, side] }),
    observed: observed(
      sandbox('sb-2', 'SANDBOX_NOTREADY', 3),
      [
        instance('c-1', web, 'CONTAINER_RUNNING', { restartCount: 1 }),
        instance('c-2', side, 'CONTAINER_EXITED', { exitCode: 1, restartCount: 5 }),
      ],
      ['sb-1'],
    ),
    armed: { 'uid-1/side': NOW - 100 },
    expect: [
      'kill-sandbox sb-2 containers=c-1',
      'create-sandbox attempt=4',
      'carry web=2,side=6',
      'remove-sandboxes sb-1,sb-2',
      'start web restart=2',
      'start side restart=6',
    ],
    reasons: [/sandbox is not ready/],
  },
  {
    name: 'a dead sandbox under restartPolicy Never: what is left is killed and nothing runs again',
    pod: pod({ restartPolicy: 'Never', containers: [web, side] }),
    observed: observed(sandbox('sb-1', 'SANDBOX_NOTREADY'), [
      instance('c-1', web, 'CONTAINER_RUNNING'),
      instance('c-2', side, 'CONTAINER_EXITED'),
    ]),
    expect: ['kill-remains c-1'],
    reasons: [/restartPolicy is Never/],
  },
  {
    name: 'a dead sandbox under restartPolicy Never that ran nothing yet gets a new one',
    pod: pod({ restartPolicy: 'Never' }),
    observed: observed(sandbox('sb-1', 'SANDBOX_NOTREADY')),
    expect: [
      'kill-sandbox sb-1 containers=',
      'create-sandbox attempt=1',
      'remove-sandboxes sb-1',
      'start web restart=0',
    ],
  },
  {
    name: 'no sandbox while the node has no pod network: wait',
    observed: observed(undefined),
    input: { nodeNetworkProblem: 'no CNI config' },
    expect: ['wait-for-network: no CNI config'],
  },
  {
    name: 'a hostNetwork pod does not wait for the pod network',
    pod: pod({ hostNetwork: true }),
    observed: observed(undefined),
    input: { nodeNetworkProblem: 'no CNI config' },
    expect: ['create-sandbox attempt=0', 'start web restart=0'],
  },
  {
    name: 'a ready sandbox does not wait for the pod network either',
    observed: observed(sandbox('sb-1'), [instance('c-1', web, 'CONTAINER_RUNNING')]),
    input: { nodeNetworkProblem: 'no CNI config' },
    expect: [],
  },
  {
    name: 'a pod refused at admission only reports it',
    observed: observed(undefined),
    input: { rejected: true },
    expect: ['report-rejection'],
  },
  {
    name: 'a finished pod stops its ready sandbox and keeps its containers',
    observed: observed(sandbox('sb-1'), [instance('c-1', web, 'CONTAINER_EXITED')]),
    input: { finished: true },
    expect: ['finished stop-sandbox=sb-1'],
  },
  {
    name: 'a finished pod whose sandbox is stopped already: nothing to stop',
    observed: observed(sandbox('sb-1', 'SANDBOX_NOTREADY'), [instance('c-1', web, 'CONTAINER_EXITED')]),
    input: { finished: true },
    expect: ['finished stop-sandbox=-'],
  },
  {
    name: 'init containers: a new pod starts only the first',
    pod: initPod(),
    observed: observed(undefined),
    expect: ['create-sandbox attempt=0', 'start init-1 restart=0 init'],
  },
  {
    name: 'init containers: the next starts once the one before succeeded',
    pod: initPod(),
    observed: observed(sandbox('sb-1'), [instance('i-1', init1, 'CONTAINER_EXITED', { exitCode: 0 })]),
    expect: ['start init-2 restart=0 init'],
  },
  {
    name: 'init containers: while one runs, nothing else starts',
    pod: initPod(),
    observed: observed(sandbox('sb-1'), [
      instance('i-1', init1, 'CONTAINER_EXITED', { exitCode: 0 }),
      instance('i-2', init2, 'CONTAINER_RUNNING'),
    ]),
    expect: [],
  },
  {
    name: 'init containers: a failed one restarts (restartPolicy Always)',
    pod: initPod(),
    observed: observed(sandbox('sb-1'), [instance('i-1', init1, 'CONTAINER_EXITED', { exitCode: 1 })]),
    expect: ['start init-1 restart=1 init crash'],
  },
  {
    name: 'init containers: a failed one under restartPolicy Never fails the pod; nothing starts',
    pod: initPod({ restartPolicy: 'Never' }),
    observed: observed(sandbox('sb-1'), [instance('i-1', init1, 'CONTAINER_EXITED', { exitCode: 1 })]),
    expect: [],
  },
  {
    name: 'init containers: all succeeded, the containers start',
    pod: initPod(),
    observed: observed(sandbox('sb-1'), [
      instance('i-1', init1, 'CONTAINER_EXITED', { exitCode: 0 }),
      instance('i-2', init2, 'CONTAINER_EXITED', { exitCode: 0 }),
    ]),
    expect: ['start web restart=0'],
  },
];

for (const c of cases) {
  test(`plan: ${c.name}`, () => {
    let now = NOW;
    const crashBackoff = new Backoff(BACKOFF, () => now);
    for (const [key, at] of Object.entries(c.armed ?? {})) {
      now = at;
      crashBackoff.next(key);
    }
    now = NOW;
    const actions = computePodActions({
      pod: c.pod ?? pod(),
      observed: c.observed,
      rejected: false,
      finished: false,
      respecified: new Set(),
      carriedRestarts: new Map(),
      failedProbes: new Map(),
      crashBackoff,
      ...c.input,
    });
    assert.deepEqual(summarize(actions), c.expect);
    const reasons = reasonsOf(actions);
    for (const r of c.reasons ?? []) {
      assert.ok(
        reasons.some((s) => r.test(s)),
        `no reason matches ${r}: ${JSON.stringify(reasons)}`,
      );
    }
  });
}

test('plan: a deleted pod kills every running container, in any sandbox, with its grace period, then every sandbox', () => {
  const deleting = pod({ terminationGracePeriodSeconds: 30 });
  const p = { ...deleting, metadata: { ...deleting.metadata, deletionGracePeriodSeconds: 5 } };
  const listed = (s: ContainerStatus, podSandboxId: string) => ({ ...s, podSandboxId });
  const old = listed(instance('c-1', web, 'CONTAINER_EXITED'), 'sb-1');
  const running = listed(instance('c-2', web, 'CONTAINER_RUNNING'), 'sb-2');
  const other = listed(instance('c-3', side, 'CONTAINER_RUNNING'), 'sb-1');
  const actions = computeTerminationActions(p, {
    sandboxes: [sandbox('sb-1', 'SANDBOX_NOTREADY'), sandbox('sb-2')],
    containers: [old, running, other],
  });
  assert.deepEqual(actions, {
    gracePeriodSeconds: 5,
    containersToKill: [
      { id: 'c-2', name: 'web' },
      { id: 'c-3', name: 'side' },
    ],
    sandboxesToRemove: ['sb-1', 'sb-2'],
    reason: 'the pod is being deleted',
  });
  assert.equal(computeTerminationActions(pod(), { sandboxes: [], containers: [] }).gracePeriodSeconds, 1);
  const { terminationGracePeriodSeconds: _, ...spec } = pod().spec ?? { containers: [] };
  assert.equal(
    computeTerminationActions({ ...pod(), spec }, { sandboxes: [], containers: [] }).gracePeriodSeconds,
    30,
  );
});

test('plan: images — the default pull policy, and pull or not once ImageStatus answered', () => {
  const policies = [
    ['nginx', 'Always'],
    ['nginx:latest', 'Always'],
    ['nginx:1.25', 'IfNotPresent'],
    ['registry:5000/nginx', 'Always'],
    ['nginx@sha256:ab', 'IfNotPresent'],
  ];
  for (const [image, policy] of policies) assert.equal(imagePullPolicy({ name: 'c', image }), policy, image);
  assert.equal(imagePullPolicy({ name: 'c', image: 'nginx', imagePullPolicy: 'Never' }), 'Never');
  const steps: [policy: string, present: boolean, inPullBackoff: boolean, step: string][] = [
    ['IfNotPresent', true, false, 'use-present'],
    ['IfNotPresent', true, true, 'use-present'],
    ['IfNotPresent', false, false, 'pull'],
    ['IfNotPresent', false, true, 'pull-back-off'],
    ['Always', true, false, 'pull'],
    ['Always', false, true, 'pull-back-off'],
    ['Never', true, false, 'use-present'],
    ['Never', false, false, 'never-pull'],
    ['Never', false, true, 'never-pull'],
  ];
  for (const [policy, present, backoff, step] of steps) {
    assert.equal(
      imageStep(policy, present, backoff),
      step,
      `${policy} present=${present} backoff=${backoff}`,
    );
  }
});

test('container config: a Block volume is a device at its devicePath, an undefined one is a config error', () => {
  const pod = {
    metadata: { name: 'db', namespace: 'default', uid: 'u1' },
    spec: {
      containers: [
        { name: 'c', image: 'busybox', volumeDevices: [{ name: 'raw', devicePath: '/dev/xvda' }] },
      ],
      volumes: [{ name: 'raw', persistentVolumeClaim: { claimName: 'raw' } }],
    },
  };
  const input = {
    pod,
    ref: { uid: 'u1', name: 'db', namespace: 'default' },
    container: pod.spec.containers[0],
    env: [],
    restartCount: 0,
    volumePaths: new Map([['raw', '/k/pods/u1/volumeDevices/kubernetes.io~csi/raw']]),
    isInit: false,
  } as unknown as Parameters<typeof containerConfig>[0];
  assert.deepEqual(containerConfig(input).devices, [
    {
      containerPath: '/dev/xvda',
      hostPath: '/k/pods/u1/volumeDevices/kubernetes.io~csi/raw',
      permissions: 'rwm',
    },
  ]);
  assert.throws(
    () => containerConfig({ ...input, volumePaths: new Map() }),
    /volume "raw" is a device but not defined in the pod/,
  );
});

test('container config: an ephemeral container with a running target joins its PID namespace', () => {
  const pod = { metadata: { name: 'p', namespace: 'default', uid: 'u1' }, spec: { containers: [web] } };
  const input = {
    pod,
    ref: { uid: 'u1', name: 'p', namespace: 'default' },
    container: debug,
    env: [],
    restartCount: 0,
    volumePaths: new Map(),
    isInit: false,
  } as unknown as Parameters<typeof containerConfig>[0];
  assert.deepEqual(
    containerConfig({ ...input, targetContainerId: 'c-1' }).linux?.securityContext?.namespaceOptions,
    {
      network: 'POD',
      pid: 'TARGET',
      ipc: 'POD',
      targetId: 'c-1',
    },
  );
  assert.equal(containerConfig(input).linux?.securityContext?.namespaceOptions?.pid, 'CONTAINER');
});
