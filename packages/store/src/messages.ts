// The shapes of etcd's and kubit-store's protobuf messages as the codecs
// read and write them (proto-loader's with keepCase: int64 decoded as
// decimal strings, sent as numbers or strings). Types only: every layer
// (wire codecs, mvcc, raft node, servers) may use them without importing
// the service definitions in proto.ts.

export type Int64 = string | number;
export type Bytes = Buffer | Uint8Array;

export interface ResponseHeader {
  cluster_id: Int64;
  member_id: Int64;
  revision: Int64;
  raft_term: Int64;
}

export interface KeyValue {
  key: Bytes;
  create_revision: Int64;
  mod_revision: Int64;
  version: Int64;
  value: Bytes;
  lease: Int64;
}

export interface Event {
  type: number; // 0 PUT, 1 DELETE
  kv: KeyValue;
  prev_kv?: KeyValue | null;
}

export interface RangeRequest {
  key: Buffer;
  range_end: Buffer;
  limit: Int64;
  revision: Int64;
  sort_order: number;
  sort_target: number;
  serializable: boolean;
  keys_only: boolean;
  count_only: boolean;
  min_mod_revision: Int64;
  max_mod_revision: Int64;
  min_create_revision: Int64;
  max_create_revision: Int64;
}
export interface RangeResponse {
  header?: Partial<ResponseHeader>;
  kvs: KeyValue[];
  more: boolean;
  count: Int64;
}
export interface PutRequest {
  key: Buffer;
  value: Buffer;
  lease: Int64;
  prev_kv: boolean;
  ignore_value: boolean;
  ignore_lease: boolean;
}
export interface PutResponse {
  header?: Partial<ResponseHeader>;
  prev_kv?: KeyValue | null;
}
export interface DeleteRangeRequest {
  key: Buffer;
  range_end: Buffer;
  prev_kv: boolean;
}
export interface DeleteRangeResponse {
  header?: Partial<ResponseHeader>;
  deleted: Int64;
  prev_kvs: KeyValue[];
}
export interface RequestOp {
  request?: 'request_range' | 'request_put' | 'request_delete_range' | 'request_txn';
  request_range?: RangeRequest | null;
  request_put?: PutRequest | null;
  request_delete_range?: DeleteRangeRequest | null;
  request_txn?: TxnRequest | null;
}
export interface ResponseOp {
  response_range?: RangeResponse;
  response_put?: PutResponse;
  response_delete_range?: DeleteRangeResponse;
  response_txn?: TxnResponse;
}
export interface Compare {
  result: number;
  target: number;
  key: Buffer;
  target_union?: 'version' | 'create_revision' | 'mod_revision' | 'value' | 'lease';
  version?: Int64;
  create_revision?: Int64;
  mod_revision?: Int64;
  value?: Buffer;
  lease?: Int64;
  range_end: Buffer;
}
export interface TxnRequest {
  compare: Compare[];
  success: RequestOp[];
  failure: RequestOp[];
}
export interface TxnResponse {
  header?: Partial<ResponseHeader>;
  succeeded: boolean;
  responses: ResponseOp[];
}
export interface CompactionRequest {
  revision: Int64;
  physical: boolean;
}
export interface LeaseGrantRequest {
  TTL: Int64;
  ID: Int64;
}
export interface LeaseRevokeRequest {
  ID: Int64;
}
export interface WatchCreateRequest {
  key: Buffer;
  range_end: Buffer;
  start_revision: Int64;
  progress_notify: boolean;
  filters: number[];
  prev_kv: boolean;
  watch_id: Int64;
  fragment: boolean;
}
export interface WatchRequest {
  request_union?: 'create_request' | 'cancel_request' | 'progress_request';
  create_request?: WatchCreateRequest | null;
  cancel_request?: { watch_id: Int64 } | null;
  progress_request?: object | null;
}
export interface WatchResponse {
  header: Partial<ResponseHeader>;
  watch_id: Int64;
  created?: boolean;
  canceled?: boolean;
  compact_revision?: Int64;
  cancel_reason?: string;
  events: Event[];
}
export interface Member {
  ID: Int64;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

// ---- kubit-store's own messages ----

export interface MemberAttributes {
  id: string;
  name: string;
  client_urls: string[];
}
export interface MemberInfo {
  id: string;
  name: string;
  peer_urls: string[];
  client_urls: string[];
  is_learner: boolean;
}
export interface Command {
  origin: string;
  id: Int64;
  op?: 'put' | 'delete_range' | 'txn' | 'compaction' | 'lease_grant' | 'lease_revoke' | 'member_attributes';
  put?: PutRequest | null;
  delete_range?: DeleteRangeRequest | null;
  txn?: TxnRequest | null;
  compaction?: CompactionRequest | null;
  lease_grant?: LeaseGrantRequest | null;
  lease_revoke?: LeaseRevokeRequest | null;
  member_attributes?: MemberAttributes | null;
}
export interface WireEntry {
  term: Int64;
  index: Int64;
  type: number;
  data: Bytes;
}
export interface WireConfState {
  voters: string[];
  learners: string[];
}
export interface WireSnapshot {
  index: Int64;
  term: Int64;
  conf_state: WireConfState | null;
  data: Bytes;
}
export interface WireMessage {
  type: string;
  from: string;
  to: string;
  term: Int64;
  index: Int64;
  log_term: Int64;
  entries: WireEntry[];
  commit: Int64;
  reject: boolean;
  reject_hint: Int64;
  snapshot?: WireSnapshot | null;
  context?: Bytes;
  has_context?: boolean;
  no_ack?: boolean;
}
export interface WireHardState {
  term: Int64;
  vote: string;
  commit: Int64;
}
export interface RaftBatch {
  cluster_id: string;
  messages: WireMessage[];
}
export interface WireConfChange {
  type: string;
  node_id: string;
  context: Bytes;
}
