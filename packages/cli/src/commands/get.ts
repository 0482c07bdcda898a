// kubit get: lists or shows objects, as a table (the server's Table), or as
// name/json/yaml/jsonpath/custom-columns; -w keeps watching.

import { isExpiredOrGone, isNotFound, StatusError } from '@kubit/api';
import type { APIResourceInfo, KubeClient, KubeObject, Table } from '@kubit/client';
import { LineSplitter, resourcePath, sleep } from '@kubit/client';
import { CliError, formatError } from '../errors.js';
import type { Factory } from '../factory.js';
import { evaluate, relaxedPath } from '../printers/jsonpath.js';
import {
  type OutputFormat,
  objectName,
  parseOutput,
  printObjects,
  printTable,
  TABLE_ACCEPT,
  type TableOptions,
  typeName,
} from '../printers/output.js';
import { fetchTable, getObject, listObjects, type Selectors, withKind } from './fetch.js';
import { resolveTargets, type Target } from './targets.js';

interface GetOptions {
  /** --show-managed-fields: keep metadata.managedFields in json/yaml (kubectl strips them by default). */
  showManagedFields?: boolean;
  output?: string;
  selector?: string;
  fieldSelector?: string;
  allNamespaces?: boolean;
  watch?: boolean;
  watchOnly?: boolean;
  showLabels?: boolean;
  labelColumns?: string[];
  showKind?: boolean;
  sortBy?: string;
  headers?: boolean;
  chunkSize?: number;
  ignoreNotFound?: boolean;
  filename?: string[];
  recursive?: boolean;
}

function sortKey(v: unknown): string | number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') return v;
  return v === undefined ? '' : JSON.stringify(v);
}

function compareBy(path: ReturnType<typeof relaxedPath>) {
  return (a: unknown, b: unknown): number => {
    const ka = sortKey(evaluate(path, a)[0]);
    const kb = sortKey(evaluate(path, b)[0]);
    if (typeof ka === 'number' && typeof kb === 'number') return ka - kb;
    return String(ka).localeCompare(String(kb));
  };
}

export async function get(f: Factory, args: string[], o: GetOptions): Promise<void> {
  const format = parseOutput(o.output);
  const client = await f.client();
  const targets = await resolveTargets(f, args, o);
  const sel: Selectors = { labelSelector: o.selector, fieldSelector: o.fieldSelector };
  const headers = o.headers !== false;
  const sortPath = o.sortBy ? relaxedPath(o.sortBy) : undefined;
  let failed = false;
  let printedInitial = false;
  // What the initial listing showed, so a watch that must relist prints only what changed.
  const shown = new Map<string, string>();
  let listedAt = '';
  const remember = (obj: KubeObject | undefined) => {
    const m = obj?.metadata;
    if (m?.name) shown.set(`${m.namespace ?? ''}/${m.name}`, m.resourceVersion ?? '');
  };
  // Errors for missing names come after what was found, as kubectl prints them.
  const errors: string[] = [];
  const out = f.io.out;

  if ((o.watch || o.watchOnly) && targets.length !== 1) {
    throw new CliError(
      `watch is only supported on individual resources and resource collections, but ${targets.length} resources were found`,
    );
  }

  if (!o.watchOnly) {
    if (format.kind === 'table') {
      let printedAny = false;
      let first = true;
      const fetched: { t: Target; table: Table }[] = [];
      for (const t of targets) {
        const tables: Table[] = [];
        if (t.names.length === 0) {
          tables.push(
            await fetchTable(
              client,
              t.r,
              t.namespace,
              undefined,
              sel,
              sortPath ? 'Object' : 'Metadata',
              o.chunkSize,
            ),
          );
        } else {
          for (const name of t.names) {
            try {
              tables.push(
                await fetchTable(client, t.r, t.namespace, name, sel, sortPath ? 'Object' : 'Metadata'),
              );
            } catch (e) {
              if (isNotFound(e) && o.ignoreNotFound) continue;
              if (!(e instanceof StatusError)) throw e;
              errors.push(formatError(e));
              failed = true;
            }
          }
        }
        if (tables.length === 0) continue;
        if (t.names.length === 0) listedAt = tables[0].metadata?.resourceVersion ?? '';
        for (const tb of tables)
          for (const row of tb.rows ?? []) remember(row.object as KubeObject | undefined);
        const merged: Table = { ...tables[0], rows: tables.flatMap((x) => x.rows ?? []) };
        if (merged.rows.length === 0) continue;
        if (sortPath) merged.rows.sort((a, b) => compareBy(sortPath)(a.object, b.object));
        fetched.push({ t, table: merged });
      }
      // Names carry their kind when several kinds were asked for, as kubectl prints them.
      const several = new Set(targets.map((x) => x.r)).size > 1 || o.showKind;
      for (const { t, table: merged } of fetched) {
        const opts = tableOptions(o, t, format.wide, headers, several ? typeName(t.r) : undefined);
        if (!first) out.write('\n');
        out.write(printTable(merged, opts));
        first = false;
        printedAny = true;
        printedInitial = true;
      }
      if (!printedAny && !failed && !o.watch) {
        const t = targets[0];
        if (targets.every((x) => x.names.length === 0)) {
          f.io.err.write(
            t.namespace && t.r.namespaced
              ? `No resources found in ${t.namespace} namespace.\n`
              : 'No resources found\n',
          );
        }
      }
    } else {
      const items: { r: APIResourceInfo; obj: KubeObject }[] = [];
      let single = targets.length === 1 && targets[0].names.length === 1;
      for (const t of targets) {
        if (t.names.length === 0) {
          single = false;
          const list = await listObjects(client, t.r, t.namespace, sel, o.chunkSize);
          listedAt = list.metadata?.resourceVersion ?? '';
          for (const obj of list.items) remember(obj);
          items.push(...list.items.map((obj) => ({ r: t.r, obj })));
        } else {
          for (const name of t.names) {
            try {
              items.push({ r: t.r, obj: await getObject(client, t.r, t.namespace, name) });
            } catch (e) {
              if (isNotFound(e) && o.ignoreNotFound) continue;
              if (!(e instanceof StatusError)) throw e;
              errors.push(formatError(e));
              failed = true;
            }
          }
        }
      }
      if (sortPath) items.sort((a, b) => compareBy(sortPath)(a.obj, b.obj));
      if (items.length > 0 || (!single && format.kind !== 'name'))
        out.write(printObjects(format, items, single, headers, Boolean(o.showManagedFields)));
      if (items.length === 0 && !failed && format.kind === 'custom-columns') {
        const t = targets[0];
        f.io.err.write(
          t.namespace && t.r.namespaced
            ? `No resources found in ${t.namespace} namespace.\n`
            : 'No resources found\n',
        );
      }
    }
  }

  for (const e of errors) f.io.err.write(`${e}\n`);
  if (o.watch || o.watchOnly) {
    if (o.watchOnly) listedAt = '';
    await watchTarget(f, client, targets[0], sel, format, o, {
      headers,
      printedHeader: printedInitial,
      shown,
      from: listedAt,
    });
  }
  if (failed) throw new CliError('', 1);
}

function tableOptions(
  o: GetOptions,
  t: Target,
  wide: boolean,
  headers: boolean,
  kindPrefix?: string,
): TableOptions {
  return {
    wide,
    headers,
    namespaceColumn: Boolean(o.allNamespaces && t.r.namespaced),
    showLabels: Boolean(o.showLabels),
    labelColumns: (o.labelColumns ?? []).flatMap((l) => l.split(',')).filter(Boolean),
    kindPrefix,
  };
}

interface WatchState {
  headers: boolean;
  printedHeader: boolean;
  /** namespace/name → resourceVersion of every object printed so far. */
  shown: Map<string, string>;
  /** The version the initial listing was read at ('' to ask the server now). */
  from: string;
}

/** A resourceVersion as a number for ordering ("" or not numeric: undefined). */
function revision(rv: string | undefined): bigint | undefined {
  return rv && /^\d+$/.test(rv) ? BigInt(rv) : undefined;
}

/**
 * Follows changes after the initial listing. A dropped stream (a server
 * restart) is resumed from the last version seen. If the server no longer has
 * that version (410 Gone), the collection is listed again and only objects
 * that changed since they were last printed are printed, so nothing repeats.
 */
async function watchTarget(
  f: Factory,
  client: KubeClient,
  t: Target,
  sel: Selectors,
  format: OutputFormat,
  o: GetOptions,
  st: WatchState,
): Promise<void> {
  const signal = f.io.signal;
  const table = format.kind === 'table';
  const wide = format.kind === 'table' && format.wide;
  const fieldSelector =
    t.names.length === 1
      ? [sel.fieldSelector, `metadata.name=${t.names[0]}`].filter(Boolean).join(',')
      : sel.fieldSelector;
  const base = resourcePath(t.r, { namespace: t.namespace });
  let rv = st.from;
  if (!rv) {
    const list = await client.list(t.r, {
      namespace: t.namespace,
      labelSelector: sel.labelSelector,
      fieldSelector,
      limit: 1,
    });
    rv = list.metadata?.resourceVersion ?? '';
  }
  const startedAt = revision(rv);
  let columns: Table['columnDefinitions'] = [];
  let failures = 0;
  let failingSince = 0;

  const printRows = (tb: Table) => {
    f.io.out.write(printTable(tb, tableOptions(o, t, wide, st.headers && !st.printedHeader)));
    st.printedHeader = true;
  };
  const note = (obj: KubeObject | undefined) => {
    const m = obj?.metadata;
    if (m?.name) st.shown.set(`${m.namespace ?? ''}/${m.name}`, m.resourceVersion ?? '');
  };
  /** After a relist: new since it was last printed (or since the watch began, for one never printed). */
  const changedSincePrinted = (obj: KubeObject | undefined): boolean => {
    const m = obj?.metadata;
    if (!m?.name) return false;
    const seen = st.shown.get(`${m.namespace ?? ''}/${m.name}`);
    if (seen !== undefined) return seen !== (m.resourceVersion ?? '');
    const at = revision(m.resourceVersion);
    return at === undefined || startedAt === undefined || at > startedAt;
  };
  const printObject = async (type: string, obj: KubeObject) => {
    note(obj);
    if (table) {
      // The server sent objects, not Table rows: ask for this object's row (a deleted one gets a plain row).
      let tb: Table;
      try {
        tb =
          type === 'DELETED'
            ? fallbackRow(obj)
            : await fetchTable(client, t.r, obj.metadata?.namespace, obj.metadata?.name, {}, 'Metadata');
      } catch {
        tb = fallbackRow(obj);
      }
      printRows(tb);
    } else if (format.kind === 'name') {
      f.io.out.write(`${objectName(t.r, obj)}\n`);
    } else {
      f.io.out.write(
        printObjects(
          format,
          [{ r: t.r, obj }],
          true,
          st.headers && !st.printedHeader,
          Boolean(o.showManagedFields),
        ),
      );
      if (format.kind === 'yaml') f.io.out.write('---\n');
      st.printedHeader = true;
    }
  };
  /** Lists again after 410 Gone: prints what changed in the gap, returns the list's version. */
  const catchUp = async (): Promise<string> => {
    const listSel = { labelSelector: sel.labelSelector, fieldSelector };
    if (table) {
      const tb = await fetchTable(client, t.r, t.namespace, undefined, listSel, 'Object');
      const rows = (tb.rows ?? []).filter((row) => changedSincePrinted(row.object as KubeObject));
      for (const row of rows) note(row.object as KubeObject);
      if (tb.columnDefinitions?.length) columns = tb.columnDefinitions;
      if (rows.length > 0) printRows({ ...tb, rows });
      return tb.metadata?.resourceVersion ?? '';
    }
    const list = await listObjects(client, t.r, t.namespace, listSel);
    for (const obj of list.items) if (changedSincePrinted(obj)) await printObject('MODIFIED', obj);
    return list.metadata?.resourceVersion ?? '';
  };

  while (!signal?.aborted) {
    const query = new URLSearchParams({ watch: 'true', allowWatchBookmarks: 'true', resourceVersion: rv });
    if (sel.labelSelector) query.set('labelSelector', sel.labelSelector);
    if (fieldSelector) query.set('fieldSelector', fieldSelector);
    if (table) query.set('includeObject', 'Object');
    try {
      const res = await client.transport.stream({
        method: 'GET',
        path: `${base}?${query}`,
        headers: { Accept: table ? TABLE_ACCEPT : 'application/json' },
        signal,
        timeoutMs: 0,
      });
      if (res.statusCode !== 200) {
        let body = '';
        for await (const c of res.stream) body += c.toString();
        const { errorFromResponse } = await import('@kubit/client');
        throw errorFromResponse(res.statusCode, body);
      }
      failures = 0;
      const splitter = new LineSplitter();
      res.stream.setEncoding('utf8');
      for await (const chunk of res.stream) {
        for (const line of splitter.push(chunk as string)) {
          const ev = JSON.parse(line) as { type: string; object: Record<string, unknown> };
          if (ev.type === 'ERROR') {
            const { StatusError: SE } = await import('@kubit/api');
            throw SE.fromStatus(ev.object as never);
          }
          const meta = (ev.object.metadata ?? {}) as { resourceVersion?: string };
          if (ev.object.kind === 'Table') {
            const tb = ev.object as unknown as Table;
            // Only the first Table event carries the column definitions.
            if (tb.columnDefinitions?.length) columns = tb.columnDefinitions;
            else tb.columnDefinitions = columns;
            const rowObject = tb.rows?.[0]?.object as KubeObject | undefined;
            const rowRv = rowObject?.metadata?.resourceVersion ?? meta.resourceVersion;
            if (rowRv) rv = rowRv;
            if (ev.type === 'BOOKMARK') continue;
            note(rowObject);
            printRows(tb);
            continue;
          }
          if (meta.resourceVersion) rv = meta.resourceVersion;
          if (ev.type === 'BOOKMARK') continue;
          await printObject(ev.type, withKind(t.r, ev.object as KubeObject));
        }
      }
    } catch (e) {
      if (signal?.aborted) return;
      if (isExpiredOrGone(e)) {
        rv = await catchUp();
        continue;
      }
      if (e instanceof StatusError && !TRANSIENT.has(e.code)) throw e;
      // A dropped connection or a server still starting (a restart): retry for up to two minutes.
      failures++;
      if (failures === 1) {
        failingSince = Date.now();
        f.io.err.write(`watch interrupted (${e instanceof Error ? e.message : String(e)}); retrying\n`);
      }
      if (Date.now() - failingSince > WATCH_RETRY_BUDGET_MS) throw e;
      try {
        await sleep(Math.min(2000, 100 * 2 ** failures), signal);
      } catch {
        return;
      }
    }
    // The server ended the watch (its timeout): resume from the last version.
  }
}

const WATCH_RETRY_BUDGET_MS = 120_000;

/** Answers that mean "not now" (a server starting or overloaded), not "never". */
const TRANSIENT = new Set([429, 500, 502, 503, 504]);

function fallbackRow(obj: KubeObject): Table {
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: {},
    columnDefinitions: [{ name: 'Name', type: 'string', format: 'name', priority: 0 }],
    rows: [{ cells: [obj.metadata?.name ?? ''], object: obj as Table['rows'][number]['object'] }],
  };
}
