// ObjectMeta validation on create and update: names, namespace, labels, annotations,
// owner references and finalizers, with Kubernetes' paths and messages.

import { type FieldError, fieldErrors } from '../field-errors.js';
import { isDNS1123Label, isDNS1123Subdomain, isQualifiedName, isValidLabelValue } from './names.js';
import {
  arrAt,
  IMMUTABLE,
  intAt,
  isObj,
  jsonEqual,
  nameErrors,
  nonNegative,
  type Obj,
  objAt,
  own,
  strAt,
  stringMapAt,
} from './util.js';

/** Validates an object name; returns Kubernetes' messages (empty when valid). */
export type NameValidator = (name: string, prefix: boolean) => string[];

/** Annotations may total at most 256 KiB (keys plus values, in bytes). */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

/** generateName prefixes may end in '-', which is checked without it. */
function maskTrailingDash(name: string): string {
  return name.length > 1 && name.endsWith('-') ? name.slice(0, -1) : name;
}

export const nameIsDNSSubdomain: NameValidator = (name, prefix) =>
  isDNS1123Subdomain(prefix ? maskTrailingDash(name) : name);

export const nameIsDNSLabel: NameValidator = (name, prefix) =>
  isDNS1123Label(prefix ? maskTrailingDash(name) : name);

/** Names that only have to be usable as one URL path segment (RBAC objects). */
export const nameIsPathSegment: NameValidator = (name, prefix) => {
  if (!prefix && (name === '.' || name === '..')) return [`may not be '${name}'`];
  const errs: string[] = [];
  for (const bad of ['/', '%']) if (name.includes(bad)) errs.push(`may not contain '${bad}'`);
  return errs;
};

export function validateLabels(v: unknown, path: string, errs: FieldError[]): void {
  for (const [k, val] of stringMapAt(v, path, errs)) {
    nameErrors(k, isQualifiedName(k), path, errs);
    nameErrors(val, isValidLabelValue(val), path, errs);
  }
}

export function validateAnnotations(v: unknown, path: string, errs: FieldError[]): void {
  let total = 0;
  for (const [k, val] of stringMapAt(v, path, errs)) {
    nameErrors(k, isQualifiedName(k.toLowerCase()), path, errs);
    total += Buffer.byteLength(k) + Buffer.byteLength(val);
  }
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT)
    errs.push(fieldErrors.tooLong(path, '', TOTAL_ANNOTATION_SIZE_LIMIT));
}

function validateOwnerReferences(v: unknown, path: string, errs: FieldError[]): void {
  const controllers: string[] = [];
  for (const [i, item] of arrAt(v, path, errs).entries()) {
    const ref = objAt(item, `${path}[${i}]`, errs);
    if (!ref) continue;
    const apiVersion = strAt(own(ref, 'apiVersion'), `${path}.apiVersion`, errs) ?? '';
    const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
    if (!version)
      errs.push(fieldErrors.invalid(`${path}.apiVersion`, apiVersion, 'version must not be empty'));
    const kind = strAt(own(ref, 'kind'), `${path}.kind`, errs) ?? '';
    if (!kind) errs.push(fieldErrors.invalid(`${path}.kind`, kind, 'kind must not be empty'));
    const name = strAt(own(ref, 'name'), `${path}.name`, errs) ?? '';
    if (!name) errs.push(fieldErrors.invalid(`${path}.name`, name, 'name must not be empty'));
    const uid = strAt(own(ref, 'uid'), `${path}.uid`, errs) ?? '';
    if (!uid) errs.push(fieldErrors.invalid(`${path}.uid`, uid, 'uid must not be empty'));
    if (own(ref, 'controller') === true) controllers.push(`${kind}/${name}`);
  }
  if (controllers.length > 1) {
    errs.push(
      fieldErrors.invalid(
        path,
        v,
        `Only one reference can have Controller set to true. Found "true" in references for ${controllers.join(' and ')}`,
      ),
    );
  }
}

/** Validates metadata of a new object. */
export function validateObjectMeta(
  obj: Obj,
  namespaced: boolean,
  validateName: NameValidator,
  errs: FieldError[],
  path = 'metadata',
): void {
  const meta = objAt(own(obj, 'metadata'), path, errs);
  if (!meta) {
    errs.push(fieldErrors.required(`${path}.name`, 'name or generateName is required'));
    return;
  }
  const name = strAt(own(meta, 'name'), `${path}.name`, errs) ?? '';
  const generateName = strAt(own(meta, 'generateName'), `${path}.generateName`, errs) ?? '';
  if (generateName) nameErrors(generateName, validateName(generateName, true), `${path}.generateName`, errs);
  if (!name && !generateName) {
    errs.push(fieldErrors.required(`${path}.name`, 'name or generateName is required'));
  } else if (name) {
    nameErrors(name, validateName(name, false), `${path}.name`, errs);
  }

  const namespace = strAt(own(meta, 'namespace'), `${path}.namespace`, errs) ?? '';
  if (namespaced) {
    if (!namespace) errs.push(fieldErrors.required(`${path}.namespace`));
    else nameErrors(namespace, isDNS1123Label(namespace), `${path}.namespace`, errs);
  } else if (namespace) {
    errs.push(fieldErrors.forbidden(`${path}.namespace`, 'not allowed on this type'));
  }

  nonNegative(intAt(own(meta, 'generation'), `${path}.generation`, errs), `${path}.generation`, errs);
  validateLabels(own(meta, 'labels'), `${path}.labels`, errs);
  validateAnnotations(own(meta, 'annotations'), `${path}.annotations`, errs);
  validateOwnerReferences(own(meta, 'ownerReferences'), `${path}.ownerReferences`, errs);
  for (const [i, f] of arrAt(own(meta, 'finalizers'), `${path}.finalizers`, errs).entries()) {
    const fp = `${path}.finalizers[${i}]`;
    const s = strAt(f, fp, errs);
    if (s !== undefined) nameErrors(s, isQualifiedName(s), fp, errs);
  }
}

/** Validates metadata of an update: what create checks, plus fields that may not change. */
export function validateObjectMetaUpdate(
  newObj: Obj,
  oldObj: Obj,
  namespaced: boolean,
  validateName: NameValidator,
  errs: FieldError[],
): void {
  validateObjectMeta(newObj, namespaced, validateName, errs);
  const nm = isObj(own(newObj, 'metadata')) ? (own(newObj, 'metadata') as Obj) : {};
  const om = isObj(own(oldObj, 'metadata')) ? (own(oldObj, 'metadata') as Obj) : {};
  for (const f of ['name', 'namespace', 'uid', 'creationTimestamp']) {
    immutable(own(nm, f), own(om, f), `metadata.${f}`, errs);
  }
  // Once set, a deletion can be shortened by the server but never undone by a client.
  const oldDeletion = own(om, 'deletionTimestamp');
  if (oldDeletion !== undefined && oldDeletion !== null) {
    immutable(own(nm, 'deletionTimestamp'), oldDeletion, 'metadata.deletionTimestamp', errs);
  }
}

/** Invalid "field is immutable" if the values differ (missing equals missing). */
export function immutable(newValue: unknown, oldValue: unknown, path: string, errs: FieldError[]): void {
  const a = newValue === null ? undefined : newValue;
  const b = oldValue === null ? undefined : oldValue;
  if (!jsonEqual(a, b)) errs.push(fieldErrors.invalid(path, a ?? null, IMMUTABLE));
}
