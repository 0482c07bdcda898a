// What the node loop needs from the raft core (the RawNode of src/raft/), so
// the loop can be written and tested against any implementation of it.
import type { ConfChange, ConfState, Message, RaftConfig, Ready } from '../raft/types.js';

export interface RawNodeLike {
  tick(): void;
  step(msg: Message): void;
  propose(data: Uint8Array): void;
  proposeConfChange(cc: ConfChange): void;
  readIndex(ctx: Uint8Array): void;
  transferLeader(id: string): void;
  campaign(): void;
  hasReady(): boolean;
  ready(): Ready;
  advance(rd: Ready): void;
  accept(rd: Ready): void;
  persisted(index: number, term: number): void;
  applyConfChange(cc: ConfChange): ConfState;
  reportUnreachable(id: string): void;
  reportSnapshot(id: string, ok: boolean): void;
}

export type RawNodeFactory = (cfg: RaftConfig) => RawNodeLike;
