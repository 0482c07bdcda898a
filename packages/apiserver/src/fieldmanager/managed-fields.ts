// metadata.managedFields as Kubernetes keeps it: one entry per manager identity
// (manager, operation, subresource, and for Update entries the apiVersion), each the
// set of fields that manager owns; the list sorted as Kubernetes sorts it, and at most
// ten Update entries, the oldest merged into "ancient-changes".
import { PathSet } from '@kubit/api';

export type Operation = 'Apply' | 'Update';

export interface ManagedEntry {
  manager: string;
  operation: Operation;
  apiVersion: string;
  /** RFC 3339, second precision; absent on an entry never timed. */
  time?: string;
  subresource?: string;
  set: PathSet;
}

/** Entries by identity. */
export type Managed = Map<string, ManagedEntry>;

export const MAX_UPDATE_MANAGERS = 10;
export const ANCIENT_CHANGES = 'ancient-changes';

/**
 * An entry's identity, as Kubernetes' BuildManagerIdentifier forms it: an applier is the
 * same manager whatever apiVersion it applied with; an updater is one per apiVersion.
 */
export function identity(
  e: Pick<ManagedEntry, 'manager' | 'operation' | 'apiVersion' | 'subresource'>,
): string {
  return JSON.stringify({
    manager: e.manager,
    operation: e.operation,
    ...(e.operation === 'Update' && e.apiVersion ? { apiVersion: e.apiVersion } : {}),
    ...(e.subresource ? { subresource: e.subresource } : {}),
  });
}

export class ManagedFieldsError extends Error {}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads metadata.managedFields; throws ManagedFieldsError on anything Kubernetes would not decode. */
export function decodeManaged(list: unknown): Managed {
  const m: Managed = new Map();
  if (list === undefined) return m;
  if (!Array.isArray(list)) throw new ManagedFieldsError('managedFields must be a list');
  list.forEach((raw, i) => {
    const at = `managedFields[${i}]`;
    if (!isObj(raw)) throw new ManagedFieldsError(`${at} must be an object`);
    const { manager = '', operation, apiVersion = '', time, fieldsType, fieldsV1, subresource = '' } = raw;
    if (operation !== 'Apply' && operation !== 'Update') {
      throw new ManagedFieldsError(`${at}.operation must be Apply or Update`);
    }
    if (fieldsType !== 'FieldsV1') throw new ManagedFieldsError(`${at}.fieldsType must be FieldsV1`);
    if (typeof manager !== 'string' || typeof apiVersion !== 'string' || typeof subresource !== 'string') {
      throw new ManagedFieldsError(`${at}: manager, apiVersion and subresource must be strings`);
    }
    if (time !== undefined && (typeof time !== 'string' || Number.isNaN(Date.parse(time)))) {
      throw new ManagedFieldsError(`${at}.time must be an RFC 3339 time`);
    }
    let set: PathSet;
    try {
      set = PathSet.fromFieldsV1(fieldsV1 ?? {});
    } catch (err) {
      throw new ManagedFieldsError(`${at}.fieldsV1: ${(err as Error).message}`);
    }
    const e: ManagedEntry = {
      manager,
      operation,
      apiVersion,
      ...(time !== undefined ? { time: time as string } : {}),
      ...(subresource ? { subresource } : {}),
      set,
    };
    const id = identity(e);
    if (m.has(id))
      throw new ManagedFieldsError(`${at} duplicates the entry of manager ${JSON.stringify(manager)}`);
    m.set(id, e);
  });
  return m;
}

/** Whether a client asked to clear managedFields: an empty list, or one empty entry (`[{}]`), as Kubernetes reads it. */
export function isResetRequest(list: unknown): boolean {
  if (!Array.isArray(list)) return false;
  return list.length === 0 || (list.length === 1 && isObj(list[0]) && Object.keys(list[0]).length === 0);
}

/** The list to store: entries in Kubernetes' order (Apply before Update, then by time, manager, apiVersion, subresource). */
export function encodeManaged(m: Managed): Record<string, unknown>[] {
  const entries = [...m.values()].filter((e) => !e.set.empty());
  entries.sort(
    (p, q) =>
      cmp(p.operation, q.operation) ||
      seconds(p.time) - seconds(q.time) ||
      cmp(p.manager, q.manager) ||
      cmp(p.apiVersion, q.apiVersion) ||
      cmp(p.subresource ?? '', q.subresource ?? ''),
  );
  // Go's field order of ManagedFieldsEntry.
  return entries.map((e) => ({
    manager: e.manager,
    operation: e.operation,
    apiVersion: e.apiVersion,
    ...(e.time ? { time: e.time } : {}),
    fieldsType: 'FieldsV1',
    fieldsV1: e.set.toFieldsV1(),
    ...(e.subresource ? { subresource: e.subresource } : {}),
  }));
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const seconds = (t: string | undefined) => (t ? Math.floor(Date.parse(t) / 1000) : 0);

/**
 * Keeps at most MAX_UPDATE_MANAGERS Update entries: the oldest are merged, one by one,
 * into an "ancient-changes" entry of their apiVersion, which takes the merged one's time.
 */
export function capUpdateManagers(m: Managed): void {
  for (;;) {
    const updaters = [...m.entries()].filter(([, e]) => e.operation === 'Update');
    if (updaters.length <= MAX_UPDATE_MANAGERS) return;
    const oldest = updaters
      .filter(([, e]) => e.manager !== ANCIENT_CHANGES)
      .sort(([, a], [, b]) => seconds(a.time) - seconds(b.time))[0];
    if (!oldest) return;
    const [id, e] = oldest;
    const bucket: ManagedEntry = {
      manager: ANCIENT_CHANGES,
      operation: 'Update',
      apiVersion: e.apiVersion,
      set: e.set,
    };
    const bid = identity(bucket);
    const prev = m.get(bid);
    m.delete(id);
    m.set(bid, { ...bucket, set: prev ? prev.set.union(e.set) : e.set, ...(e.time ? { time: e.time } : {}) });
  }
}
