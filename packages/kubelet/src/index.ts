// @kubit/kubelet: the node agent. Its pod logic and the in-memory FakeRuntime are
// public so a hollow node (or a test) can run one without containerd; the
// runtime interface and the real CRI client are @kubit/cri's.

export * from './hollow/hollow-nodes.js';
export * from './hollow/pod-status.js';
export * from './pods/backoff.js';
export * from './pods/labels.js';
export * from './pods/manager.js';
export * from './pods/sinks.js';
export * from './pods/status.js';
export * from './runtime/fake.js';
