// Kubernetes Status errors: the exact body shape kubectl and client libraries read
// (kind: Status, status: Failure, message, reason, details, code), with constructors
// whose messages match the real apiserver's word for word.

import { aggregateMessages, type FieldError, fieldErrorBody, fieldErrorString } from './field-errors.js';

export type StatusReason =
  | ''
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Invalid'
  | 'ServerTimeout'
  | 'StoreReadError'
  | 'Timeout'
  | 'TooManyRequests'
  | 'BadRequest'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'RequestEntityTooLarge'
  | 'UnsupportedMediaType'
  | 'InternalError'
  | 'Expired'
  | 'ServiceUnavailable';

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** A meta/v1 Status object as sent on the wire. */
export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number; selfLink?: string };
  status: 'Failure' | 'Success';
  message?: string;
  reason?: StatusReason | string;
  details?: StatusDetails;
  code: number;
}

/** A resource qualified by its API group ('' is the core group). */
export interface GroupResource {
  group: string;
  resource: string;
}

/** A kind qualified by its API group ('' is the core group). */
export interface GroupKind {
  group: string;
  kind: string;
}

/** An Error that carries the Status to send back. */
export class StatusError extends Error {
  readonly status: Status;
  readonly code: number;

  constructor(status: Status) {
    super(status.message ?? status.reason ?? `status ${status.code}`);
    this.name = 'StatusError';
    this.status = status;
    this.code = status.code;
  }

  get reason(): string {
    return this.status.reason ?? '';
  }

  /** Wraps a Status received from a server. */
  static fromStatus(status: Status): StatusError {
    return new StatusError(status);
  }
}

function failure(code: number, reason: StatusReason, message: string, details?: StatusDetails): StatusError {
  const status: Status = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
  return new StatusError(status);
}

/** "pods" for the core group, "deployments.apps" otherwise, as Kubernetes prints them. */
export function qualifiedResource(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

/** "Pod" for the core group, "Deployment.apps" otherwise. */
export function qualifiedKind(gk: GroupKind): string {
  return gk.group ? `${gk.kind}.${gk.group}` : gk.kind;
}

function resourceDetails(gr: GroupResource, name: string | undefined): StatusDetails {
  const details: StatusDetails = {};
  if (name) details.name = name;
  if (gr.group) details.group = gr.group;
  details.kind = gr.resource;
  return details;
}

export function notFound(gr: GroupResource, name: string): StatusError {
  return failure(404, 'NotFound', `${qualifiedResource(gr)} "${name}" not found`, resourceDetails(gr, name));
}

/** 404 for a path that names nothing this server serves (no resource, no name). */
export function notFoundPath(): StatusError {
  return failure(404, 'NotFound', 'the server could not find the requested resource', {});
}

export function alreadyExists(gr: GroupResource, name: string): StatusError {
  return failure(
    409,
    'AlreadyExists',
    `${qualifiedResource(gr)} "${name}" already exists`,
    resourceDetails(gr, name),
  );
}

/** The message Kubernetes appends when an update's resourceVersion is stale. */
export const OPTIMISTIC_LOCK_MESSAGE =
  'the object has been modified; please apply your changes to the latest version and try again';

export function conflict(
  gr: GroupResource,
  name: string,
  message: string = OPTIMISTIC_LOCK_MESSAGE,
): StatusError {
  return failure(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualifiedResource(gr)} "${name}": ${message}`,
    resourceDetails(gr, name),
  );
}

/** 422 Invalid carrying one cause per field error. */
export function invalid(gk: GroupKind, name: string, errors: readonly FieldError[]): StatusError {
  const causes: StatusCause[] = errors.map((e) => ({
    reason: e.type,
    message: fieldErrorBody(e),
    field: e.field,
  }));
  let message = `${qualifiedKind(gk)} "${name}" is invalid`;
  if (errors.length > 0) message += `: ${aggregateMessages(errors.map(fieldErrorString))}`;
  const details: StatusDetails = {};
  if (name) details.name = name;
  if (gk.group) details.group = gk.group;
  details.kind = gk.kind;
  details.causes = causes;
  return failure(422, 'Invalid', message, details);
}

/**
 * 403 as the apiserver's authorizer reports it:
 * `pods "x" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "default"`.
 * `resource` may carry a subresource ("pods/log"); the details name only the resource.
 */
export function forbidden(
  user: string,
  verb: string,
  resource: string,
  group: string,
  name?: string,
  namespace?: string,
  reason?: string,
): StatusError {
  const scope = namespace ? `in the namespace "${namespace}"` : 'at the cluster scope';
  let why = `User "${user}" cannot ${verb} resource "${resource}" in API group "${group}" ${scope}`;
  if (reason) why += `: ${reason}`;
  const base = resource.split('/')[0];
  return forbiddenWithMessage({ group, resource: base }, name ?? '', why);
}

/** 403 with a free-form reason (`<resource> "<name>" is forbidden: <why>`), as admission uses. */
export function forbiddenWithMessage(gr: GroupResource, name: string, why: string): StatusError {
  const what = name ? `${qualifiedResource(gr)} "${name}"` : qualifiedResource(gr);
  return failure(403, 'Forbidden', `${what} is forbidden: ${why}`, resourceDetails(gr, name));
}

/** 403 for a non-resource URL: `forbidden: User "bob" cannot get path "/metrics"`. */
export function forbiddenPath(user: string, verb: string, path: string): StatusError {
  return failure(403, 'Forbidden', `forbidden: User "${user}" cannot ${verb} path "${path}"`, {});
}

export function unauthorized(message = 'Unauthorized'): StatusError {
  return failure(401, 'Unauthorized', message);
}

export function badRequest(message: string): StatusError {
  return failure(400, 'BadRequest', message);
}

/** 410 Expired: a watch or list asked for a resourceVersion that was compacted away. */
export function expired(message: string): StatusError {
  return failure(410, 'Expired', message);
}

/** The message for a resourceVersion older than the oldest the server still has. */
export function tooOldResourceVersion(requested: number | string, oldest: number | string): StatusError {
  return expired(`too old resource version: ${requested} (${oldest})`);
}

export function gone(message: string): StatusError {
  return failure(410, 'Gone', message);
}

export function requestEntityTooLarge(message: string): StatusError {
  return failure(413, 'RequestEntityTooLarge', `Request entity too large: ${message}`);
}

/** 415: the request body's content type is not one the server decodes. */
export function unsupportedMediaType(accepted: readonly string[]): StatusError {
  return failure(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
  );
}

/** 415 too: a body in a media type the server takes that it cannot decode fully (it would lose fields). */
export function undecodableBody(message: string): StatusError {
  return failure(415, 'UnsupportedMediaType', message);
}

export function notAcceptable(accepted: readonly string[]): StatusError {
  return failure(406, 'NotAcceptable', `only the following media types are accepted: ${accepted.join(', ')}`);
}

/** 405: `<verb> is not supported on resources of kind "pods"`. */
export function methodNotSupported(gr: GroupResource, action: string): StatusError {
  return failure(
    405,
    'MethodNotAllowed',
    `${action} is not supported on resources of kind "${qualifiedResource(gr)}"`,
    resourceDetails(gr, undefined),
  );
}

export function tooManyRequests(message: string, retryAfterSeconds: number): StatusError {
  const details: StatusDetails = {};
  if (retryAfterSeconds > 0) details.retryAfterSeconds = retryAfterSeconds;
  return failure(429, 'TooManyRequests', `Too many requests: ${message}`, details);
}

export function internalError(err: unknown): StatusError {
  const text = err instanceof Error ? err.message : String(err);
  return failure(500, 'InternalError', `Internal error occurred: ${text}`, { causes: [{ message: text }] });
}

export function serviceUnavailable(message: string): StatusError {
  return failure(503, 'ServiceUnavailable', message);
}

/** 504: `Timeout: <message>`. */
export function timeout(message: string, retryAfterSeconds = 0): StatusError {
  const details: StatusDetails = {};
  if (retryAfterSeconds > 0) details.retryAfterSeconds = retryAfterSeconds;
  return failure(504, 'Timeout', `Timeout: ${message}`, details);
}

/** 500 ServerTimeout: the operation could not finish in time; the client may retry. */
export function serverTimeout(gr: GroupResource, operation: string, retryAfterSeconds: number): StatusError {
  const details = resourceDetails(gr, undefined);
  if (retryAfterSeconds > 0) details.retryAfterSeconds = retryAfterSeconds;
  return failure(
    500,
    'ServerTimeout',
    `The ${operation} operation against ${qualifiedResource(gr)} could not be completed at this time, please try again.`,
    details,
  );
}

/** A Success Status, as DELETE of a collection or some subresources return. */
export function successStatus(details?: StatusDetails): Status {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    ...(details ? { details } : {}),
    code: 200,
  };
}

export function isStatusError(e: unknown, reason?: StatusReason): e is StatusError {
  if (!(e instanceof StatusError)) return false;
  return reason === undefined || e.status.reason === reason;
}

/** True if the value has the shape of a Status object (e.g. a decoded response body). */
export function isStatus(v: unknown): v is Status {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return o.kind === 'Status' && typeof o.code === 'number';
}

/** The reason of an error, whether a StatusError or anything else ('' when unknown). */
export function reasonOf(e: unknown): string {
  if (e instanceof StatusError) return e.status.reason ?? '';
  if (isStatus(e)) return e.reason ?? '';
  return '';
}

export const isNotFound = (e: unknown): boolean => reasonOf(e) === 'NotFound';
export const isAlreadyExists = (e: unknown): boolean => reasonOf(e) === 'AlreadyExists';
export const isConflict = (e: unknown): boolean => reasonOf(e) === 'Conflict';
export const isInvalid = (e: unknown): boolean => reasonOf(e) === 'Invalid';
export const isForbidden = (e: unknown): boolean => reasonOf(e) === 'Forbidden';
export const isExpiredOrGone = (e: unknown): boolean => {
  const r = reasonOf(e);
  return r === 'Expired' || r === 'Gone';
};

/** The Status to send for any thrown value: a StatusError's own, anything else a 500. */
export function statusFromUnknown(e: unknown): Status {
  if (e instanceof StatusError) return e.status;
  if (isStatus(e)) return e;
  return internalError(e).status;
}
