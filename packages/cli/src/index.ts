// @kubit/cli: the kubit command, runnable in-process (tests) or as the `kubit` binary.

export { type IO, processIO } from './io.js';
export { run, VERBS } from './run.js';
