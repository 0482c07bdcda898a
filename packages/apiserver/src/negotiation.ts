// What a client's Accept header asks for: JSON (or YAML, answered as JSON),
// a Table for kubectl get, the aggregated discovery document, or only
// protobuf (which this server does not write).
import { badRequest } from '@kubit/api';
import type { KindDef } from './kinds/types.js';
import { queryString } from './request.js';
import type { KObject } from './storage.js';
import { type IncludeObject, toTable } from './table.js';

/** True when the client takes nothing this server writes (protobuf only). */
export function onlyProtobuf(accept: string): boolean {
  if (!accept) return false;
  return !/json|yaml|\*\/\*|text\/plain/.test(accept);
}

/** The apidiscovery.k8s.io version asked for, when the client wants aggregated discovery. */
export function aggregatedVersion(accept: string): 'v2' | 'v2beta1' | undefined {
  for (const part of accept.split(',')) {
    if (!part.includes('as=APIGroupDiscoveryList') || !part.includes('g=apidiscovery.k8s.io')) continue;
    if (/v=v2(;|$|\s)/.test(part)) return 'v2';
    if (part.includes('v=v2beta1')) return 'v2beta1';
  }
  return undefined;
}

export function wantsTable(accept: string): boolean {
  return accept.split(',').some((p) => p.includes('as=Table') && p.includes('g=meta.k8s.io'));
}

export function contentTypeFor(accept: string): string {
  return wantsTable(accept) ? 'application/json;as=Table;v=v1;g=meta.k8s.io' : 'application/json';
}

export function includeObject(query: Record<string, unknown>): IncludeObject {
  const v = queryString(query, 'includeObject') ?? 'Metadata';
  if (v !== 'None' && v !== 'Metadata' && v !== 'Object') {
    throw badRequest(
      `includeObject: Unsupported value: "${v}": supported values: "Metadata", "None", "Object"`,
    );
  }
  return v;
}

/** The Table of `items` when the client asked for one, else undefined. */
export function tableIfWanted(
  def: KindDef,
  accept: string,
  query: Record<string, unknown>,
  items: KObject[],
  listMeta: Record<string, unknown>,
) {
  if (!wantsTable(accept)) return undefined;
  return toTable(def, items, listMeta, includeObject(query));
}
