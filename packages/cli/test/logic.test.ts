import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { patchSchemaFor, StatusError } from '@kubit/api';
import { applyPatch, diffObject, LAST_APPLIED, withLastApplied } from '../src/apply/threeway.js';
import { parseChanges } from '../src/commands/label.js';
import { conditionMet, parseFor } from '../src/commands/wait.js';
import { align } from '../src/describe/writer.js';
import { formatError } from '../src/errors.js';
import { parseDurationMs } from '../src/factory.js';
import { parseManifests } from '../src/manifests.js';
import { parseCustomColumns, renderCustomColumns } from '../src/printers/customcolumns.js';
import { renderJsonPath } from '../src/printers/jsonpath.js';
import { parseOutput } from '../src/printers/output.js';
import { suggestions } from '../src/suggest.js';

const pods = {
  kind: 'List',
  items: [
    {
      metadata: { name: 'a', labels: { app: 'web' } },
      spec: {
        nodeName: 'n1',
        containers: [
          { name: 'c1', image: 'i1' },
          { name: 'c2', image: 'i2' },
        ],
      },
      status: {
        conditions: [
          { type: 'Ready', status: 'True' },
          { type: 'PodScheduled', status: 'True' },
        ],
        restarts: 3,
      },
    },
    {
      metadata: { name: 'b', annotations: { 'example.com/x.y': 'dotted' } },
      spec: { containers: [{ name: 'c', image: 'i3' }] },
      status: { conditions: [{ type: 'Ready', status: 'False' }], restarts: 1 },
    },
  ],
};

describe('jsonpath', () => {
  it('prints fields, wildcards, ranges and literals as kubectl does', () => {
    assert.equal(renderJsonPath('{.items[*].metadata.name}', pods), 'a b');
    assert.equal(
      renderJsonPath('{range .items[*]}{.metadata.name}{"\\t"}{.spec.nodeName}{"\\n"}{end}', pods),
      'a\tn1\nb\t\n',
    );
    assert.equal(renderJsonPath('{.items[0].spec.containers[*].image}', pods), 'i1 i2');
    assert.equal(renderJsonPath('{.items[-1].metadata.name}', pods), 'b');
    assert.equal(renderJsonPath('{.items[0:1].metadata.name}', pods), 'a');
    assert.equal(renderJsonPath('name: {.items[1].metadata.name}!', pods), 'name: b!');
  });
  it('filters, recursive descent, escaped dots and JSON for objects', () => {
    assert.equal(
      renderJsonPath('{.items[?(@.status.conditions[0].status=="False")].metadata.name}', pods),
      'b',
    );
    assert.equal(renderJsonPath('{.items[0].status.conditions[?(@.type=="Ready")].status}', pods), 'True');
    assert.equal(renderJsonPath('{.items[?(@.status.restarts>2)].metadata.name}', pods), 'a');
    assert.equal(renderJsonPath('{..image}', pods), 'i1 i2 i3');
    assert.equal(renderJsonPath('{.items[1].metadata.annotations.example\\.com/x\\.y}', pods), 'dotted');
    assert.equal(renderJsonPath('{.items[0].metadata.labels}', pods), '{"app":"web"}');
    assert.equal(renderJsonPath('{.items[0].missing.field}', pods), '');
  });
  it('rejects malformed templates', () => {
    assert.throws(() => renderJsonPath('{.items[*}', pods), /jsonpath/);
    assert.throws(() => renderJsonPath('{range .items[*]}{.x}', pods), /unclosed range/);
    assert.throws(() => renderJsonPath('{end}', pods), /not in range/);
  });
});

describe('custom-columns', () => {
  it('renders headers, joined values and <none>', () => {
    const cols = parseCustomColumns(
      'NAME:.metadata.name,NODE:.spec.nodeName,IMAGES:.spec.containers[*].image',
    );
    assert.equal(
      renderCustomColumns(cols, pods.items),
      'NAME   NODE     IMAGES\na      n1       i1,i2\nb      <none>   i3\n',
    );
    assert.equal(renderCustomColumns(cols, pods.items, false).split('\n')[0], 'a   n1       i1,i2');
    assert.throws(() => parseCustomColumns('NAME'), /expected <header>:<json-path-expr>/);
  });
  it('parses -o values', () => {
    assert.deepEqual(parseOutput('wide'), { kind: 'table', wide: true });
    assert.equal(parseOutput('jsonpath={.a}').kind, 'jsonpath');
    assert.throws(() => parseOutput('xml'), /unable to match a printer/);
  });
});

describe('three-way apply patch', () => {
  const live = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'c',
      uid: 'u',
      resourceVersion: '5',
      annotations: { other: 'keep' },
      labels: { a: '1', b: '2' },
    },
    data: { x: '1', y: '2', server: 'set-by-someone-else' },
  };
  it('deletes fields dropped from the manifest, sets changed ones, leaves others alone', () => {
    const original = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', labels: { a: '1', b: '2' } },
      data: { x: '1', y: '2' },
    };
    const liveWithLast = structuredClone(live) as Record<string, unknown> & typeof live;
    (liveWithLast.metadata.annotations as Record<string, string>)[LAST_APPLIED] = withLastApplied(original)
      .metadata
      ? ((withLastApplied(original).metadata as { annotations: Record<string, string> }).annotations[
          LAST_APPLIED
        ] as string)
      : '';
    const manifest = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', labels: { a: '1' } },
      data: { x: '9' },
    };
    const patch = applyPatch(manifest, liveWithLast);
    assert.deepEqual(patch.data, { y: null, x: '9' });
    assert.deepEqual((patch.metadata as { labels: unknown }).labels, { b: null });
    assert.ok(
      (
        (patch.metadata as { annotations: Record<string, string> }).annotations[LAST_APPLIED] as string
      ).includes('"x":"9"'),
    );
    assert.equal(
      (patch.data as Record<string, unknown>).server,
      undefined,
      'a field we never set is left alone',
    );
  });
  it('is empty when nothing changed', () => {
    const manifest = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { x: '1' } };
    const created = withLastApplied(manifest) as Record<string, unknown>;
    const liveNow = {
      ...created,
      metadata: { ...(created.metadata as object), uid: 'u', resourceVersion: '1' },
      data: { x: '1' },
    };
    assert.deepEqual(applyPatch(manifest, liveNow), {});
  });
  it("merges keyed lists by key (per the kind's patch schema) and deletes removed elements", () => {
    const schema = patchSchemaFor('v1', 'Pod');
    const orig = {
      spec: {
        containers: [
          { name: 'a', image: '1', env: [{ name: 'X', value: '1' }] },
          { name: 'b', image: '1' },
        ],
      },
    };
    const mod = { spec: { containers: [{ name: 'a', image: '2' }] } };
    const cur = {
      spec: {
        containers: [
          { name: 'a', image: '1', env: [{ name: 'X', value: '1' }], imagePullPolicy: 'Always' },
          { name: 'b', image: '1' },
        ],
      },
    };
    assert.deepEqual(diffObject(orig, mod, cur, schema), {
      spec: {
        containers: [
          { name: 'a', image: '2', env: null },
          { name: 'b', $patch: 'delete' },
        ],
      },
    });
    assert.deepEqual(
      diffObject(
        { spec: { containers: [] } },
        { spec: { containers: [{ name: 'a', args: ['b'] }] } },
        { spec: { containers: [{ name: 'a', args: ['a'] }] } },
        schema,
      ),
      { spec: { containers: [{ name: 'a', args: ['b'] }] } },
      'unkeyed lists are replaced',
    );
    assert.deepEqual(
      diffObject(
        { metadata: { finalizers: ['x', 'y'] } },
        { metadata: { finalizers: ['x', 'z'] } },
        { metadata: { finalizers: ['x', 'y', 'w'] } },
        schema,
      ),
      { metadata: { finalizers: ['z'], '$deleteFromPrimitiveList/finalizers': ['y'] } },
    );
    assert.deepEqual(
      diffObject(undefined, { items: [{ name: 'a' }] }, { items: [{ name: 'a' }, { name: 'b' }] }),
      { items: [{ name: 'a' }] },
      'no schema: atomic',
    );
  });
});

describe('manifests', () => {
  it('reads several YAML documents, JSON and Lists', () => {
    const docs = parseManifests(
      'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n',
      'f.yaml',
    );
    assert.deepEqual(
      docs.map((d) => d.object.kind),
      ['Pod', 'ConfigMap'],
    );
    assert.equal(
      parseManifests('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"}}', 'f.json')[0].object.kind,
      'Pod',
    );
  });
  it('reports YAML errors with the file and line', () => {
    assert.throws(
      () => parseManifests('apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n   bad: x\n', 'pod.yaml'),
      /error parsing pod.yaml: error converting YAML to JSON: yaml: line 5: /,
    );
    assert.throws(
      () => parseManifests('apiVersion: v1\n---\nkind: Pod\n', 'two.yaml'),
      /error validating "two.yaml": error validating data: \[kind not set\]/,
    );
  });
});

describe('messages', () => {
  it('suggests close verbs and kinds', () => {
    assert.deepEqual(suggestions('gett', ['get', 'apply', 'delete']), ['get']);
    assert.deepEqual(suggestions('podz', ['pods', 'pod', 'po', 'nodes']).slice(0, 2), ['pod', 'pods']);
    assert.deepEqual(suggestions('xyzzy', ['get', 'apply']), []);
  });
  it('formats server errors as kubectl does', () => {
    const status = (reason: string, code: number, message: string, details?: object) =>
      new StatusError({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        reason,
        code,
        message,
        details,
      });
    assert.equal(
      formatError(status('NotFound', 404, 'pods "x" not found')),
      'Error from server (NotFound): pods "x" not found',
    );
    assert.equal(
      formatError(status('Unauthorized', 401, 'Unauthorized')),
      'error: You must be logged in to the server (Unauthorized)',
    );
    const invalid = status('Invalid', 422, 'Pod "p" is invalid: [a, b]', {
      name: 'p',
      kind: 'Pod',
      causes: [
        { field: 'spec.containers[0].image', message: 'Required value' },
        { field: 'metadata.name', message: 'Invalid value: "A": bad' },
      ],
    });
    assert.equal(
      formatError(invalid),
      'The Pod "p" is invalid: \n* spec.containers[0].image: Required value\n* metadata.name: Invalid value: "A": bad',
    );
  });
  it('parses durations', () => {
    assert.equal(parseDurationMs('30s'), 30_000);
    assert.equal(parseDurationMs('1m30s'), 90_000);
    assert.equal(parseDurationMs('250ms'), 250);
    assert.equal(parseDurationMs('5'), 5000);
    assert.throws(() => parseDurationMs('soon'), /invalid duration/);
  });
});

describe('wait conditions and labels', () => {
  it('parses --for and evaluates it', () => {
    const ready = { status: { conditions: [{ type: 'Ready', status: 'True' }] } } as object;
    assert.equal(conditionMet(parseFor('condition=Ready'), ready), true);
    assert.equal(conditionMet(parseFor('condition=ready=false'), ready), false);
    assert.equal(conditionMet(parseFor('delete'), undefined), true);
    assert.equal(
      conditionMet(parseFor('jsonpath={.status.phase}=Running'), { status: { phase: 'Running' } } as object),
      true,
    );
    assert.equal(conditionMet(parseFor('jsonpath={.status.phase}'), { status: {} } as object), false);
    assert.throws(() => parseFor('ready'), /unrecognized condition/);
  });
  it('splits label arguments', () => {
    const { resources, changes } = parseChanges(['pod', 'web', 'a=b', 'c-', 'example.com/x=y'], 'label');
    assert.deepEqual(resources, ['pod', 'web']);
    assert.deepEqual(changes, { set: { a: 'b', 'example.com/x': 'y' }, remove: ['c'] });
    assert.throws(() => parseChanges(['pod', 'web', 'a=b c'], 'label'), /invalid label value/);
  });
  it('aligns describe output like a tabwriter', () => {
    const text = align([
      ['Name:', 'x'],
      ['Namespace:', 'default'],
      ['Containers:'],
      ['  c:'],
      ['    Image:', 'busybox'],
      ['    Port:', '<none>'],
    ]);
    assert.equal(
      text,
      'Name:       x\nNamespace:  default\nContainers:\n  c:\n    Image:  busybox\n    Port:   <none>\n',
    );
  });
});
