import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  checkSupportedFields,
  FieldSelectorParseError,
  fieldSelectorFromSet,
  isQualifiedName,
  isValidLabelValue,
  LabelSelectorParseError,
  labelSelectorAsSelector,
  objectFields,
  parseFieldSelector,
  parseLabelSelector,
  selectorFromSet,
} from '../src/index.js';

describe('label selector string form', () => {
  const labels = { app: 'web', tier: 'a', env: 'prod', version: '3' };
  const table: [string, boolean, string][] = [
    // selector, matches `labels`, canonical string
    ['', true, ''],
    ['app=web', true, 'app=web'],
    ['app==web', true, 'app==web'],
    ['app!=web', false, 'app!=web'],
    ['app=db', false, 'app=db'],
    ['missing!=x', true, 'missing!=x'],
    ['app', true, 'app'],
    ['!app', false, '!app'],
    ['!canary', true, '!canary'],
    ['tier in (a,b)', true, 'tier in (a,b)'],
    ['tier in (b, a )', true, 'tier in (a,b)'],
    ['tier in (b,a,b)', true, 'tier in (a,b)'],
    ['tier notin (a)', false, 'tier notin (a)'],
    ['missing notin (a)', true, 'missing notin (a)'],
    ['missing in (a)', false, 'missing in (a)'],
    ['app=web,tier in (a,b),!canary,env notin (dev)', true, 'app=web,!canary,env notin (dev),tier in (a,b)'],
    ['  app = web ,  env  ', true, 'app=web,env'],
    ['version>2', true, 'version>2'],
    ['version<2', false, 'version<2'],
    ['x=', false, 'x='],
    ['example.com/app=web', false, 'example.com/app=web'],
    ['constructor', false, 'constructor'],
    ['!toString', true, '!toString'],
  ];
  for (const [text, want, canonical] of table) {
    it(`${JSON.stringify(text)} matches=${want}`, () => {
      const s = parseLabelSelector(text);
      assert.equal(s.matches(labels), want);
      assert.equal(s.toString(), canonical);
      // The canonical form parses to an equivalent selector.
      assert.equal(parseLabelSelector(s.toString()).matches(labels), want);
    });
  }

  it('property: the canonical string parses back to the same selector', () => {
    const key = fc.constantFrom('app', 'tier', 'example.com/x', 'a.b-c_d');
    const value = fc.constantFrom('', 'web', 'a', 'b', 'v1.2');
    const req = fc.oneof(
      fc.tuple(key, fc.constantFrom('=', '==', '!='), value).map(([k, op, v]) => `${k}${op}${v}`),
      fc
        .tuple(
          key,
          fc.constantFrom('in', 'notin'),
          fc.array(value, { minLength: 1, maxLength: 3 }).filter((vs) => vs.some((v) => v !== '')),
        )
        .map(([k, op, vs]) => `${k} ${op} (${vs.join(',')})`),
      key,
      key.map((k) => `!${k}`),
    );
    // (A set holding only "" prints as "()", which Kubernetes cannot parse either.)
    const labels = fc.dictionary(key, value, { noNullPrototype: true });
    fc.assert(
      fc.property(fc.array(req, { maxLength: 4 }), labels, (reqs, l) => {
        const s = parseLabelSelector(reqs.join(','));
        const again = parseLabelSelector(s.toString());
        assert.equal(again.toString(), s.toString());
        assert.equal(again.matches(l), s.matches(l));
      }),
    );
  });

  it('matches against missing labels', () => {
    assert.equal(parseLabelSelector('a!=b').matches(undefined), true);
    assert.equal(parseLabelSelector('a').matches(null), false);
    assert.equal(parseLabelSelector('').matches(undefined), true);
  });

  const bad: [string, RegExp][] = [
    ['app=web,', /expected: identifier after ','/],
    [',', /found ',', expected: !, identifier, or 'end of string'/],
    ['app in a', /found 'a', expected: '\('/],
    ['app in ()', /values set can't be empty/],
    ['app in (a b)', /found 'b', expected: ',', '\)' or identifier/],
    ['app === web', /found '=', expected/],
    ['app web', /found 'web', expected: '=', '!=', '==', 'in', 'notin'/],
    ['!app=web', /found '=', expected: ',' or 'end of string'/],
    ['a b c', /found 'b'/],
    ['bad key!=x', /found 'key'/],
    ['-bad=x', /key: Invalid value: "-bad": name part must consist of alphanumeric characters/],
    ['a=-bad-', /values\[0\]\[a\]: Invalid value: "-bad-": a valid label must be an empty string/],
    [`a=${'v'.repeat(64)}`, /must be no more than 63 characters/],
    ['x>a', /the value must be an integer/],
    ['ключ=значение', /name part must consist of alphanumeric/],
    ['a in (b', /found '', expected/],
    ['__proto__', /key: Invalid value: "__proto__"/],
  ];
  for (const [text, re] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      assert.throws(
        () => parseLabelSelector(text),
        (e: unknown) =>
          e instanceof LabelSelectorParseError &&
          re.test(e.message) &&
          e.message.startsWith(`unable to parse label selector ${JSON.stringify(text)}`),
      );
    });
  }

  it('huge input fails with a bounded message', () => {
    const huge = `${'a'.repeat(1_000_000)}=b`;
    assert.throws(
      () => parseLabelSelector(huge),
      (e: unknown) => e instanceof Error && e.message.length < 3000,
    );
    const many = Array.from({ length: 10_000 }, (_, i) => `k${i}`).join(',');
    assert.equal(parseLabelSelector(many).requirements.length, 10_000);
  });
});

describe('structured label selectors', () => {
  it('nil selects nothing, empty selects everything', () => {
    assert.equal(labelSelectorAsSelector(undefined).matches({ a: 'b' }), false);
    assert.equal(labelSelectorAsSelector(null).matches({}), false);
    assert.equal(labelSelectorAsSelector({}).matches({}), true);
    assert.equal(labelSelectorAsSelector({}).empty(), true);
  });

  it('matchLabels and matchExpressions', () => {
    const s = labelSelectorAsSelector({
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'tier', operator: 'In', values: ['a', 'b'] },
        { key: 'env', operator: 'NotIn', values: ['dev'] },
        { key: 'track', operator: 'Exists' },
        { key: 'canary', operator: 'DoesNotExist' },
      ],
    });
    assert.equal(s.matches({ app: 'web', tier: 'b', track: 'x' }), true);
    assert.equal(s.matches({ app: 'web', tier: 'b', track: 'x', env: 'dev' }), false);
    assert.equal(s.matches({ app: 'web', tier: 'b' }), false);
    assert.equal(s.matches({ app: 'web', tier: 'b', track: 'x', canary: '' }), false);
    assert.equal(s.toString(), 'app=web,!canary,env notin (dev),tier in (a,b),track');
    assert.equal(s.requiresExactMatch('app'), 'web');
  });

  const bad: [unknown, RegExp][] = [
    [
      { matchExpressions: [{ key: 'a', operator: 'Foo', values: ['x'] }] },
      /"Foo" is not a valid label selector operator/,
    ],
    [{ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }, /values set can't be empty/],
    [{ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }, /values set must be empty/],
    [{ matchExpressions: [{ key: 'a', operator: '__proto__' }] }, /not a valid label selector operator/],
    [{ matchLabels: { 'a b': 'c' } }, /key: Invalid value: "a b"/],
  ];
  for (const [sel, re] of bad) {
    it(`rejects ${JSON.stringify(sel)}`, () => {
      assert.throws(() => labelSelectorAsSelector(sel as never), re);
    });
  }

  it('selectorFromSet', () => {
    const s = selectorFromSet({ app: 'web', tier: 'fe' });
    assert.equal(s.matches({ app: 'web', tier: 'fe', x: 'y' }), true);
    assert.equal(s.matches({ app: 'web' }), false);
    assert.equal(s.toString(), 'app=web,tier=fe');
    assert.equal(selectorFromSet(undefined).empty(), true);
  });

  it('labels parsed from hostile JSON are read as own properties only', () => {
    const labels = JSON.parse('{"__proto__": "x", "constructor": "y"}') as Record<string, string>;
    assert.equal(parseLabelSelector('constructor=y').matches(labels), true);
    assert.equal(parseLabelSelector('constructor').matches({}), false);
    assert.equal(parseLabelSelector('hasOwnProperty').matches(labels), false);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });
});

describe('label key and value syntax', () => {
  it('qualified names', () => {
    assert.deepEqual(isQualifiedName('app'), []);
    assert.deepEqual(isQualifiedName('example.com/app-name_1.x'), []);
    assert.deepEqual(isQualifiedName('/a'), ['prefix part must be non-empty']);
    assert.deepEqual(isQualifiedName('a/'), ['name part must be non-empty']);
    assert.equal(isQualifiedName('a/b/c')[0].startsWith('a qualified name must consist of'), true);
    assert.deepEqual(isQualifiedName(`${'a'.repeat(64)}`), ['name part must be no more than 63 characters']);
    assert.deepEqual(
      isQualifiedName('Bad_Prefix/a')[0].slice(0, 44),
      'prefix part a lowercase RFC 1123 subdomain m',
    );
    assert.equal(
      isQualifiedName('-a')[0],
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    );
    assert.deepEqual(isQualifiedName(`${'a'.repeat(254)}/b`), [
      'prefix part must be no more than 253 characters',
    ]);
  });

  it('label values', () => {
    assert.deepEqual(isValidLabelValue(''), []);
    assert.deepEqual(isValidLabelValue('My_Value.1'), []);
    assert.equal(isValidLabelValue('a b').length, 1);
    assert.equal(isValidLabelValue('ü').length, 1);
    assert.deepEqual(isValidLabelValue('a'.repeat(64)), ['must be no more than 63 characters']);
  });
});

describe('field selectors', () => {
  const pod = {
    metadata: { name: 'p', namespace: 'default' },
    spec: { nodeName: '', hostNetwork: true },
    status: { phase: 'Running' },
  };
  const fields = objectFields('pods', pod);

  const table: [string, boolean, string][] = [
    ['', true, ''],
    ['metadata.name=p', true, 'metadata.name=p'],
    ['metadata.name==p', true, 'metadata.name==p'],
    ['metadata.name!=p', false, 'metadata.name!=p'],
    ['spec.nodeName=', true, 'spec.nodeName='],
    ['spec.nodeName!=', false, 'spec.nodeName!='],
    [
      'status.phase=Running,metadata.namespace=default',
      true,
      'status.phase=Running,metadata.namespace=default',
    ],
    ['spec.hostNetwork=true', true, 'spec.hostNetwork=true'],
    ['metadata.name=a\\,b', false, 'metadata.name=a\\,b'],
    ['status.podIP=', true, 'status.podIP='],
  ];
  for (const [text, want, canonical] of table) {
    it(`${JSON.stringify(text)}`, () => {
      const s = parseFieldSelector(text);
      assert.equal(s.matches(fields), want);
      assert.equal(s.toString(), canonical);
      checkSupportedFields('pods', s);
    });
  }

  it('escapes', () => {
    const s = parseFieldSelector('metadata.name=a\\=b\\\\c');
    assert.equal(s.requirements[0].value, 'a=b\\c');
    assert.equal(s.matches({ 'metadata.name': 'a=b\\c' }), true);
    assert.equal(parseFieldSelector(s.toString()).requirements[0].value, 'a=b\\c');
  });

  const bad: [string, RegExp][] = [
    ['metadata.name', /invalid selector: 'metadata.name'; can't understand 'metadata.name'/],
    ['a=b,', /can't understand ''/],
    ['a=b=c', /unescaped =/],
    ['a=b\\x', /invalid escape sequence: \\x/],
    ['=b', /empty field name/],
  ];
  for (const [text, re] of bad) {
    it(`rejects ${JSON.stringify(text)}`, () => {
      assert.throws(
        () => parseFieldSelector(text),
        (e: unknown) => e instanceof FieldSelectorParseError && re.test(e.message),
      );
    });
  }

  it('unsupported fields are named', () => {
    assert.throws(
      () => checkSupportedFields('pods', parseFieldSelector('spec.foo=x')),
      /field label not supported: spec.foo/,
    );
    checkSupportedFields('events', parseFieldSelector('involvedObject.name=x,reason=Failed'));
  });

  it('event and node fields', () => {
    const ev = objectFields('events', {
      involvedObject: { kind: 'Pod', name: 'p' },
      source: { component: 'kubelet' },
    });
    assert.equal(fieldSelectorFromSet({ 'involvedObject.kind': 'Pod', source: 'kubelet' }).matches(ev), true);
    assert.equal(objectFields('nodes', { spec: {} })['spec.unschedulable'], 'false');
  });

  it('hostile objects do not leak prototype values', () => {
    const obj = JSON.parse('{"metadata": {"__proto__": {"name": "evil"}}}');
    assert.equal(objectFields('pods', obj)['metadata.name'], '');
    assert.equal(objectFields('pods', { metadata: 'x' })['metadata.name'], '');
  });
});
