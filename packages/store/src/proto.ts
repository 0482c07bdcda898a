// Loads etcd's v3 API (our written subset) and kubit-store's own messages.
// int64/uint64 arrive as decimal strings (longs: String) so revisions, lease
// IDs and member IDs stay exact past 2^53; outgoing messages may use numbers.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import {
  decodePutRequest,
  decodeRangeRequest,
  encodePutResponse,
  encodeRangeResponse,
  encodeWatchResponse,
} from './wire/etcd.js';
import { framedSerializer } from './wire/grpc-frame.js';
import { decodeRaftBatch, encodeRaftBatch, type RaftStreamBatch } from './wire/raft.js';

// src/proto.ts and dist/src/proto.js sit at different depths: walk up to the package's proto/.
function findProtoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    if (existsSync(join(dir, 'proto', 'etcd', 'rpc.proto'))) return join(dir, 'proto');
    dir = dirname(dir);
  }
  throw new Error('kubit-store: cannot find its proto/ directory');
}

export const loaderOptions: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: Number,
  defaults: true,
  oneofs: true,
  includeDirs: [findProtoRoot()],
};

export const packageDefinition = protoLoader.loadSync(['etcd/rpc.proto', 'kubit/store.proto'], loaderOptions);
const loaded = grpc.loadPackageDefinition(packageDefinition) as unknown as {
  etcdserverpb: Record<string, grpc.ServiceClientConstructor>;
  kubitstore: Record<string, grpc.ServiceClientConstructor>;
};

export const etcdServices = {
  KV: loaded.etcdserverpb.KV,
  Watch: loaded.etcdserverpb.Watch,
  Lease: loaded.etcdserverpb.Lease,
  Cluster: loaded.etcdserverpb.Cluster,
  Maintenance: loaded.etcdserverpb.Maintenance,
};
type MethodCodecs = Partial<
  Pick<grpc.MethodDefinition<unknown, unknown>, 'requestDeserialize' | 'responseSerialize'>
> & { responseSerializeFramed?: (m: unknown) => Buffer };

/** A copy of a service definition whose named methods use other (hand-written) codecs on the server side. */
function withServerCodecs(
  service: grpc.ServiceDefinition,
  overrides: Record<string, MethodCodecs>,
): grpc.ServiceDefinition {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = { ...service };
  for (const [name, codecs] of Object.entries(overrides)) {
    if (!service[name]) throw new Error(`proto: service has no method ${name}`);
    out[name] = { ...service[name], ...codecs };
  }
  return out as grpc.ServiceDefinition;
}

/**
 * The services as this member serves them: the hottest requests and
 * responses use the hand-written codecs of wire/etcd.ts (same bytes on the wire).
 */
export const serverServices = {
  KV: withServerCodecs(etcdServices.KV.service, {
    Put: {
      requestDeserialize: (b: Buffer) => decodePutRequest(b),
      responseSerialize: (m: unknown) => encodePutResponse(m as PutResponse),
      responseSerializeFramed: framedSerializer(encodePutResponse) as (m: unknown) => Buffer,
    },
    Range: {
      requestDeserialize: (b: Buffer) => decodeRangeRequest(b),
      responseSerialize: (m: unknown) => encodeRangeResponse(m as RangeResponse),
      responseSerializeFramed: framedSerializer(encodeRangeResponse) as (m: unknown) => Buffer,
    },
  }),
  Watch: withServerCodecs(etcdServices.Watch.service, {
    Watch: {
      responseSerialize: (m: unknown) => encodeWatchResponse(m as WatchResponse),
      responseSerializeFramed: framedSerializer(encodeWatchResponse) as (m: unknown) => Buffer,
    },
  }),
};

/**
 * kubitstore.RaftPeer as written in store.proto, plus Stream: a long-lived
 * bidi stream of RaftBatch (out) and RaftAck (back), so that peer traffic does
 * not pay a whole unary call (HTTP/2 stream, headers, trailers) per batch. It
 * reuses Send's message types (encoded by hand, straight from raft's types:
 * see wire/raft.ts); defined here so store.proto stays as it is.
 */
function raftPeerService(): grpc.ServiceClientConstructor {
  const base = loaded.kubitstore.RaftPeer.service;
  const send = base.Send;
  const stream: grpc.MethodDefinition<unknown, unknown> = {
    path: '/kubitstore.RaftPeer/Stream',
    requestStream: true,
    responseStream: true,
    requestSerialize: (b: unknown) => encodeRaftBatch(b as RaftStreamBatch),
    requestDeserialize: (buf: Buffer) => decodeRaftBatch(buf),
    responseSerialize: send.responseSerialize,
    responseDeserialize: send.responseDeserialize,
    originalName: 'Stream',
  };
  return grpc.makeGenericClientConstructor({ ...base, Stream: stream }, 'kubitstore.RaftPeer');
}
export const RaftPeerService = raftPeerService();

interface Codec<T> {
  encode(msg: T): Buffer;
  decode(buf: Buffer): T;
}

function codec<T>(name: string): Codec<T> {
  const def = packageDefinition[name] as unknown as protoLoader.MessageTypeDefinition<T, T> | undefined;
  if (!def?.serialize) throw new Error(`proto message ${name} is not loaded`);
  return { encode: (m) => def.serialize(m), decode: (b) => def.deserialize(b) };
}

// ---- etcd message shapes (as decoded: int64 as string; as sent: number or string) ----

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

export const codecs = {
  command: codec<Command>('kubitstore.Command'),
  entry: codec<WireEntry>('kubitstore.RaftEntry'),
  hardState: codec<WireHardState>('kubitstore.RaftHardState'),
  snapshot: codec<WireSnapshot>('kubitstore.RaftSnapshot'),
  memberInfo: codec<MemberInfo>('kubitstore.MemberInfo'),
  confChange: codec<WireConfChange>('kubitstore.ConfChangeMsg'),
  keyValue: codec<KeyValue>('mvccpb.KeyValue'),
};
