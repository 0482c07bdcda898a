// Field errors: one problem with one field of an object, as Kubernetes reports them
// (the `causes` of an Invalid Status). Validation builds these; status.ts turns a list
// of them into the 422 Invalid StatusError.

/** The cause types Kubernetes puts in `details.causes[].reason`. */
export type FieldErrorType =
  | 'FieldValueNotFound'
  | 'FieldValueRequired'
  | 'FieldValueDuplicate'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'FieldValueTypeInvalid'
  | 'InternalError';

export interface FieldError {
  type: FieldErrorType;
  /** Path of the field, e.g. `spec.containers[0].image`. */
  field: string;
  /** The offending value; omitted (undefined) when printing it would not help. */
  badValue?: unknown;
  /** Extra explanation appended after the value. */
  detail: string;
}

// The human words Kubernetes prints for each type.
const TYPE_WORDS: Record<FieldErrorType, string> = {
  FieldValueNotFound: 'Not found',
  FieldValueRequired: 'Required value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  FieldValueTypeInvalid: 'Invalid value',
  InternalError: 'Internal error',
};

// Types whose message never shows the value (Kubernetes omits it for these).
const VALUELESS: ReadonlySet<FieldErrorType> = new Set([
  'FieldValueRequired',
  'FieldValueForbidden',
  'FieldValueTooLong',
  'InternalError',
]);

/** Longer renderings are cut so a hostile value cannot make a huge error message. */
const MAX_RENDERED_VALUE = 4096;

/** Renders a value the way Go's %v / %q would for the simple cases. */
function renderValue(value: unknown): string {
  const text = renderFull(value);
  return text.length > MAX_RENDERED_VALUE ? `${text.slice(0, MAX_RENDERED_VALUE)}...(truncated)` : text;
}

function renderFull(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value);
    default: {
      try {
        return JSON.stringify(value) ?? String(value);
      } catch {
        return String(value);
      }
    }
  }
}

/** The message of one field error without its field path ("Invalid value: \"x\": detail"). */
export function fieldErrorBody(err: FieldError): string {
  let s = TYPE_WORDS[err.type];
  if (!VALUELESS.has(err.type) && err.badValue !== undefined) {
    s += `: ${renderValue(err.badValue)}`;
  }
  if (err.detail) s += `: ${err.detail}`;
  return s;
}

/** The full message of one field error ("spec.containers[0].image: Required value"). */
export function fieldErrorString(err: FieldError): string {
  return err.field ? `${err.field}: ${fieldErrorBody(err)}` : fieldErrorBody(err);
}

/**
 * Joins messages as Kubernetes' error aggregate does: duplicates dropped, one message
 * alone as is, several as "[a, b]".
 */
export function aggregateMessages(messages: readonly string[]): string {
  const unique = [...new Set(messages)];
  if (unique.length === 0) return '';
  if (unique.length === 1) return unique[0];
  return `[${unique.join(', ')}]`;
}

/** Builders for each kind of field error. */
export const fieldErrors = {
  required(field: string, detail = ''): FieldError {
    return { type: 'FieldValueRequired', field, detail };
  },
  invalid(field: string, value: unknown, detail = ''): FieldError {
    return { type: 'FieldValueInvalid', field, badValue: value, detail };
  },
  duplicate(field: string, value: unknown): FieldError {
    return { type: 'FieldValueDuplicate', field, badValue: value, detail: '' };
  },
  notFound(field: string, value: unknown): FieldError {
    return { type: 'FieldValueNotFound', field, badValue: value, detail: '' };
  },
  notSupported(field: string, value: unknown, supported: readonly string[] = []): FieldError {
    const detail =
      supported.length > 0 ? `supported values: ${supported.map((v) => JSON.stringify(v)).join(', ')}` : '';
    return { type: 'FieldValueNotSupported', field, badValue: value, detail };
  },
  forbidden(field: string, detail: string): FieldError {
    return { type: 'FieldValueForbidden', field, detail };
  },
  tooLong(field: string, value: unknown, maxLength: number): FieldError {
    return {
      type: 'FieldValueTooLong',
      field,
      badValue: value,
      detail: `must have at most ${maxLength} bytes`,
    };
  },
  tooMany(field: string, actual: number, max: number): FieldError {
    return { type: 'FieldValueTooMany', field, badValue: actual, detail: `must have at most ${max} items` };
  },
  typeInvalid(field: string, value: unknown, detail: string): FieldError {
    return { type: 'FieldValueTypeInvalid', field, badValue: value, detail };
  },
  internal(field: string, err: unknown): FieldError {
    return { type: 'InternalError', field, detail: err instanceof Error ? err.message : String(err) };
  },
};

/**
 * A field path under construction: `root('spec').child('containers').index(0).child('image')`
 * prints `spec.containers[0].image`; `.key('app')` prints `[app]`.
 */
export class FieldPath {
  private constructor(private readonly text: string) {}

  static root(name = ''): FieldPath {
    return new FieldPath(name);
  }

  child(name: string, ...more: string[]): FieldPath {
    let text = this.text ? `${this.text}.${name}` : name;
    for (const m of more) text += `.${m}`;
    return new FieldPath(text);
  }

  index(i: number): FieldPath {
    return new FieldPath(`${this.text}[${i}]`);
  }

  key(k: string): FieldPath {
    return new FieldPath(`${this.text}[${k}]`);
  }

  toString(): string {
    return this.text;
  }
}
