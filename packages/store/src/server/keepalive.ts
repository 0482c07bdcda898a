// Keepalive for one HTTP/2 connection of the gRPC server, with grpc-go's
// server rules (which every etcd member has):
//
// - The server pings a connection it has heard nothing new from for
//   `intervalMs` and closes it when the ack has not come `timeoutMs` later:
//   a peer that vanished without a FIN does not hold its streams forever.
// - The enforcement policy: a client may ping at most once per `minTimeMs`
//   while it has calls open, and (as etcd does not permit pings without
//   streams) at most once per two hours while it has none. A ping that comes
//   too soon is a strike; past two strikes the server sends GOAWAY with
//   ENHANCE_YOUR_CALM and "too_many_pings" and closes the connection. A
//   response the server starts clears the strikes (grpc-go clears them
//   whenever it sends headers or data).
import * as http2 from 'node:http2';

export interface KeepaliveOptions {
  /** Idle time before the server pings (0: never). etcd's --grpc-keepalive-interval. */
  intervalMs: number;
  /** Wait for the ping's ack before closing the connection (0: no wait). etcd's --grpc-keepalive-timeout. */
  timeoutMs: number;
  /** Least time between a client's pings. etcd's --grpc-keepalive-min-time. */
  minTimeMs: number;
}

/** grpc-go's limits: strikes tolerated, and the least ping interval with no call open. */
const MAX_PING_STRIKES = 2;
const PING_INTERVAL_WITHOUT_STREAMS_MS = 2 * 60 * 60 * 1000;

export class ConnectionKeepalive {
  /** Calls open on the connection. */
  openStreams = 0;
  private lastPingAt = Number.NEGATIVE_INFINITY;
  private strikes = 0;
  private responded = false;
  private heard = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly session: http2.ServerHttp2Session,
    private readonly opts: KeepaliveOptions,
  ) {
    session.on('ping', () => this.onClientPing());
    session.once('close', () => clearTimeout(this.timer));
    this.schedulePing();
  }

  /** A call began: the connection is alive, and its response clears the strikes. */
  streamStarted(): void {
    this.heard = true;
    this.responded = true;
    this.openStreams++;
  }

  streamEnded(): void {
    this.openStreams--;
  }

  private onClientPing(): void {
    const now = performance.now();
    const last = this.lastPingAt;
    this.lastPingAt = now;
    this.heard = true;
    if (this.responded) {
      this.responded = false;
      this.strikes = 0;
      return;
    }
    const least = this.openStreams > 0 ? this.opts.minTimeMs : PING_INTERVAL_WITHOUT_STREAMS_MS;
    if (now - last < least) this.strikes++;
    if (this.strikes > MAX_PING_STRIKES) {
      this.session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, 0, Buffer.from('too_many_pings'));
      this.session.destroy();
    }
  }

  private schedulePing(): void {
    if (this.opts.intervalMs <= 0) return;
    this.timer = setTimeout(() => this.checkIdle(), this.opts.intervalMs);
    this.timer.unref();
  }

  private checkIdle(): void {
    if (this.session.destroyed) return;
    if (this.heard) {
      this.heard = false;
      this.schedulePing();
      return;
    }
    let acked = false;
    const deadline =
      this.opts.timeoutMs > 0
        ? setTimeout(() => {
            if (!acked) this.session.destroy();
          }, this.opts.timeoutMs)
        : undefined;
    deadline?.unref();
    const sent = this.session.ping((err) => {
      acked = !err;
      clearTimeout(deadline);
      if (acked) this.schedulePing();
    });
    if (!sent) {
      clearTimeout(deadline);
      this.schedulePing();
    }
  }
}
