// Restarting a control plane's apiserver in place: stop its process by PID and
// start the same command line again, on the same port, against the same store.

import { join } from 'node:path';
import { KubeClient } from '@kubit/client';
import { type ControlPlane, startProcess, type TestProcess, waitFor } from '@kubit/testkit';

/**
 * Stops cp.apiserver and starts it again with the same flags; resolves with the
 * new process once it answers /readyz. The caller stops the returned process
 * (cp.stop() only knows the first one, which is gone by then).
 */
export async function restartApiserver(cp: ControlPlane, generation = 2): Promise<TestProcess> {
  const [command, ...args] = cp.apiserver.child.spawnargs;
  await cp.apiserver.stop();
  const logFile = join(cp.logDir, `apiserver-${generation}.log`);
  const proc = startProcess({
    name: `kubit-apiserver-${generation}`,
    command,
    args,
    env: { KUBIT_LOG_FORMAT: 'json' },
    logFile,
  });
  const probe = KubeClient.fromKubeconfig(
    { kubeconfig: cp.kubeconfigPath },
    { timeoutMs: 2000, retry: { maxRetries: 0 } },
  );
  try {
    await waitFor(
      'the restarted apiserver',
      async () => {
        if (!proc.running) throw new Error(`the restarted apiserver exited (see ${logFile})`);
        await probe.request({ method: 'GET', path: '/readyz' });
        return true;
      },
      90_000,
      200,
    );
  } catch (e) {
    await proc.stop();
    throw e;
  } finally {
    probe.close();
  }
  return proc;
}
