// apiextensions.k8s.io/v1 CustomResourceDefinitions: the rules of Kubernetes'
// apiextensions validation (its field paths and messages) for the name, group,
// names, scope, versions and the structural schema each version carries.
import { type FieldError, fieldErrors } from '../field-errors.js';
import { celCompileError } from './cel-rules.js';
import { isDNS1035Label, isDNS1123Subdomain } from './names.js';
import { arrAt, isObj, nameErrors, type Obj, objAt, own, strAt } from './util.js';

export const CRD_SCOPES = ['Cluster', 'Namespaced'] as const;
export const CRD_CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';
const APPROVAL_ANNOTATION = 'api-approved.kubernetes.io';

/** Groups only Kubernetes' own API reviews may define (*.k8s.io, *.kubernetes.io). */
function isProtectedGroup(group: string): boolean {
  return ['k8s.io', 'kubernetes.io'].some((d) => group === d || group.endsWith(`.${d}`));
}

const SCHEMA_TYPES = ['array', 'boolean', 'integer', 'number', 'object', 'string'];

/** What a structural schema may not say anywhere (it would make pruning and defaulting ambiguous). */
const FORBIDDEN_ANYWHERE = ['$ref', 'definitions', 'dependencies', 'additionalItems', 'patternProperties'];

/**
 * The structural schema rules: a type on every node unless it preserves unknown
 * fields or is int-or-string, known types only, no $ref, properties and
 * additionalProperties exclusive; at the root, metadata may only restrict name
 * and generateName, and the root is an object.
 */
function validateStructural(
  s: unknown,
  path: string,
  root: boolean,
  where: string,
  errs: FieldError[],
): void {
  if (!isObj(s)) {
    errs.push(fieldErrors.typeInvalid(path, s, 'must be an object'));
    return;
  }
  for (const k of FORBIDDEN_ANYWHERE) {
    if (own(s, k) !== undefined) errs.push(fieldErrors.forbidden(`${path}.${k}`, `${k} is forbidden`));
  }
  const type = own(s, 'type');
  const preserve = own(s, 'x-kubernetes-preserve-unknown-fields') === true;
  const intOrString = own(s, 'x-kubernetes-int-or-string') === true;
  if (type === undefined || type === '') {
    if (!preserve && !intOrString) {
      errs.push(fieldErrors.required(`${path}.type`, `must not be empty ${where}`));
    }
  } else if (typeof type !== 'string' || !SCHEMA_TYPES.includes(type)) {
    errs.push(fieldErrors.notSupported(`${path}.type`, type, SCHEMA_TYPES));
  } else if (intOrString) {
    errs.push(
      fieldErrors.invalid(`${path}.type`, type, 'must be empty if x-kubernetes-int-or-string is true'),
    );
  }
  if (root && type !== undefined && type !== 'object') {
    errs.push(fieldErrors.invalid(`${path}.type`, type, 'must be object at the root'));
  }
  const props = own(s, 'properties');
  const additional = own(s, 'additionalProperties');
  if (props !== undefined && additional !== undefined && additional !== false) {
    errs.push(
      fieldErrors.forbidden(
        `${path}.additionalProperties`,
        'additionalProperties and properties are mutual exclusive',
      ),
    );
  }
  if (own(s, 'x-kubernetes-embedded-resource') === true && type !== 'object') {
    errs.push(
      fieldErrors.invalid(`${path}.type`, type, 'must be object if x-kubernetes-embedded-resource is true'),
    );
  }
  if (props !== undefined) {
    const p = objAt(props, `${path}.properties`, errs);
    for (const [name, child] of Object.entries(p ?? {})) {
      const cp = `${path}.properties[${name}]`;
      if (root && name === 'metadata') validateRootMetadata(child, cp, errs);
      else validateStructural(child, cp, false, 'for specified object fields', errs);
    }
  }
  if (isObj(additional)) {
    validateStructural(
      additional,
      `${path}.additionalProperties`,
      false,
      'for specified additionalProperties',
      errs,
    );
  }
  const items = own(s, 'items');
  if (type === 'array' && items === undefined) {
    errs.push(fieldErrors.required(`${path}.items`, 'must be specified'));
  }
  if (items !== undefined) {
    if (Array.isArray(items)) {
      errs.push(fieldErrors.forbidden(`${path}.items`, 'items must be a schema object and not an array'));
    } else validateStructural(items, `${path}.items`, false, 'for specified array items', errs);
  }
  for (const k of ['allOf', 'anyOf', 'oneOf'] as const) {
    for (const [i, sub] of arrAt(own(s, k), `${path}.${k}`, errs).entries()) {
      if (isObj(sub) && own(sub, 'type') !== undefined && own(sub, 'type') !== type) {
        errs.push(fieldErrors.forbidden(`${path}.${k}[${i}].type`, 'must be empty to be structural'));
      }
    }
  }
  for (const [i, r] of arrAt(
    own(s, 'x-kubernetes-validations'),
    `${path}.x-kubernetes-validations`,
    errs,
  ).entries()) {
    const rp = `${path}.x-kubernetes-validations[${i}].rule`;
    const rule = isObj(r) ? own(r, 'rule') : undefined;
    if (typeof rule !== 'string' || !rule) {
      errs.push(fieldErrors.required(rp));
      continue;
    }
    const problem = celCompileError(rule);
    if (problem) errs.push(fieldErrors.invalid(rp, rule, `compilation failed: ${problem}`));
  }
  const listType = own(s, 'x-kubernetes-list-type');
  if (listType !== undefined) {
    if (!['atomic', 'set', 'map'].includes(String(listType))) {
      errs.push(
        fieldErrors.notSupported(`${path}.x-kubernetes-list-type`, listType, ['atomic', 'set', 'map']),
      );
    } else if (type !== 'array') {
      errs.push(
        fieldErrors.invalid(`${path}.type`, type, 'must be array if x-kubernetes-list-type is specified'),
      );
    }
    const keys = own(s, 'x-kubernetes-list-map-keys');
    if (listType === 'map' && (!Array.isArray(keys) || keys.length === 0)) {
      errs.push(
        fieldErrors.required(
          `${path}.x-kubernetes-list-map-keys`,
          'must not be empty if x-kubernetes-list-type is map',
        ),
      );
    }
  }
}

/** The root's metadata may only set the type object and restrict name and generateName. */
function validateRootMetadata(s: unknown, path: string, errs: FieldError[]): void {
  if (!isObj(s)) {
    errs.push(fieldErrors.typeInvalid(path, s, 'must be an object'));
    return;
  }
  const type = own(s, 'type');
  if (type !== undefined && type !== 'object') {
    errs.push(fieldErrors.invalid(`${path}.type`, type, 'must be object'));
  }
  for (const k of Object.keys(s)) {
    if (k === 'type') continue;
    if (k !== 'properties') {
      errs.push(
        fieldErrors.forbidden(
          path,
          'must not specify anything other than name and generateName, but metadata is implicitly specified',
        ),
      );
      return;
    }
  }
  const props = objAt(own(s, 'properties'), `${path}.properties`, errs) ?? {};
  for (const [name, child] of Object.entries(props)) {
    if (name !== 'name' && name !== 'generateName') {
      errs.push(
        fieldErrors.forbidden(
          path,
          'must not specify anything other than name and generateName, but metadata is implicitly specified',
        ),
      );
      return;
    }
    if (!isObj(child) || own(child, 'type') !== 'string') {
      errs.push(
        fieldErrors.invalid(`${path}.properties[${name}].type`, own(child as Obj, 'type'), 'must be string'),
      );
    }
  }
}

function validateNames(names: Obj | undefined, path: string, errs: FieldError[]): void {
  if (!names) {
    errs.push(fieldErrors.required(path));
    return;
  }
  const plural = strAt(own(names, 'plural'), `${path}.plural`, errs) ?? '';
  if (!plural) errs.push(fieldErrors.required(`${path}.plural`));
  else nameErrors(plural, isDNS1035Label(plural), `${path}.plural`, errs);
  const singular = strAt(own(names, 'singular'), `${path}.singular`, errs) ?? '';
  if (singular) nameErrors(singular, isDNS1035Label(singular), `${path}.singular`, errs);
  const kind = strAt(own(names, 'kind'), `${path}.kind`, errs) ?? '';
  if (!kind) errs.push(fieldErrors.required(`${path}.kind`));
  else nameErrors(kind, isDNS1035Label(kind.toLowerCase()), `${path}.kind`, errs);
  const listKind = strAt(own(names, 'listKind'), `${path}.listKind`, errs) ?? '';
  if (listKind) {
    nameErrors(listKind, isDNS1035Label(listKind.toLowerCase()), `${path}.listKind`, errs);
    if (listKind === kind)
      errs.push(fieldErrors.invalid(`${path}.listKind`, listKind, 'kind and listKind may not be the same'));
  }
  for (const k of ['shortNames', 'categories'] as const) {
    for (const [i, v] of arrAt(own(names, k), `${path}.${k}`, errs).entries()) {
      const p = `${path}.${k}[${i}]`;
      if (typeof v !== 'string') errs.push(fieldErrors.typeInvalid(p, v, 'must be a string'));
      else nameErrors(v, isDNS1035Label(v), p, errs);
    }
  }
}

function validateVersions(spec: Obj, errs: FieldError[]): void {
  const versions = arrAt(own(spec, 'versions'), 'spec.versions', errs);
  if (versions.length === 0) {
    errs.push(
      fieldErrors.invalid(
        'spec.versions',
        versions,
        'must have exactly one version marked as storage version',
      ),
    );
    return;
  }
  let storage = 0;
  const seen = new Set<string>();
  for (const [i, v] of versions.entries()) {
    const p = `spec.versions[${i}]`;
    if (!isObj(v)) {
      errs.push(fieldErrors.typeInvalid(p, v, 'must be an object'));
      continue;
    }
    const name = strAt(own(v, 'name'), `${p}.name`, errs) ?? '';
    if (!name) errs.push(fieldErrors.required(`${p}.name`));
    else nameErrors(name, isDNS1035Label(name), `${p}.name`, errs);
    if (seen.has(name)) errs.push(fieldErrors.duplicate(`${p}.name`, name));
    seen.add(name);
    if (own(v, 'storage') === true) storage++;
    for (const f of ['served', 'storage']) {
      if (typeof own(v, f) !== 'boolean') errs.push(fieldErrors.required(`${p}.${f}`));
    }
    const schema = isObj(own(v, 'schema')) ? (own(v, 'schema') as Obj) : undefined;
    const root = schema && own(schema, 'openAPIV3Schema');
    if (root === undefined) {
      errs.push(fieldErrors.required(`${p}.schema.openAPIV3Schema`, 'schemas are required'));
    } else {
      validateStructural(root, `${p}.schema.openAPIV3Schema`, true, 'at the root', errs);
    }
    validateSubresources(own(v, 'subresources'), `${p}.subresources`, errs);
    for (const [j, c] of arrAt(
      own(v, 'additionalPrinterColumns'),
      `${p}.additionalPrinterColumns`,
      errs,
    ).entries()) {
      const cp = `${p}.additionalPrinterColumns[${j}]`;
      if (!isObj(c)) continue;
      if (!own(c, 'name')) errs.push(fieldErrors.required(`${cp}.name`));
      if (!own(c, 'jsonPath')) errs.push(fieldErrors.required(`${cp}.jsonPath`));
      const t = own(c, 'type');
      const types = ['integer', 'number', 'string', 'boolean', 'date'];
      if (!t) errs.push(fieldErrors.required(`${cp}.type`));
      else if (!types.includes(String(t))) errs.push(fieldErrors.notSupported(`${cp}.type`, t, types));
    }
  }
  if (storage !== 1) {
    errs.push(
      fieldErrors.invalid(
        'spec.versions',
        versions,
        'must have exactly one version marked as storage version',
      ),
    );
  }
  if (!versions.some((v) => isObj(v) && own(v, 'served') === true)) {
    errs.push(
      fieldErrors.invalid('spec.versions', versions, 'must have at least one version marked as served'),
    );
  }
}

function validateSubresources(v: unknown, path: string, errs: FieldError[]): void {
  if (v === undefined) return;
  const sub = objAt(v, path, errs);
  const scale = sub && own(sub, 'scale');
  if (!isObj(scale)) return;
  for (const f of ['specReplicasPath', 'statusReplicasPath'] as const) {
    const jp = own(scale, f);
    if (typeof jp !== 'string' || !jp) errs.push(fieldErrors.required(`${path}.scale.${f}`));
    else if (!jp.startsWith('.')) {
      errs.push(
        fieldErrors.invalid(`${path}.scale.${f}`, jp, 'should be a json path under .spec or .status'),
      );
    }
  }
  if (
    typeof own(scale, 'specReplicasPath') === 'string' &&
    !String(own(scale, 'specReplicasPath')).startsWith('.spec.')
  ) {
    errs.push(
      fieldErrors.invalid(
        `${path}.scale.specReplicasPath`,
        own(scale, 'specReplicasPath'),
        'should be a json path under .spec',
      ),
    );
  }
}

/** Everything wrong with a CustomResourceDefinition beyond its ObjectMeta. */
export function validateCustomResourceDefinition(crd: Obj, errs: FieldError[]): void {
  const spec = objAt(own(crd, 'spec'), 'spec', errs);
  if (!spec) {
    errs.push(fieldErrors.required('spec'));
    return;
  }
  const meta = isObj(own(crd, 'metadata')) ? (own(crd, 'metadata') as Obj) : {};
  const group = strAt(own(spec, 'group'), 'spec.group', errs) ?? '';
  if (!group) errs.push(fieldErrors.required('spec.group'));
  else {
    nameErrors(group, isDNS1123Subdomain(group), 'spec.group', errs);
    if (group.split('.').length < 2) {
      errs.push(fieldErrors.invalid('spec.group', group, 'should be a domain with at least one dot'));
    }
  }
  const names = isObj(own(spec, 'names')) ? (own(spec, 'names') as Obj) : undefined;
  const plural = names && typeof own(names, 'plural') === 'string' ? (own(names, 'plural') as string) : '';
  const name = typeof own(meta, 'name') === 'string' ? (own(meta, 'name') as string) : '';
  if (name !== `${plural}.${group}`) {
    errs.push(fieldErrors.invalid('metadata.name', name, 'must be spec.names.plural+"."+spec.group'));
  }
  if (group && isProtectedGroup(group)) {
    const ann = isObj(own(meta, 'annotations')) ? (own(meta, 'annotations') as Obj) : {};
    if (!own(ann, APPROVAL_ANNOTATION)) {
      errs.push(
        fieldErrors.required(
          `metadata.annotations[${APPROVAL_ANNOTATION}]`,
          `protected groups must have approval annotation "${APPROVAL_ANNOTATION}", see https://github.com/kubernetes/enhancements/pull/1111`,
        ),
      );
    }
  }
  const scope = own(spec, 'scope');
  if (scope === undefined || scope === '') errs.push(fieldErrors.required('spec.scope'));
  else if (!CRD_SCOPES.includes(scope as (typeof CRD_SCOPES)[number])) {
    errs.push(fieldErrors.notSupported('spec.scope', scope, CRD_SCOPES));
  }
  validateNames(names, 'spec.names', errs);
  validateVersions(spec, errs);
  const conversion = own(spec, 'conversion');
  if (
    isObj(conversion) &&
    own(conversion, 'strategy') !== undefined &&
    own(conversion, 'strategy') !== 'None'
  ) {
    errs.push(fieldErrors.notSupported('spec.conversion.strategy', own(conversion, 'strategy'), ['None']));
  }
}

/** What may not change: the scope, and the group (names the storage). */
export function validateCustomResourceDefinitionUpdate(crd: Obj, old: Obj, errs: FieldError[]): void {
  const spec = isObj(own(crd, 'spec')) ? (own(crd, 'spec') as Obj) : {};
  const oldSpec = isObj(own(old, 'spec')) ? (own(old, 'spec') as Obj) : {};
  if (own(spec, 'scope') !== own(oldSpec, 'scope')) {
    errs.push(fieldErrors.invalid('spec.scope', own(spec, 'scope'), 'field is immutable'));
  }
}

/** v1 defaults: singular and listKind from the kind, conversion None. */
export function defaultCustomResourceDefinition(crd: Obj): void {
  const spec = isObj(own(crd, 'spec')) ? (own(crd, 'spec') as Obj) : undefined;
  const names = spec && isObj(own(spec, 'names')) ? (own(spec, 'names') as Obj) : undefined;
  if (!spec || !names) return;
  const kind = typeof own(names, 'kind') === 'string' ? (own(names, 'kind') as string) : '';
  if (kind && !own(names, 'singular')) names.singular = kind.toLowerCase();
  if (kind && !own(names, 'listKind')) names.listKind = `${kind}List`;
  if (own(spec, 'conversion') === undefined) spec.conversion = { strategy: 'None' };
}
