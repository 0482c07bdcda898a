// @kubit/kubelet: the node agent. Its runtime adapters and pod logic are public
// so a hollow node (or a test) can run them on the in-memory FakeRuntime.

export * from './hollow/hollow-nodes.js';
export * from './hollow/pod-status.js';
export * from './pods/backoff.js';
export * from './pods/labels.js';
export * from './pods/manager.js';
export * from './pods/sinks.js';
export * from './pods/status.js';
export * from './runtime/cri.js';
export * from './runtime/fake.js';
export * from './runtime/types.js';
