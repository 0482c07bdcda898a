// CustomResourceDefinition validation and the structural-schema validator of
// custom objects, with Kubernetes' field paths and messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  applySchemaDefaults,
  type FieldError,
  fieldErrorString,
  type OpenApiSchema,
  prune,
  validateAgainstSchema,
  validateCelRules,
  validateObject,
} from '@kubit/api';

type O = Record<string, unknown>;

function crd(over: { name?: string; group?: string; spec?: O; schema?: unknown; annotations?: O } = {}): O {
  const group = over.group ?? 'stable.example.com';
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: over.name ?? `crontabs.${group}`,
      ...(over.annotations ? { annotations: over.annotations } : {}),
    },
    spec: {
      group,
      scope: 'Namespaced',
      names: {
        plural: 'crontabs',
        singular: 'crontab',
        kind: 'CronTab',
        listKind: 'CronTabList',
        shortNames: ['ct'],
      },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: over.schema ?? {
              type: 'object',
              properties: { spec: { type: 'object', properties: { cronSpec: { type: 'string' } } } },
            },
          },
        },
      ],
      ...over.spec,
    },
  };
}

const msgs = (errs: FieldError[]) => errs.map(fieldErrorString);

test('a valid CRD passes', () => {
  assert.deepEqual(msgs(validateObject(crd())), []);
});

test('the name must be <plural>.<group>', () => {
  assert.deepEqual(msgs(validateObject(crd({ name: 'tabs.stable.example.com' }))), [
    'metadata.name: Invalid value: "tabs.stable.example.com": must be spec.names.plural+"."+spec.group',
  ]);
});

test('the group needs a dot, and a reserved group needs approval', () => {
  const m = msgs(validateObject(crd({ group: 'example' })));
  assert.ok(
    m.includes('spec.group: Invalid value: "example": should be a domain with at least one dot'),
    m.join('\n'),
  );
  const k = msgs(validateObject(crd({ group: 'foo.k8s.io' })));
  assert.ok(
    k.some((e) => e.startsWith('metadata.annotations[api-approved.kubernetes.io]: Required value')),
    k.join('\n'),
  );
  assert.deepEqual(
    msgs(
      validateObject(
        crd({ group: 'foo.k8s.io', annotations: { 'api-approved.kubernetes.io': 'https://x' } }),
      ),
    ),
    [],
  );
});

test('scope and exactly one storage version', () => {
  const m = msgs(
    validateObject(
      crd({
        spec: {
          scope: 'Global',
          versions: [
            { name: 'v1', served: true, storage: false, schema: { openAPIV3Schema: { type: 'object' } } },
          ],
        },
      }),
    ),
  );
  assert.ok(
    m.includes('spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"'),
    m.join('\n'),
  );
  assert.ok(
    m.some(
      (e) =>
        e.startsWith('spec.versions: Invalid value') &&
        e.endsWith('must have exactly one version marked as storage version'),
    ),
    m.join('\n'),
  );
});

test('a non-structural schema is refused with the node path', () => {
  const m = msgs(
    validateObject(
      crd({ schema: { type: 'object', properties: { spec: { properties: { a: { type: 'string' } } } } } }),
    ),
  );
  assert.deepEqual(m, [
    'spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields',
  ]);
  const meta = msgs(
    validateObject(
      crd({
        schema: {
          type: 'object',
          properties: { metadata: { type: 'object', properties: { labels: { type: 'object' } } } },
        },
      }),
    ),
  );
  assert.deepEqual(meta, [
    'spec.versions[0].schema.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified',
  ]);
  // preserve-unknown-fields and int-or-string need no type.
  assert.deepEqual(
    msgs(
      validateObject(
        crd({
          schema: {
            type: 'object',
            properties: {
              x: { 'x-kubernetes-int-or-string': true },
              y: { 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        }),
      ),
    ),
    [],
  );
});

const schema: OpenApiSchema = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      required: ['cronSpec'],
      properties: {
        cronSpec: { type: 'string', pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$' },
        image: { type: 'string', maxLength: 10 },
        replicas: { type: 'integer', format: 'int32', minimum: 1, maximum: 10, default: 1 },
        mode: { type: 'string', enum: ['a', 'b'] },
        port: { 'x-kubernetes-int-or-string': true },
        when: { type: 'string', format: 'date-time' },
        note: { type: 'string', nullable: true },
        tags: { type: 'array', maxItems: 2, items: { type: 'string' }, 'x-kubernetes-list-type': 'set' },
        ports: {
          type: 'array',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
          items: { type: 'object', properties: { name: { type: 'string' } } },
        },
        extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      },
    },
  },
};

test('values are checked with kube-openapi messages and paths', () => {
  const obj = {
    apiVersion: 'stable.example.com/v1',
    kind: 'CronTab',
    metadata: { name: 'x' },
    spec: {
      cronSpec: 'bad',
      image: 'a-very-long-image',
      replicas: 11,
      mode: 'c',
      port: true,
      when: 'yesterday',
      note: null,
      tags: ['a', 'a', 'b'],
      ports: [{ name: 'p' }, { name: 'p' }],
    },
  };
  assert.deepEqual(msgs(validateAgainstSchema(obj, schema)), [
    `spec.cronSpec: Invalid value: "bad": should match '${schema.properties?.spec.properties?.cronSpec.pattern}'`,
    'spec.image: Too long: may not be more than 10 bytes',
    'spec.replicas: Invalid value: 11: should be less than or equal to 10',
    'spec.mode: Unsupported value: "c": supported values: "a", "b"',
    'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"',
    'spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"',
    'spec.tags: Too many: 3: must have at most 2 items',
    'spec.tags[1]: Duplicate value: "a"',
    'spec.ports[1]: Duplicate value: {"name":"p"}',
  ]);
  assert.deepEqual(msgs(validateAgainstSchema({ spec: { replicas: 'x' } }, schema)), [
    'spec.cronSpec: Required value',
    'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
  ]);
  assert.deepEqual(
    msgs(
      validateAgainstSchema(
        { spec: { cronSpec: '* * * * */5', port: 'http', when: '2024-01-02T03:04:05Z' } },
        schema,
      ),
    ),
    [],
  );
});

test('unknown fields are pruned outside preserve-unknown-fields; defaults fill the gaps', () => {
  const obj: O = {
    apiVersion: 'stable.example.com/v1',
    kind: 'CronTab',
    metadata: { name: 'x' },
    spec: { cronSpec: '* * * * *', typo: 1, extra: { anything: { goes: true } } },
    top: 'level',
  };
  assert.deepEqual(prune(obj, schema), ['spec.typo', 'top']);
  applySchemaDefaults(obj, schema);
  assert.deepEqual(obj.spec, { cronSpec: '* * * * *', extra: { anything: { goes: true } }, replicas: 1 });
  assert.deepEqual(obj.metadata, { name: 'x' });
});

const celSchema: OpenApiSchema & Record<string, unknown> = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      'x-kubernetes-validations': [
        { rule: 'self.minReplicas <= self.replicas', message: 'replicas must be at least minReplicas' },
        { rule: 'self.replicas + 1 > 1' },
      ],
      properties: {
        replicas: { type: 'integer' },
        minReplicas: { type: 'integer' },
        mode: {
          type: 'string',
          'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'mode is immutable' }],
        },
      },
    } as OpenApiSchema,
  },
};

test('CEL rules: messages, default message, int arithmetic, transition rules only on update', () => {
  const ok = { spec: { replicas: 3, minReplicas: 1, mode: 'a' } };
  assert.deepEqual(msgs(validateCelRules(ok, celSchema)), []);
  assert.deepEqual(msgs(validateCelRules({ spec: { replicas: 0, minReplicas: 1, mode: 'a' } }, celSchema)), [
    'spec: Invalid value: "object": replicas must be at least minReplicas',
    'spec: Invalid value: "object": failed rule: self.replicas + 1 > 1',
  ]);
  // On an update only the transition rules run, against the stored value.
  assert.deepEqual(msgs(validateCelRules({ spec: { ...ok.spec, mode: 'b' } }, celSchema, ok)), [
    'spec.mode: Invalid value: "string": mode is immutable',
  ]);
  assert.deepEqual(msgs(validateCelRules(ok, celSchema, ok)), []);
});

test('a CRD whose rule does not compile is refused', () => {
  const m = msgs(
    validateObject(crd({ schema: { type: 'object', 'x-kubernetes-validations': [{ rule: 'self.x ==' }] } })),
  );
  assert.equal(m.length, 1, m.join('\n'));
  assert.match(
    m[0],
    /^spec\.versions\[0\]\.schema\.openAPIV3Schema\.x-kubernetes-validations\[0\]\.rule: Invalid value: "self\.x ==": compilation failed: /,
  );
});
