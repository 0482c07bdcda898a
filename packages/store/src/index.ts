// kubit-store: a raft-replicated key-value store speaking etcd's v3 API.
export { Errors, EtcdError } from './errors.js';
export { StateMachine } from './mvcc/machine.js';
export { MvccState } from './mvcc/store.js';
export { type MemberConfig, type RunningMember, startMember, type TlsFiles } from './server/member.js';
