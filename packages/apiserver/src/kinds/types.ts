// The declarative description of a kind: everything the generic REST handlers
// need to serve it. Adding a kind (e.g. apps/v1 ReplicaSet) means writing one
// of these and adding it to the registry.
import type { FieldError } from '@kubit/api';
import type { NameRule } from '../model/names.js';
import type { Schema } from '../model/schema.js';
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
  /** Subresources served: "status", "binding", "log". */
  subresources: string[];
  /** Key segment under /registry (defaults to `resource`); kinds sharing storage share it. */
  storageResource?: string;
  /** Whether metadata.generation counts spec changes. */
  generation?: boolean;
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
  /** Converting from the stored form to this version and back, for kinds sharing storage. */
  fromStorage?(obj: KObject): KObject;
  toStorage?(obj: KObject): KObject;
}

export const groupVersion = (k: { group: string; version: string }): string =>
  k.group ? `${k.group}/${k.version}` : k.version;

// Narrowing helpers for objects whose shape the schema already checked.
export type Obj = Record<string, unknown>;
export const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const str = (v: unknown): string => (typeof v === 'string' ? v : '');
export const meta = (o: KObject): Obj => obj(o.metadata);
