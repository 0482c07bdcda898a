// What every Kubit daemon shares: flags, logs, metrics, health endpoints and shutdown.

export { freshBundle } from './bundle.js';
export { type Check, type HealthServerOptions, registerHealthRoutes, startHealthServer } from './health.js';
export { createLogger, type Logger, type LoggerOptions } from './log.js';
export { durationArg, intArg, listArg, parseDuration, runMain, StartupError } from './main.js';
export { Counter, createRegistry, Gauge, Histogram, Registry, Summary } from './metrics.js';
export { type OperationsServerOptions, serveOperations } from './operations.js';
export { repoRootOf } from './repo-root.js';
export { type ServingCert, selfSignedServingCert } from './serving-cert.js';
export { Shutdown } from './shutdown.js';
export { refuseUpgrade, spliceUpgrade, upgradeProtocol, upgradeRequestHead } from './upgrade.js';
