// The test harness: real processes on loopback, stopped by PID.
export * from './containerd.js';
export * from './controlplane.js';
export * from './docker.js';
export * from './etcd.js';
export * from './images.js';
export * from './kubelet.js';
export * from './linearizability.js';
export * from './netns.js';
export * from './pki.js';
export * from './process.js';
export * from './registry.js';
export * from './workload-cluster.js';
