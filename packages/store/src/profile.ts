// A profiling aid, off unless KUBIT_STORE_CPU_PROF names a directory: the
// member records a V8 CPU profile from start to shutdown and writes it there
// as <pid>.cpuprofile (open it in Chrome DevTools). Unlike node's --cpu-prof,
// it is written by the shutdown hook, so a member stopped by SIGTERM keeps it.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

/** Starts profiling if asked to; returns the function that writes the profile (or undefined). */
export function startCpuProfile(): (() => Promise<void>) | undefined {
  const dir = process.env.KUBIT_STORE_CPU_PROF;
  if (!dir) return undefined;
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.start');
  return () =>
    new Promise<void>((resolve) => {
      session.post('Profiler.stop', (err, res) => {
        if (!err) writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(res.profile));
        session.disconnect();
        resolve();
      });
    });
}
