// @kubit/controllers/testing: the in-memory stand-ins for unit tests of code
// built on the controllers (an in-memory Cluster, and a client Transport that
// serves it), kept out of the package's main index so production code cannot
// pick them up by accident.
export * from './fake-cluster.js';
export * from './fake-transport.js';
