// Bootstrapping a new cluster the way etcd does: the initial membership is
// written into the log itself, as one committed addNode entry per initial
// member, identical on every initial member. So the whole configuration
// history lives in the log (or in a snapshot's confState), and a member that
// joins later, starting from an empty log and an empty configuration, rebuilds
// exactly the right membership by applying what the leader sends it.

import { encodeConfChange } from './confchange.js';
import { type Entry, EntryType, type HardState, type NodeId } from './types.js';

export interface Bootstrap {
  /** Persist these (term 1, indexes 1..n) before the first RawNode starts. */
  entries: Entry[];
  hardState: HardState;
}

/** An initial member, optionally with opaque metadata (peer URLs...) for the state machine. */
export type InitialMember = NodeId | { nodeId: NodeId; context?: Uint8Array };

/**
 * The initial log of a brand-new cluster. Every initial member must call this
 * with the same members (order does not matter: they are sorted by ID) and
 * byte-identical contexts — the entries must be identical everywhere, since
 * raft takes same index + same term to mean same entry. Members joining an
 * existing cluster start with empty storage instead.
 */
export function bootstrapEntries(members: readonly InitialMember[]): Bootstrap {
  const byId = new Map<NodeId, Uint8Array | undefined>();
  for (const m of members) {
    if (typeof m === 'string') byId.set(m, undefined);
    else byId.set(m.nodeId, m.context);
  }
  const ids = [...byId.keys()].sort();
  if (ids.length === 0) throw new Error('bootstrap: at least one member is required');
  const entries = ids.map((nodeId, i) => {
    const context = byId.get(nodeId);
    return {
      term: 1,
      index: i + 1,
      type: EntryType.ConfChange,
      data: encodeConfChange(
        context === undefined ? { type: 'addNode', nodeId } : { type: 'addNode', nodeId, context },
      ),
    };
  });
  return { entries, hardState: { term: 1, vote: '', commit: entries.length } };
}
