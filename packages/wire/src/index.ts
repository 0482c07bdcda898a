// The one protobuf reader-writer and the one gRPC frame parser and writer,
// shared by the store (its server, raft transport and log) and by the
// apiserver's etcd client.
export {
  FRAME_HEADER_BYTES,
  type FrameError,
  framedSerializer,
  frameMessage,
  MessageReader,
  writeFrameHeader,
} from './grpc-frame.js';
export { PbReader, PbWriter } from './pb.js';
