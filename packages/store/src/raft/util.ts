// Small helpers shared by the raft modules.

import type { Entry } from './types.js';

/** Approximate wire size of an entry: payload plus a fixed header, for maxSizePerMsg budgeting. */
export function entrySize(e: Entry): number {
  return e.data.byteLength + 24;
}

/** Byte-wise equality of two optional byte arrays. */
export function bytesEqual(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

export const EMPTY_BYTES: Uint8Array = new Uint8Array(0);
