// gRPC's grpc-timeout request header: how long the client will wait for the
// call, as at most 8 ASCII digits and one unit letter (H hours, M minutes,
// S seconds, m milliseconds, u microseconds, n nanoseconds). grpc-go picks
// the smallest unit that fits in 8 digits (so etcdctl's --command-timeout=5s
// arrives as "5000000u"), grpc-js whole milliseconds or coarser.

const UNIT_MS: Record<string, number> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 1e-3,
  n: 1e-6,
};

/** The header's timeout in milliseconds (fractions kept), or undefined when it is malformed. */
export function parseGrpcTimeout(value: string): number | undefined {
  if (!/^\d{1,8}[HMSmun]$/.test(value)) return undefined;
  return Number(value.slice(0, -1)) * UNIT_MS[value[value.length - 1]];
}
