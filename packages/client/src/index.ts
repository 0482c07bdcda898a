// @kubit/client: the apiserver client every Kubit component uses.

export * from './client.js';
export * from './discovery.js';
export * from './errors.js';
export * from './events.js';
export * from './informer.js';
export * from './kubeconfig.js';
export * from './leaderelection.js';
export * from './paths.js';
export * from './resources.js';
export * from './retry.js';
export * from './store.js';
export * from './transport.js';
export * from './types.js';
export * from './watch.js';
export * from './workqueue.js';
