#!/usr/bin/env node
// The kubit executable.
import { processIO } from './io.js';
import { run } from './run.js';

const controller = new AbortController();
process.once('SIGINT', () => {
  // Watches and waits end cleanly on the abort; anything else gets a moment, then goes.
  controller.abort();
  setTimeout(() => process.exit(130), 1000).unref();
});
// `kubit get pods | head -1`: a closed pipe is not an error worth a stack trace.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});
run(process.argv.slice(2), processIO(controller.signal)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);
