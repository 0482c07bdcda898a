// The NetworkPolicy agent as its own process, for the traffic test: it must be
// killable with SIGKILL (kill -9) and restartable while the rules stay in the
// kernel. (kubit-net's daemon starts the same runNetworkPolicyAgent.)
//   node --conditions=kubit-source --import tsx netpol-agent-process.ts KUBECONFIG NODE NETNS
import { KubeClient } from '@kubit/client';
import { createLogger } from '@kubit/daemon';
import { NftRunner } from '@kubit/proxy';
import { runNetworkPolicyAgent } from '../src/index.js';

const [kubeconfig, nodeName, netns] = process.argv.slice(2);
const log = createLogger({ name: 'kubit-net-netpol' });
const client = KubeClient.fromKubeconfig({ kubeconfig });
const agent = runNetworkPolicyAgent({
  client,
  nodeName,
  log,
  nft: new NftRunner({ netns }),
  minSyncPeriodMs: 20,
  resyncPeriodMs: 5_000,
});
agent.synced.then(() => log.info('netpol agent synced'));
process.on('SIGTERM', () => {
  agent.stop().then(() => process.exit(0));
});
