// kubit-store: a raft-replicated key-value store speaking etcd's v3 API.
export { Errors, EtcdError } from './errors.js';
export { StateMachine } from './mvcc/machine.js';
export { MvccState } from './mvcc/store.js';
/** etcd's and kubit-store's .proto messages as proto-loader loads them (for tests comparing codecs). */
export { packageDefinition } from './proto.js';
export { type MemberConfig, type RunningMember, startMember, type TlsFiles } from './server/member.js';
