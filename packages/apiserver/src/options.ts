// The options of a write, as Kubernetes' CreateOptions, UpdateOptions,
// PatchOptions and DeleteOptions carry them: dryRun, and for a delete its
// grace period, propagation policy and preconditions. A write's options come
// from the query, except a delete's: a DeleteOptions body, when there is one,
// is the whole of them (the query is then ignored, as in Kubernetes).
import { badRequest, fieldErrors, invalid } from '@kubit/api';
import { conform, schemas } from './model/schema.js';
import { BODY_MEDIA_TYPES, bodyFormat, parseBody, queryInt, queryString } from './request.js';

export type OptionsKind = 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions';

/** The only dry-run mode Kubernetes has: every stage runs, nothing is stored. */
const DRY_RUN_VALUES = ['All'];

/**
 * Whether a write is a dry run. `values` is the dryRun list (query or body); any
 * value but "All" is Kubernetes' 422 on the options kind, before anything else runs.
 */
function isDryRun(values: unknown, kind: OptionsKind): boolean {
  // Nearly every write has no dryRun at all: answer that without building lists.
  if (values === undefined) return false;
  const list = (Array.isArray(values) ? values : [values]).map(String);
  const nonEmpty = list.filter((v) => v !== '');
  if (nonEmpty.some((v) => !DRY_RUN_VALUES.includes(v))) {
    throw invalid({ group: 'meta.k8s.io', kind }, '', [
      fieldErrors.notSupported('dryRun', nonEmpty, DRY_RUN_VALUES),
    ]);
  }
  return nonEmpty.length > 0;
}

/** dryRun of a create, update or patch (always a query parameter). */
export function queryDryRun(query: Record<string, unknown>, kind: OptionsKind): boolean {
  return isDryRun(query.dryRun, kind);
}

export type PropagationPolicy = 'Orphan' | 'Background' | 'Foreground';

export interface DeleteOpts {
  /** Seconds to wait before the object is removed (pods); undefined: the object's own. */
  grace?: number;
  policy: PropagationPolicy;
  /** Preconditions: the delete only happens on this uid / resourceVersion. */
  uid?: string;
  rv?: string;
  dryRun: boolean;
  /** orphanDependents was sent as false: a delete that is not immediate answers 202, as Kubernetes'. */
  notOrphaning: boolean;
}

/** The DeleteOptions of a delete or deletecollection: from its body, else from the query. */
export function deleteOptions(
  body: Buffer | undefined,
  contentType: string | undefined,
  query: Record<string, unknown>,
): DeleteOpts {
  return checkDeleteOptions(
    hasBody(body) ? decodeDeleteOptions(body, contentType) : deleteOptionsFromQuery(query),
  );
}

/**
 * Checks decoded DeleteOptions (a body, the query's, or those an Eviction carries) as
 * Kubernetes' ValidateDeleteOptions does, and reads them into what a delete needs.
 */
export function checkDeleteOptions(opts: Record<string, unknown>): DeleteOpts {
  const policyText = typeof opts.propagationPolicy === 'string' ? opts.propagationPolicy : '';
  const errs = [];
  if (policyText && !['Orphan', 'Background', 'Foreground'].includes(policyText)) {
    errs.push(
      fieldErrors.notSupported('propagationPolicy', policyText, ['Foreground', 'Background', 'Orphan']),
    );
  }
  if (typeof opts.orphanDependents === 'boolean' && policyText) {
    errs.push(
      fieldErrors.invalid(
        'propagationPolicy',
        policyText,
        'orphanDependents and deletionPropagation cannot be both set',
      ),
    );
  }
  // A negative grace period means one second, as in Kubernetes (not "now", not an error).
  let grace = typeof opts.gracePeriodSeconds === 'number' ? opts.gracePeriodSeconds : undefined;
  if (grace !== undefined && grace < 0) grace = 1;
  if (errs.length > 0) throw invalid({ group: 'meta.k8s.io', kind: 'DeleteOptions' }, '', errs);
  const dryRun = isDryRun(opts.dryRun, 'DeleteOptions');
  let policy = (policyText || 'Background') as PropagationPolicy;
  if (opts.orphanDependents === true) policy = 'Orphan';
  const pre = typeof opts.preconditions === 'object' && opts.preconditions !== null ? opts.preconditions : {};
  const p = pre as Record<string, unknown>;
  return {
    grace,
    policy,
    uid: typeof p.uid === 'string' ? p.uid : undefined,
    rv: typeof p.resourceVersion === 'string' ? p.resourceVersion : undefined,
    dryRun,
    notOrphaning: opts.orphanDependents === false,
  };
}

function hasBody(body: Buffer | undefined): body is Buffer {
  return body !== undefined && body.length > 0 && body.toString().trim() !== '';
}

function decodeDeleteOptions(body: Buffer, contentType: string | undefined): Record<string, unknown> {
  const raw = parseBody(body, bodyFormat(contentType, BODY_MEDIA_TYPES), 'DeleteOptions');
  const probs = { unknown: [], types: [] as string[] };
  const opts = conform(raw, schemas.deleteOptions, '', probs);
  if (probs.types.length > 0 || typeof opts !== 'object' || opts === null || Array.isArray(opts)) {
    throw badRequest(
      `DeleteOptions cannot be decoded: ${probs.types[0] ?? 'the body must be a JSON object'}`,
    );
  }
  return opts as Record<string, unknown>;
}

function deleteOptionsFromQuery(query: Record<string, unknown>): Record<string, unknown> {
  const orphan = queryString(query, 'orphanDependents');
  if (orphan !== undefined && orphan !== 'true' && orphan !== 'false') {
    throw badRequest(`invalid value for orphanDependents: "${orphan}" is not a boolean`);
  }
  return {
    gracePeriodSeconds: queryInt(query, 'gracePeriodSeconds'),
    propagationPolicy: queryString(query, 'propagationPolicy'),
    orphanDependents: orphan === undefined ? undefined : orphan === 'true',
    dryRun: query.dryRun,
    preconditions: {
      uid: queryString(query, 'preconditions.uid'),
      resourceVersion: queryString(query, 'preconditions.resourceVersion'),
    },
  };
}
