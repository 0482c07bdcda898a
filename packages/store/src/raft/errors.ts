// Errors the raft core raises towards its driver (the node loop).

/**
 * A proposal (or a read) could not be accepted here and now: no leader is known,
 * a leadership transfer is in progress, this node was removed, or a membership
 * change is already pending. The caller may retry later, possibly elsewhere.
 */
export class ProposalDroppedError extends Error {
  override readonly name = 'ProposalDroppedError';
}

/** A message from a peer that is malformed; the caller should drop it (and may log it). */
export class InvalidMessageError extends Error {
  override readonly name = 'InvalidMessageError';
}

/** The RawNode was driven against its contract (e.g. ready() twice without advance()). */
export class RaftUsageError extends Error {
  override readonly name = 'RaftUsageError';
}

/**
 * Raft's own invariants broke: durable state contradicts itself (e.g. a committed
 * entry would be overwritten). Continuing could lose acknowledged writes, so the
 * node loop should stop the process.
 */
export class RaftSafetyError extends Error {
  override readonly name = 'RaftSafetyError';
}
