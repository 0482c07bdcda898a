// The protobuf decoder (src/protobuf.ts): hand-built bodies as Go writes them,
// a property that every field of every accepted kind survives
// JSON → protobuf (protobufjs, from our schema) → decoder, and the refusals
// (415) of what it cannot decode fully.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { PROTOBUF_KINDS, schema } from '../src/protobuf/schema.js';
import { decodeProtobufObject } from '../src/protobuf.js';
import { jsonOf } from './protobuf-arbitrary.js';
import { encodeMessage, envelope } from './protobuf-encode.js';

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 127) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}
function field(num: number, bytes: Buffer | string): Buffer {
  const b = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  return Buffer.concat([Buffer.from([...varint(num * 8 + 2), ...varint(b.length)]), b]);
}

describe('protobuf', () => {
  it('decodes a ConfigMap in the k8s envelope', () => {
    const label = Buffer.concat([field(1, 'app'), field(2, 'web')]);
    const meta = Buffer.concat([field(1, 'cm'), field(3, 'default'), field(11, label)]);
    const entry = Buffer.concat([field(1, 'k'), field(2, 'v')]);
    const cm = Buffer.concat([field(1, meta), field(2, entry)]);
    const typeMeta = Buffer.concat([field(1, 'v1'), field(2, 'ConfigMap')]);
    const body = Buffer.concat([Buffer.from('k8s\0', 'binary'), field(1, typeMeta), field(2, cm)]);
    assert.deepEqual(decodeProtobufObject(body, 'ConfigMap'), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cm', namespace: 'default', labels: { app: 'web' } },
      data: { k: 'v' },
    });
  });

  it('decodes a Deployment: zeros of plain fields dropped as JSON drops them, set pointers kept', () => {
    const scalar = (n: number, v: number) => Buffer.from([...varint(n * 8), ...varint(v)]);
    const port = Buffer.concat([scalar(2, 0), scalar(3, 80)]); // hostPort 0, containerPort 80
    const container = Buffer.concat([field(1, 'web'), field(2, 'nginx'), field(6, port), scalar(16, 0)]);
    const podSpec = Buffer.concat([field(2, container), scalar(11, 0)]); // hostNetwork false
    const labels = Buffer.concat([field(1, 'app'), field(2, 'web')]);
    const templateMeta = Buffer.concat([field(11, labels), scalar(7, 0)]); // generation 0
    const template = Buffer.concat([field(1, templateMeta), field(2, podSpec)]);
    const selector = field(1, labels);
    const spec = Buffer.concat([
      scalar(1, 0), // replicas: an explicit 0 (a pointer)
      field(2, selector),
      field(3, template),
      scalar(5, 0), // minReadySeconds 0 (plain)
      scalar(7, 0), // paused false (plain)
    ]);
    const d = Buffer.concat([field(1, field(1, 'web')), field(2, spec)]);
    const typeMeta = Buffer.concat([field(1, 'apps/v1'), field(2, 'Deployment')]);
    const body = Buffer.concat([Buffer.from('k8s\0', 'binary'), field(1, typeMeta), field(2, d)]);
    assert.deepEqual(decodeProtobufObject(body, 'Deployment'), {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'web', image: 'nginx', ports: [{ containerPort: 80 }] }] },
        },
      },
    });
  });

  it('decodes an env var taken from a secret, the field the old decoder dropped', () => {
    const deployment = {
      metadata: { name: 'web' },
      spec: {
        template: {
          spec: {
            containers: [
              {
                name: 'web',
                env: [
                  { name: 'MODE', value: 'fast' },
                  {
                    name: 'TOKEN',
                    valueFrom: { secretKeyRef: { name: 'creds', key: 'token', optional: false } },
                  },
                ],
              },
            ],
          },
        },
      },
    };
    const body = envelope(
      'apps/v1',
      'Deployment',
      encodeMessage(deployment, 'k8s.io.api.apps.v1.Deployment'),
    );
    const got = decodeProtobufObject(body, 'Deployment') as typeof deployment;
    assert.deepEqual(
      got.spec.template.spec.containers[0].env,
      deployment.spec.template.spec.containers[0].env,
    );
  });
});

/** fast-check makes some objects without a prototype; the decoder's have one. */
const plain = (v: unknown): object => JSON.parse(JSON.stringify(v));

/** A Kubernetes apiVersion/kind as the message name the schema gives it. */
function messageOf(apiVersionKind: string): string {
  const kind = apiVersionKind.split('/').pop()!;
  const t = schema().lookupType(
    {
      v1: 'k8s.io.api.core.v1',
      apps: 'k8s.io.api.apps.v1',
      batch: 'k8s.io.api.batch.v1',
      autoscaling: 'k8s.io.api.autoscaling.v1',
      'rbac.authorization.k8s.io': 'k8s.io.api.rbac.v1',
      'events.k8s.io': 'k8s.io.api.events.v1',
      policy: 'k8s.io.api.policy.v1',
      'coordination.k8s.io': 'k8s.io.api.coordination.v1',
      'discovery.k8s.io': 'k8s.io.api.discovery.v1',
      'authorization.k8s.io': 'k8s.io.api.authorization.v1',
      'authentication.k8s.io': 'k8s.io.api.authentication.v1',
      'scheduling.k8s.io': 'k8s.io.api.scheduling.v1',
    }[apiVersionKind.split('/')[0]]! + `.${kind}`,
  );
  return t.fullName.slice(1);
}

describe('protobuf round trip', () => {
  for (const key of PROTOBUF_KINDS) {
    const apiVersion = key.slice(0, key.lastIndexOf('/'));
    const kind = key.slice(key.lastIndexOf('/') + 1);
    it(`${key}: every field of generated objects comes back from protobuf as its JSON`, () => {
      const name = messageOf(key);
      fc.assert(
        fc.property(jsonOf(schema().lookupType(name)), (json) => {
          const body = envelope(apiVersion, kind, encodeMessage(json, name));
          assert.deepEqual(decodeProtobufObject(body, kind), { apiVersion, kind, ...plain(json) });
        }),
        { numRuns: 40, seed: Number(process.env.KUBIT_FUZZ_SEED ?? 17) },
      );
    });
  }

  it('DeleteOptions (any group version): every field comes back', () => {
    const name = 'k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions';
    fc.assert(
      fc.property(jsonOf(schema().lookupType(name)), fc.constantFrom('v1', 'apps/v1'), (json, apiVersion) => {
        const body = envelope(apiVersion, 'DeleteOptions', encodeMessage(json, name));
        assert.deepEqual(decodeProtobufObject(body, 'DeleteOptions'), plain(json));
      }),
      { numRuns: 100 },
    );
  });

  it('generated objects do reach deep fields (the property is not vacuous)', () => {
    const samples = fc.sample(jsonOf(schema().lookupType('k8s.io.api.core.v1.Pod')), {
      numRuns: 60,
      seed: 1,
    });
    const text = JSON.stringify(samples);
    for (const deep of ['"valueFrom"', '"livenessProbe"', '"nodeAffinity"', '"projected"', '"tolerations"'])
      assert.ok(text.includes(deep), `${deep} in generated pods`);
  });
});

/** Expects a 415 Status whose message matches. */
function refused(body: Buffer, kind: string, message: RegExp): void {
  assert.throws(
    () => decodeProtobufObject(body, kind),
    (e: { code?: number; status?: { reason?: string; message?: string } }) => {
      assert.equal(e.code, 415);
      assert.equal(e.status?.reason, 'UnsupportedMediaType');
      assert.match(e.status?.message ?? '', message);
      return true;
    },
  );
}

describe('protobuf refusals (415, naming the problem)', () => {
  const withContainer = (container: Buffer) => {
    const podSpec = field(2, container);
    const template = field(2, podSpec);
    const spec = field(3, template);
    const d = Buffer.concat([field(1, field(1, 'web')), field(2, spec)]);
    return envelope('apps/v1', 'Deployment', d);
  };

  it('an unknown field number, with the path of the message it is in', () => {
    const container = Buffer.concat([field(1, 'web'), field(99, 'surprise')]);
    refused(
      withContainer(container),
      'Deployment',
      /^Deployment cannot be decoded fully from protobuf: unknown field number 99 .*in Container at spec\.template\.spec\.containers\[0\]/,
    );
  });

  it('a known field with the wrong wire type', () => {
    const container = Buffer.concat([field(1, 'web'), Buffer.from([...varint(2 * 8), 5])]); // image as a varint
    refused(
      withContainer(container),
      'Deployment',
      /field image \(string\) came as varint, not length-delimited/,
    );
  });

  it('a cut-off body', () => {
    const whole = withContainer(Buffer.concat([field(1, 'web'), field(2, 'nginx')]));
    for (const cut of [1, 3, 8]) refused(whole.subarray(0, whole.length - cut), 'Deployment', /truncated/);
  });

  it('an unknown field in a map entry, and in the envelope', () => {
    const entry = Buffer.concat([field(1, 'k'), field(2, 'v'), field(3, 'x')]);
    const cm = field(2, entry);
    refused(envelope('v1', 'ConfigMap', cm), 'ConfigMap', /unknown field number 3 in a map entry at data/);
    const body = Buffer.concat([envelope('v1', 'ConfigMap', Buffer.alloc(0)), field(9, 'x')]);
    refused(body, 'ConfigMap', /^the envelope cannot be decoded fully from protobuf: unknown field number 9/);
  });

  it('a kind it has no schema for, a body without the envelope, a compressed body', () => {
    refused(
      envelope('v1', 'PersistentVolume', field(1, field(1, 'pv'))),
      'PersistentVolume',
      /v1, kind PersistentVolume .*no schema/,
    );
    refused(Buffer.from('nope'), 'ConfigMap', /does not start with the k8s envelope/);
    const gz = Buffer.concat([envelope('v1', 'ConfigMap', Buffer.alloc(0)), field(3, 'gzip')]);
    refused(gz, 'ConfigMap', /content encoding gzip/);
  });

  it('an IntOrString of no known type, a FieldsV1 that is not JSON', () => {
    const ios = Buffer.from([...varint(1 * 8), 7]); // type 7
    const rolling = field(1, ios); // maxUnavailable
    const strategy = field(2, rolling);
    const d = field(2, field(4, strategy));
    refused(
      envelope('apps/v1', 'Deployment', d),
      'Deployment',
      /IntOrString of type 7 .*at spec\.strategy\.rollingUpdate\.maxUnavailable/,
    );
    const managed = field(17, field(7, field(1, '{nope'))); // managedFields[0].fieldsV1.Raw
    refused(
      envelope('v1', 'ConfigMap', field(1, managed)),
      'ConfigMap',
      /FieldsV1 whose bytes are not JSON at metadata\.managedFields\[0\]\.fieldsV1/,
    );
  });
});
