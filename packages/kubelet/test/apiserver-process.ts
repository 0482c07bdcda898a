// Stopping and starting again the apiserver of a testkit control plane, on the
// same port and store, for tests of a kubelet that loses its control plane.
// (testkit's startControlPlane has no restart; the flags are the same pkiApiserverFlags.)
import { join } from 'node:path';
import { apiserverArgs } from '@kubit/daemon/daemon-args';
import {
  type ControlPlane,
  daemonCommand,
  httpsGet,
  pkiApiserverFlags,
  startProcess,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';

/** Starts kubit-apiserver as startControlPlane does, on cp's port and store; resolves once /readyz is 200. */
export async function startApiserverAgain(cp: ControlPlane): Promise<TestProcess> {
  const port = new URL(cp.url).port;
  const { pki } = cp;
  const cmd = daemonCommand('apiserver', 'main.ts');
  const proc = startProcess({
    name: 'kubit-apiserver',
    command: cmd.command,
    args: [
      ...cmd.args,
      ...apiserverArgs({
        bindAddress: '127.0.0.1',
        securePort: port,
        ...pkiApiserverFlags(pki, cp.storeEndpoints),
        tokenAuthFile: join(cp.dir, 'tokens.csv'),
      }),
    ],
    env: { KUBIT_LOG_FORMAT: 'json' },
    logFile: join(cp.logDir, 'apiserver-restarted.log'),
  });
  try {
    await waitFor(
      'the restarted kubit-apiserver to be ready',
      async () => {
        if (!proc.running)
          throw new Error(`kubit-apiserver exited; see ${cp.logDir}/apiserver-restarted.log`);
        const r = await httpsGet(`${cp.url}/readyz`, pki.caFile, pki.admin).catch(() => undefined);
        return r?.status === 200;
      },
      60_000,
      200,
    );
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return proc;
}
