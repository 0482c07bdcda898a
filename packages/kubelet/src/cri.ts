// @kubit/kubelet/cri: the one CRI (runtime.v1) client of the workspace, for
// whoever else talks to a containerd (the cluster's `down`, the test harness,
// the benchmarks), with the runtime types it speaks in. It loads the kubelet's
// own proto/runtime.proto, so nobody else needs to know where that file lives.
export * from './runtime/cri.js';
export * from './runtime/types.js';
