// Loads etcd's v3 API (our written subset) and kubit-store's own messages.
// int64/uint64 arrive as decimal strings (longs: String) so revisions, lease
// IDs and member IDs stay exact past 2^53; outgoing messages may use numbers.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { framedSerializer } from '@kubit/wire';
import type {
  Command,
  KeyValue,
  MemberInfo,
  PutResponse,
  RangeResponse,
  WatchResponse,
  WireConfChange,
  WireEntry,
  WireHardState,
  WireSnapshot,
} from './messages.js';
import {
  decodePutRequest,
  decodeRangeRequest,
  encodePutResponse,
  encodeRangeResponse,
  encodeWatchResponse,
} from './wire/etcd.js';
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

export const codecs = {
  command: codec<Command>('kubitstore.Command'),
  entry: codec<WireEntry>('kubitstore.RaftEntry'),
  hardState: codec<WireHardState>('kubitstore.RaftHardState'),
  snapshot: codec<WireSnapshot>('kubitstore.RaftSnapshot'),
  memberInfo: codec<MemberInfo>('kubitstore.MemberInfo'),
  confChange: codec<WireConfChange>('kubitstore.ConfChangeMsg'),
  keyValue: codec<KeyValue>('mvccpb.KeyValue'),
};
