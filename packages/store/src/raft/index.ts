// Public surface of the raft core. The node loop (src/node/) drives a RawNode;
// see rawnode.ts for the Ready contract.

export { type Bootstrap, bootstrapEntries, type InitialMember } from './bootstrap.js';
export { decodeConfChange, encodeConfChange, validateConfChange } from './confchange.js';
export { InvalidMessageError, ProposalDroppedError, RaftSafetyError, RaftUsageError } from './errors.js';
export { isLocalMessage, isResponseMessage, newMessage, validateMessage } from './message.js';
export type { ProgressState } from './progress.js';
export type { RaftStatus, StateType } from './raft.js';
export { RawNode } from './rawnode.js';
export { MemoryStorage } from './storage.js';
export * from './types.js';
export { entrySize } from './util.js';
