// A minimal etcd v3 KV client for tests, on the store's own proto: one
// connection per endpoint, calls fail fast when a member is down (no retries
// hidden from the test's history).
import * as grpc from '@grpc/grpc-js';
import { etcdServices } from '../src/proto.js';

type Callback<T> = (err: grpc.ServiceError | null, resp: T) => void;
interface KvStub extends grpc.Client {
  Put(req: object, opts: grpc.CallOptions, cb: Callback<{ header: { revision: string } }>): void;
  Range(req: object, opts: grpc.CallOptions, cb: Callback<{ kvs: { key: Buffer; value: Buffer }[] }>): void;
}

export class KvClient {
  private readonly stubs: KvStub[];
  private next = 0;

  constructor(
    endpoints: string[],
    private readonly timeoutMs = 3000,
  ) {
    this.stubs = endpoints.map(
      (e) => new etcdServices.KV(e, grpc.credentials.createInsecure()) as unknown as KvStub,
    );
  }

  private stub(): KvStub {
    const s = this.stubs[this.next % this.stubs.length];
    this.next++;
    return s;
  }

  put(key: string, value: string): Promise<number> {
    return new Promise((res, rej) => {
      this.stub().Put(
        { key: Buffer.from(key), value: Buffer.from(value) },
        { deadline: Date.now() + this.timeoutMs },
        (err, resp) => (err ? rej(err) : res(Number(resp.header.revision))),
      );
    });
  }

  get(key: string): Promise<string | null> {
    return new Promise((res, rej) => {
      this.stub().Range({ key: Buffer.from(key) }, { deadline: Date.now() + this.timeoutMs }, (err, resp) =>
        err ? rej(err) : res(resp.kvs.length > 0 ? resp.kvs[0].value.toString() : null),
      );
    });
  }

  /** Any unary KV method with a raw request; rejects with the gRPC error. */
  call<T = Record<string, unknown>>(
    method: 'Range' | 'Put' | 'DeleteRange' | 'Txn' | 'Compact',
    req: object,
  ): Promise<T> {
    const stub = this.stub() as unknown as Record<
      string,
      (r: object, o: grpc.CallOptions, cb: Callback<T>) => void
    >;
    return new Promise((res, rej) => {
      stub[method].call(
        stub,
        req,
        { deadline: Date.now() + this.timeoutMs },
        (err: grpc.ServiceError | null, resp: T) => (err ? rej(err) : res(resp)),
      );
    });
  }

  close(): void {
    for (const s of this.stubs) s.close();
  }
}
