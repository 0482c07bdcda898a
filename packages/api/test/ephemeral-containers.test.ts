// pods/ephemeralcontainers' rules (validateEphemeralContainersUpdate) and a pod's create
// rule: each refusal names its field as Kubernetes does.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  applyDefaults,
  fieldErrorString,
  validateEphemeralContainersUpdate,
  validateObject,
} from '../src/index.js';

type Obj = Record<string, unknown>;

function runningPod(ephemeralContainers?: Obj[]): Obj {
  return applyDefaults({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', uid: 'u1', resourceVersion: '5' },
    spec: {
      nodeName: 'n1',
      containers: [{ name: 'nginx', image: 'nginx' }],
      ...(ephemeralContainers ? { ephemeralContainers } : {}),
    },
  }) as Obj;
}

const errorsOf = (next: Obj, old: Obj) => validateEphemeralContainersUpdate(next, old).map(fieldErrorString);

describe('ephemeral containers', () => {
  it("may be added to a pod, with a target container, and kubectl debug's empty resources", () => {
    const old = runningPod();
    const next = runningPod([
      { name: 'debugger', image: 'busybox', targetContainerName: 'nginx', stdin: true, resources: {} },
    ]);
    assert.deepEqual(errorsOf(next, old), []);
  });

  it('refuse the fields an ephemeral container may not have, naming each', () => {
    const next = runningPod([
      {
        name: 'debugger',
        image: 'busybox',
        ports: [{ containerPort: 80 }],
        readinessProbe: { exec: { command: ['true'] } },
        resources: { limits: { cpu: '1' } },
      },
    ]);
    assert.deepEqual(errorsOf(next, runningPod()).sort(), [
      'spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container',
      'spec.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container',
      'spec.ephemeralContainers[0].resources: Forbidden: cannot be set for an Ephemeral Container',
    ]);
  });

  it('need names unique across all containers, an image, and a target that exists', () => {
    const next = runningPod([
      { name: 'nginx', image: 'busybox' },
      { name: 'e2', image: '', targetContainerName: 'ghost' },
    ]);
    const errs = errorsOf(next, runningPod());
    assert.ok(errs.includes('spec.ephemeralContainers[0].name: Duplicate value: "nginx"'), errs.join('\n'));
    assert.ok(errs.includes('spec.ephemeralContainers[1].image: Required value'), errs.join('\n'));
    assert.ok(
      errs.includes('spec.ephemeralContainers[1].targetContainerName: Not found: "ghost"'),
      errs.join('\n'),
    );
  });

  it('once added are neither removed nor changed', () => {
    const old = runningPod([{ name: 'debugger', image: 'busybox' }]);
    assert.deepEqual(errorsOf(runningPod([]), old), [
      'spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be removed',
    ]);
    assert.deepEqual(errorsOf(runningPod([{ name: 'debugger', image: 'alpine' }]), old), [
      'spec.ephemeralContainers[0]: Forbidden: existing ephemeral containers "debugger" may not be changed',
    ]);
  });

  it('leave the rest of the pod to the ordinary update rules', () => {
    const old = runningPod();
    const next = runningPod([{ name: 'debugger', image: 'busybox' }]);
    (next.spec as Obj).containers = [
      { name: 'nginx', image: 'nginx', imagePullPolicy: 'Never', terminationMessagePolicy: 'File' },
    ];
    assert.ok(
      errorsOf(next, old).some((e) => e.startsWith('spec: Forbidden: pod updates may not change fields')),
    );
  });

  it('cannot be set when a pod is created', () => {
    const pod = runningPod([{ name: 'debugger', image: 'busybox' }]);
    delete (pod.metadata as Obj).uid;
    delete (pod.metadata as Obj).resourceVersion;
    assert.ok(
      validateObject(pod)
        .map(fieldErrorString)
        .includes('spec.ephemeralContainers: Forbidden: cannot be set on create'),
    );
  });
});
