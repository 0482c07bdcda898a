// Reading objects and Tables from the server for get/describe/wait/delete.

import { isNotFound } from '@kubit/api';
import type { APIResourceInfo, KubeClient, KubeObject, ObjectList, Table } from '@kubit/client';
import { resourcePath } from '@kubit/client';
import { ageOf } from '../printers/humanize.js';
import { TABLE_ACCEPT } from '../printers/output.js';

export interface Selectors {
  labelSelector?: string;
  fieldSelector?: string;
}

/** Fills in kind/apiVersion, which list items come without. */
export function withKind<T extends KubeObject>(r: APIResourceInfo, obj: T): T {
  if (obj.kind && obj.apiVersion) return obj;
  return { ...obj, apiVersion: r.group ? `${r.group}/${r.version}` : r.version, kind: r.kind };
}

/** A Table for a collection or one object; a server without Tables gets NAME/AGE columns built here. */
export async function fetchTable(
  client: KubeClient,
  r: APIResourceInfo,
  namespace: string | undefined,
  name: string | undefined,
  sel: Selectors,
  includeObject: 'Object' | 'Metadata',
  limit?: number,
): Promise<Table> {
  const path = resourcePath(r, { namespace, name });
  const query = name ? { includeObject } : { ...sel, includeObject, limit };
  const res = await client.request<Table | ObjectList<KubeObject> | KubeObject>({
    method: 'GET',
    path,
    query,
    accept: TABLE_ACCEPT,
  });
  if ((res as Table).kind === 'Table') {
    const t = res as Table;
    let cont = t.metadata?.continue;
    while (cont && !name) {
      const page = await client.request<Table>({
        method: 'GET',
        path,
        query: { ...query, continue: cont },
        accept: TABLE_ACCEPT,
      });
      t.rows.push(...(page.rows ?? []));
      cont = page.metadata?.continue;
    }
    t.rows = t.rows ?? [];
    return t;
  }
  const items = 'items' in res && Array.isArray(res.items) ? res.items : [res as KubeObject];
  return fallbackTable(items.map((i) => withKind(r, i)));
}

export function fallbackTable(items: KubeObject[]): Table {
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: {},
    columnDefinitions: [
      { name: 'Name', type: 'string', format: 'name', priority: 0 },
      { name: 'Age', type: 'string', priority: 0 },
    ],
    rows: items.map((o) => ({
      cells: [o.metadata?.name ?? '', ageOf(o.metadata?.creationTimestamp)],
      object: o as Table['rows'][number]['object'],
    })),
  };
}

/** Every object of a target, following continue tokens. */
export async function listObjects(
  client: KubeClient,
  r: APIResourceInfo,
  namespace: string | undefined,
  sel: Selectors,
  limit = 500,
): Promise<ObjectList<KubeObject>> {
  const list = await client.listAll<KubeObject>(r, { namespace, ...sel, limit });
  list.items = list.items.map((i) => withKind(r, i));
  return list;
}

export async function getObject(
  client: KubeClient,
  r: APIResourceInfo,
  namespace: string | undefined,
  name: string,
): Promise<KubeObject> {
  return withKind(r, await client.get<KubeObject>(r, name, { namespace }));
}

/** The object, or undefined if it does not exist. */
export async function getIfExists(
  client: KubeClient,
  r: APIResourceInfo,
  namespace: string | undefined,
  name: string,
): Promise<KubeObject | undefined> {
  try {
    return await getObject(client, r, namespace, name);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}
