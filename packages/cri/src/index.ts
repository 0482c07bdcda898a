// @kubit/cri: the one CRI (runtime.v1) client of the workspace, with the
// runtime types it speaks in. The kubelet runs pods through it; the cluster's
// `down`, the test harness and the benchmarks talk to a containerd through it
// too, so it sits below all of them. Tearing a whole node down is the
// `@kubit/cri/node-teardown` subpath.
export * from './cri.js';
export * from './types.js';
