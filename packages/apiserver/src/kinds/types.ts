// The declarative description of a kind: everything the generic REST handlers
// need to serve it. Adding a kind (e.g. apps/v1 ReplicaSet) means writing one
// of these and adding it to the registry; what only that kind does (its delete
// strategy, its subresources) are hooks on it, never a test of its name in the
// generic code.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FieldError, Shape } from '@kubit/api';
import type { KubeletClientTls } from '../logs.js';
import type { NameRule } from '../model/names.js';
import type { Schema } from '../model/schema.js';
import type { ResourceRequest } from '../request.js';
import type { Ctx, Rest, Result } from '../rest.js';
import type { KObject } from '../storage.js';

export interface Column {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format?: string;
  description: string;
  /** 0: always shown; 1: only with -o wide. */
  priority: number;
}

export interface TableDef {
  /** Columns after NAME (NAME is always first). */
  columns: Column[];
  /** Name as the last, wide-only column instead of the first (as events print). */
  nameLast?: boolean;
  /** The NAME cell when it is more than the name (a default StorageClass's "(default)"). */
  nameCell?(obj: KObject): string;
  /** Cells for those columns. `now` is ms since the epoch. */
  cells(obj: KObject, now: number): unknown[];
}

export interface KindDef {
  group: string;
  version: string;
  kind: string;
  /** The plural resource name in URLs, e.g. "pods". */
  resource: string;
  singular: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  schema: Schema;
  nameRule: NameRule;
  /** Subresources served (status, scale, binding, log, ...), each with its own verbs and handler. */
  subresources: SubresourceDef[];
  /** What a delete does to this kind beyond the generic finalizers and propagation policy. */
  deletion?: DeleteStrategy;
  /**
   * A minimal valid object of this kind (no name, no namespace), so that tests can
   * write every kind the registry holds, a kind added later included.
   */
  example: KObject;
  /** Key segment under /registry (defaults to `resource`); kinds sharing storage share it. */
  storageResource?: string;
  /** Whether metadata.generation counts spec changes. */
  generation?: boolean;
  /**
   * A custom resource (a CustomResourceDefinition's): its ObjectMeta gets the generic
   * rules, since @kubit/api's validators know only the built-in kinds.
   */
  customResource?: boolean;
  /**
   * How field management sees this kind's objects (list types and map keys), for
   * schemas richer than `schema` plus the strategic-merge keys (a CRD's OpenAPI v3).
   */
  fieldShape?: Shape;
  /**
   * Drops the fields its schema does not know from a decoded body, in place, and
   * returns their paths (fieldValidation Strict refuses them, Warn reports them).
   * For schemas richer than `schema` (a CRD's OpenAPI v3 schema).
   */
  prune?(obj: KObject): string[];
  /** Sets fields a user may omit. Runs on create and update. */
  defaults?(obj: KObject): void;
  /** Rules beyond @kubit/api's validateObject (which every kind gets). */
  validate?(obj: KObject): FieldError[];
  /** Rules beyond @kubit/api's validateUpdate. */
  validateUpdate?(obj: KObject, old: KObject): FieldError[];
  /** Clears or sets what a client may not choose on create (e.g. pod status). */
  prepareForCreate?(obj: KObject): void;
  /** PUT/PATCH of the main resource: what it may not change (usually status). */
  prepareForUpdate?(obj: KObject, old: KObject): void;
  /** PUT/PATCH of /status: what it may not change (usually everything but status). */
  prepareForStatusUpdate?(obj: KObject, old: KObject): void;
  /** Selectable fields beyond metadata.name and metadata.namespace. */
  fields?(obj: KObject): Record<string, string>;
  table: TableDef;
  /** Store keys its objects hold beside their own (a Service's cluster IP and node ports). */
  claims?: ClaimsDef;
  /** Converting from the stored form to this version and back, for kinds sharing storage. */
  fromStorage?(obj: KObject): KObject;
  toStorage?(obj: KObject): KObject;
}

/** A key an object claims beside its own, with the value (its owner) written there. */
export interface Claim {
  key: string;
  value: string;
  /**
   * The answer when the key turns out taken at write time: a value the client asked for
   * is a 422; a value picked for it (undefined here) is picked again.
   */
  takenError?: Error;
}

/** What a claims hook may read of the store. */
export interface ClaimReader {
  /** The value of a claim key, or undefined when no one holds it. */
  holder(key: string): Promise<string | undefined>;
  /** Every claim key under a prefix. */
  keys(prefix: string): Promise<string[]>;
}

/**
 * Keys an object holds beside its own. The generic write creates the new ones in the
 * object's own Txn (guarded on their absence, so no two objects hold one key) and
 * deletes those it no longer holds, the object's delete deleting all of them.
 */
export interface ClaimsDef {
  /**
   * Completes `o` with the values it must hold, picking those it leaves empty (its
   * update's `old` keeps what it already holds), and returns every claim it holds
   * after the write. A requested value out of range or held by another is a 422.
   * `attempt` counts the tries of this write: a retry after a lost race looks harder.
   */
  assign(o: KObject, old: KObject | undefined, reader: ClaimReader, attempt: number): Promise<Claim[]>;
  /** The claim keys a stored object holds. */
  held(o: KObject): string[];
}

/** A request to one subresource, as its handler gets it. */
export interface SubresourceRequest {
  rest: Rest;
  /** The parent kind (pods for pods/binding). */
  def: KindDef;
  ri: ResourceRequest;
  ctx: Ctx;
  /** The raw exchange, for subresources that stream their answer themselves (log). */
  raw: RawExchange;
  /** The apiserver's client certificate for kubelets (pods/log is proxied to the pod's kubelet). */
  kubeletTls: KubeletClientTls;
}

export interface RawExchange {
  /** The request as it came (its raw URL, headers, and for a proxy subresource its unread body). */
  request: IncomingMessage;
  /** Takes over the response: the handler writes status, headers and body itself. */
  hijack(): ServerResponse;
  onClose(fn: () => void): void;
}

export interface SubresourceDef {
  /** The URL segment: pods/<name>/<name here>. */
  name: string;
  /** The verbs served, as discovery lists them. */
  verbs: readonly string[];
  /** The kind its bodies carry when it is not the parent's (Scale, Binding, Eviction). */
  kind?: { group: string; version: string; kind: string };
  /** Serves one request; undefined when the handler answered on the raw response itself. */
  serve(verb: string, req: SubresourceRequest): Promise<Result | undefined>;
  /**
   * A valid body for one of its write verbs, made from the stored parent: the dry-run
   * test writes through every subresource of every kind with it.
   */
  exampleBody?(verb: string, parent: KObject): { body: unknown; contentType?: string } | undefined;
  /**
   * For a write subresource that changes one part of its parent (pods/ephemeralcontainers):
   * keeps everything else of `current` in `next`, in place of the kind's own prepareForUpdate.
   */
  prepareForUpdate?(next: KObject, current: KObject): void;
  /** Replaces the kind's update validation for writes through this subresource. */
  validateUpdate?(next: KObject, current: KObject): FieldError[];
  /**
   * A connect subresource (proxy): its verbs reach a backend, nothing is stored, so it has
   * no dry run and no example bodies.
   */
  connect?: boolean;
}

/** A kind's own delete semantics; the generic delete handles finalizers and propagation. */
export interface DeleteStrategy {
  /** Refuses a delete outright (a namespace that must always exist). */
  admit?(name: string): void;
  /** Marks the object its own way instead of the generic plan (a namespace turns Terminating). */
  mark?(o: KObject, now: number): KObject | 'unchanged';
  /** Seconds the object stays after a delete before it is removed (a pod's grace period). */
  gracePeriodSeconds?(o: KObject, requested: number | undefined): number;
  /**
   * Whether an object being deleted whose finalizers are all gone must still be kept
   * (a pod until its kubelet confirms, a namespace until its own spec.finalizers are gone).
   */
  stillWaiting?(o: KObject): boolean;
  /** The delete's answer waits until this apiserver's watch cache has seen the mark. */
  waitForCache?: boolean;
}

export const groupVersion = (k: { group: string; version: string }): string =>
  k.group ? `${k.group}/${k.version}` : k.version;

// Narrowing helpers for objects whose shape the schema already checked.
export type Obj = Record<string, unknown>;
export const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const str = (v: unknown): string => (typeof v === 'string' ? v : '');
export const meta = (o: KObject): Obj => obj(o.metadata);
