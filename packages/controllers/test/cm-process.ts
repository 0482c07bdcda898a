// Starting kubit-controller-manager as a real process for the integration tests.
import { request } from 'node:https';
import type { KubeClient } from '@kubit/client';
import { type ControlPlane, freePort, startDaemon, type TestProcess } from '@kubit/testkit';

/** What the client's write verbs take; kubernetes-types objects are the same on the wire. */
export type Wire = Parameters<KubeClient['create']>[1];
export const w = <T>(o: T): Wire => o as unknown as Wire;

export function startControllerManager(
  cp: ControlPlane,
  kubeconfig: string,
  name: string,
  port: number,
): TestProcess {
  return startDaemon({
    name,
    pkg: 'controllers',
    args: [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=true',
      '--allocate-node-cidrs=true',
      '--cluster-cidr=10.244.0.0/16',
      '--node-cidr-mask-size=24',
      '--node-monitor-grace-period=4s',
      '--node-monitor-period=1s',
      `--secure-port=${port}`,
      '--bind-address=127.0.0.1',
    ],
    logDir: cp.logDir,
  });
}

/**
 * A controller manager running only `controllers` (with `controllerArgs`) and a
 * scheduler, neither leader-elected, logging to `logDir`: the stack tests' way to
 * put real pods on their real nodes.
 */
export async function startSchedulerAndControllers(
  cp: ControlPlane,
  logDir: string,
  controllers: string[],
  controllerArgs: string[] = [],
): Promise<TestProcess[]> {
  const cmKubeconfig = await cp.kubeconfigFor('controller-manager', cp.pki.controllerManager);
  const schedKubeconfig = await cp.kubeconfigFor('kube-scheduler', cp.pki.scheduler);
  const serving = async () => [`--secure-port=${await freePort()}`, '--bind-address=127.0.0.1'];
  return [
    startDaemon({
      name: 'controller-manager',
      pkg: 'controllers',
      args: [
        `--kubeconfig=${cmKubeconfig}`,
        '--leader-elect=false',
        `--controllers=${controllers.join(',')}`,
        ...controllerArgs,
        ...(await serving()),
      ],
      logDir,
    }),
    startDaemon({
      name: 'scheduler',
      pkg: 'scheduler',
      args: [`--kubeconfig=${schedKubeconfig}`, '--leader-elect=false', ...(await serving())],
      logDir,
    }),
  ];
}

/** GET over HTTPS accepting the daemon's self-signed serving certificate. */
export function httpsGetInsecure(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { rejectUnauthorized: false }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Whether the daemon on `port` says (in /metrics) that it leads. */
export async function leaderOn(port: number): Promise<boolean> {
  const body = (await httpsGetInsecure(`https://127.0.0.1:${port}/metrics`)).body;
  return /^leader_election_master_status 1$/m.test(body);
}
