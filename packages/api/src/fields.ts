// Field selectors (`metadata.name=x,spec.nodeName!=`), parsed once into a matcher over a
// flat set of field values. Values may escape `\`, `,` and `=` with a backslash, as in
// Kubernetes. Which fields each resource supports is listed here too, so the apiserver
// and the client agree on them.

export type FieldOperator = '=' | '==' | '!=';

export interface FieldRequirement {
  readonly field: string;
  readonly operator: FieldOperator;
  readonly value: string;
}

export type FieldSet = Readonly<Record<string, string>>;

export class FieldSelectorParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FieldSelectorParseError';
  }
}

export interface FieldSelector {
  matches(fields: FieldSet): boolean;
  empty(): boolean;
  toString(): string;
  readonly requirements: readonly FieldRequirement[];
  /** The value a field must equal, if the selector pins it (e.g. spec.nodeName for a kubelet's watch). */
  requiresExactMatch(field: string): string | undefined;
}

function escapeValue(v: string): string {
  return v.replace(/[\\,=]/g, (c) => `\\${c}`);
}

class CompiledFieldSelector implements FieldSelector {
  constructor(readonly requirements: readonly FieldRequirement[]) {}

  matches(fields: FieldSet): boolean {
    for (const r of this.requirements) {
      const v = Object.hasOwn(fields, r.field) ? fields[r.field] : '';
      if (r.operator === '!=' ? v === r.value : v !== r.value) return false;
    }
    return true;
  }

  empty(): boolean {
    return this.requirements.length === 0;
  }

  requiresExactMatch(field: string): string | undefined {
    for (const r of this.requirements) if (r.field === field && r.operator !== '!=') return r.value;
    return undefined;
  }

  toString(): string {
    return this.requirements.map((r) => `${r.field}${r.operator}${escapeValue(r.value)}`).join(',');
  }
}

export function everythingFields(): FieldSelector {
  return new CompiledFieldSelector([]);
}

/** Splits on unescaped commas, keeping escapes for the term parser. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      i++;
    } else if (c === ',') {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms;
}

function unescapeValue(selector: string, raw: string): string {
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c === '\\') {
      const n = raw[i + 1];
      if (n !== '\\' && n !== ',' && n !== '=') {
        throw new FieldSelectorParseError(
          `invalid field selector ${JSON.stringify(selector)}: invalid escape sequence: ${raw.slice(i, i + 2)}`,
        );
      }
      out += n;
      i++;
    } else if (c === ',' || c === '=') {
      throw new FieldSelectorParseError(`invalid field selector ${JSON.stringify(selector)}: unescaped ${c}`);
    } else {
      out += c;
    }
  }
  return out;
}

function parseTerm(selector: string, term: string): FieldRequirement {
  // The first unescaped operator splits field from value; "!=" and "==" before "=".
  for (let i = 0; i < term.length; i++) {
    const c = term[i];
    if (c === '\\') {
      i++;
      continue;
    }
    let op: FieldOperator | undefined;
    if (c === '!' && term[i + 1] === '=') op = '!=';
    else if (c === '=' && term[i + 1] === '=') op = '==';
    else if (c === '=') op = '=';
    if (op) {
      const field = term.slice(0, i).trim();
      const value = unescapeValue(selector, term.slice(i + op.length));
      if (field === '') {
        throw new FieldSelectorParseError(
          `invalid field selector ${JSON.stringify(selector)}: empty field name in '${term}'`,
        );
      }
      return Object.freeze({ field, operator: op, value });
    }
  }
  throw new FieldSelectorParseError(`invalid selector: '${selector}'; can't understand '${term}'`);
}

/** Parses `field=value,field!=value`; "" selects everything. */
export function parseFieldSelector(text: string): FieldSelector {
  if (text.trim() === '') return everythingFields();
  const shown = text.length > 200 ? `${text.slice(0, 200)}...` : text;
  const reqs = splitTerms(text).map((term) => {
    if (term.trim() === '') {
      throw new FieldSelectorParseError(`invalid selector: '${shown}'; can't understand ''`);
    }
    return parseTerm(shown, term);
  });
  return new CompiledFieldSelector(reqs);
}

/** A selector requiring each field=value (e.g. { 'spec.nodeName': 'node-1' }). */
export function fieldSelectorFromSet(set: FieldSet): FieldSelector {
  return new CompiledFieldSelector(
    Object.keys(set).map((field) => ({ field, operator: '=' as const, value: set[field] })),
  );
}

// ---- which fields each resource supports --------------------------------------------

const COMMON = ['metadata.name', 'metadata.namespace'];

/** Field selector labels supported per plural resource, as Kubernetes lists them. */
export const SUPPORTED_FIELDS: Readonly<Record<string, readonly string[]>> = {
  pods: [
    ...COMMON,
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'spec.hostNetwork',
    'status.phase',
    'status.podIP',
    'status.nominatedNodeName',
  ],
  nodes: [...COMMON, 'spec.unschedulable'],
  events: [
    ...COMMON,
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
  ],
  secrets: [...COMMON, 'type'],
  namespaces: [...COMMON, 'status.phase'],
  replicasets: [...COMMON, 'status.replicas'],
  replicationcontrollers: [...COMMON, 'status.replicas'],
};

export function supportedFields(resource: string): readonly string[] {
  return Object.hasOwn(SUPPORTED_FIELDS, resource) ? SUPPORTED_FIELDS[resource] : COMMON;
}

/** Throws naming the first field the resource does not support (Kubernetes' wording). */
export function checkSupportedFields(resource: string, selector: FieldSelector): void {
  const ok = supportedFields(resource);
  for (const r of selector.requirements) {
    if (!ok.includes(r.field)) throw new FieldSelectorParseError(`field label not supported: ${r.field}`);
  }
}

function lookup(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (typeof cur !== 'object' || cur === null || !Object.hasOwn(cur, part)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function asFieldValue(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return '';
}

/**
 * The field set of an object for the resource's supported fields; absent fields are ""
 * (so `spec.nodeName=` selects unscheduled pods). Event `source` is source.component.
 */
export function objectFields(resource: string, obj: unknown): FieldSet {
  const out: Record<string, string> = Object.create(null);
  for (const f of supportedFields(resource)) {
    if (resource === 'events' && f === 'source') {
      out[f] =
        asFieldValue(lookup(obj, 'source.component')) || asFieldValue(lookup(obj, 'reportingComponent'));
    } else if (resource === 'pods' && f === 'spec.hostNetwork') {
      out[f] = lookup(obj, f) === true ? 'true' : 'false';
    } else if (resource === 'nodes' && f === 'spec.unschedulable') {
      out[f] = lookup(obj, f) === true ? 'true' : 'false';
    } else {
      out[f] = asFieldValue(lookup(obj, f));
    }
  }
  return out;
}
