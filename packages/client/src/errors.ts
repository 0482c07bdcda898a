// Errors a request can end with: the server's own Status (StatusError from
// @kubit/api), or a connection problem described as kubectl describes it.

import { type Status, StatusError } from '@kubit/api';

/** The server could not be reached (refused, reset, TLS failure, timeout). */
export class ConnectionError extends Error {
  /** The system error code when there is one (ECONNREFUSED, ECONNRESET, ...). */
  readonly code: string;
  /** host:port that was dialled. */
  readonly host: string;

  constructor(host: string, detail: string, code = '', options?: { cause?: unknown }) {
    super(`Unable to connect to the server: ${detail}`, options);
    this.name = 'ConnectionError';
    this.code = code;
    this.host = host;
  }

  /** True when nothing listens on the address: the request never reached a server. */
  get refused(): boolean {
    return this.code === 'ECONNREFUSED';
  }
}

/** A request took longer than the client's timeout. */
export class RequestTimeoutError extends ConnectionError {
  constructor(host: string, ms: number) {
    super(host, `net/http: request canceled (Client.Timeout exceeded after ${ms}ms)`, 'ETIMEDOUT');
    this.name = 'RequestTimeoutError';
  }
}

// Messages client libraries use when an error response has no Status body.
const GENERIC: Record<number, [string, string]> = {
  400: ['BadRequest', 'the server rejected our request for an unknown reason'],
  401: ['Unauthorized', 'the server has asked for the client to provide credentials'],
  403: ['Forbidden', 'the server does not allow access to the requested resource'],
  404: ['NotFound', 'the server could not find the requested resource'],
  405: ['MethodNotAllowed', 'the server does not allow this method on the requested resource'],
  406: ['NotAcceptable', 'the server was unable to respond with a content type that the client supports'],
  409: ['Conflict', 'the server reported a conflict'],
  410: ['Gone', 'the server has asked for the client to provide credentials'],
  413: ['RequestEntityTooLarge', 'the server has rejected the request because it is too large'],
  415: [
    'UnsupportedMediaType',
    'the server was unable to respond with a content type that the client supports',
  ],
  422: ['Invalid', 'the server rejected our request due to an error in our request'],
  429: ['TooManyRequests', 'the server has received too many requests and has asked us to try again later'],
  500: ['InternalError', 'an error on the server has prevented the request from succeeding'],
  503: ['ServiceUnavailable', 'the server is currently unable to handle the request'],
  504: [
    'Timeout',
    'the server was unable to return a response in the time allotted, but may still be processing the request',
  ],
};

function looksLikeStatus(v: unknown): v is Status {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return o.kind === 'Status' && (typeof o.code === 'number' || typeof o.status === 'string');
}

/** Turns an error response (status code + body) into a StatusError. */
export function errorFromResponse(statusCode: number, body: string, retryAfter?: string): StatusError {
  let parsed: unknown;
  try {
    parsed = body ? JSON.parse(body) : undefined;
  } catch {
    parsed = undefined;
  }
  if (looksLikeStatus(parsed)) {
    const status: Status = {
      ...parsed,
      code: typeof parsed.code === 'number' && parsed.code ? parsed.code : statusCode,
    };
    return StatusError.fromStatus(status);
  }
  const [reason, generic] = GENERIC[statusCode] ?? [
    '',
    `an error on the server has prevented the request from succeeding`,
  ];
  const text = body.trim();
  let message = generic;
  if (statusCode === 500 && text)
    message = `an error on the server ("${text.slice(0, 200)}") has prevented the request from succeeding`;
  else if (text && text.length < 200 && !text.startsWith('<')) message = `${generic} (${text})`;
  const status: Status = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code: statusCode,
  };
  const secs = retryAfter ? Number.parseInt(retryAfter, 10) : Number.NaN;
  if (Number.isFinite(secs) && secs > 0) status.details = { retryAfterSeconds: secs };
  return StatusError.fromStatus(status);
}

/** Describes a socket/TLS error the way a user can act on. */
export function describeNetworkError(err: NodeJS.ErrnoException, host: string): ConnectionError {
  const code = err.code ?? '';
  let detail: string;
  switch (code) {
    case 'ECONNREFUSED':
      detail = `dial tcp ${host}: connect: connection refused`;
      break;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      detail = `dial tcp: lookup ${host.replace(/:\d+$/, '')}: no such host`;
      break;
    case 'ECONNRESET':
      detail = `read tcp ${host}: connection reset by peer`;
      break;
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
    case 'UNABLE_TO_GET_ISSUER_CERT':
      detail = `tls: failed to verify certificate: x509: certificate signed by unknown authority (${err.message})`;
      break;
    case 'CERT_HAS_EXPIRED':
      detail = `tls: failed to verify certificate: x509: certificate has expired or is not yet valid`;
      break;
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      detail = `tls: failed to verify certificate: x509: ${err.message}`;
      break;
    default:
      detail = err.message || code || 'unknown network error';
  }
  return new ConnectionError(host, detail, code, { cause: err });
}
