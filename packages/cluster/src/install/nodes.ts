// Nodes that come and go in a running kubit-install cluster.
//   join NODE:   a node host newly listed in the inventory gets its certificates
//                (the cluster's own CA, from the work dir of its `up`), configs and
//                units, and starts; the installer waits until it is Ready. The other
//                nodes' kubit-net pick its pod subnet up from its Node.
//   remove NODE: cordon, then evict its pods through the eviction API (so
//                PodDisruptionBudgets hold; DaemonSet pods stay, as `kubectl drain
//                --ignore-daemonsets` leaves them), stop its daemons and clean up
//                what they left in its kernel, and delete its Node: the controller
//                manager frees its pod subnet and every other kubit-net removes its
//                routes, neighbour and FDB entries.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { StatusError } from '@kubit/api';
import { KubeClient } from '@kubit/client';
import { listNodes, loadClientTls, waitUntil } from '../probes.js';
import {
  checkHosts,
  copyToHosts,
  explainer,
  type InstallOptions,
  loadTemplates,
  makePki,
  stage,
  startUnits,
  stopHost,
  syncRoutes,
} from './install.js';
import type { Host } from './inventory.js';
import { apiserverUrl, planCluster } from './plan.js';

function nodeHost(opts: InstallOptions, name: string): Host {
  const host = opts.inventory.nodes.find((n) => n.name === name);
  if (!host) {
    const known = opts.inventory.nodes.map((n) => n.name).join(', ');
    throw new Error(`${name} is not among the inventory's nodes (${known}): add it under nodes: first`);
  }
  return host;
}

function requireClusterPki(workDir: string): string {
  const pkiDir = join(workDir, 'pki');
  if (!existsSync(join(pkiDir, 'ca.key'))) {
    throw new Error(
      `no cluster PKI in ${pkiDir}: join and remove need the work dir of the cluster's kubit-install up (--work-dir)`,
    );
  }
  return pkiDir;
}

export async function joinNode(opts: InstallOptions, name: string): Promise<void> {
  const inv = opts.inventory;
  const host = nodeHost(opts, name);
  const pkiDir = requireClusterPki(opts.workDir);
  const server = apiserverUrl(inv);
  const admin = loadClientTls(join(pkiDir, 'ca.crt'), join(pkiDir, 'admin.crt'), join(pkiDir, 'admin.key'));
  if ((await listNodes(server, admin)).some((n) => n.name === name)) {
    throw new Error(
      `node ${name} is in the cluster already (kubit-install remove ${name} first to join it again)`,
    );
  }
  await checkHosts(inv, opts.mode, [host]);
  // scripts/pki keeps every certificate that exists and issues the new node's.
  await makePki(inv, opts.repoRoot, pkiDir);
  const plans = planCluster(inv, await loadTemplates(opts.repoRoot)).filter((p) => p.host.name === name);
  const staged = await stage(plans, pkiDir, opts.workDir);
  await copyToHosts(opts, plans, staged);
  await startUnits(opts, plans, staged, () => true);
  opts.say(`${name}: daemons started; waiting for it to register and be Ready`);
  const explain = explainer(inv, plans, opts.mode);
  await waitUntil(
    `node ${name} to be Ready with a pod subnet`,
    async () => {
      const n = (await listNodes(server, admin)).find((x) => x.name === name);
      return Boolean(n?.ready && n.podCidr);
    },
    { timeoutMs: opts.timeoutMs, intervalMs: 200 },
  ).catch(explain);
  await syncRoutes(inv, await listNodes(server, admin), opts.say);
  opts.say(`${name} joined the cluster`);
}

interface PodItem {
  metadata: { name: string; namespace: string; ownerReferences?: { kind: string; controller?: boolean }[] };
  status?: { phase?: string };
}

export async function removeNode(opts: InstallOptions, name: string): Promise<void> {
  const inv = opts.inventory;
  const host = nodeHost(opts, name);
  requireClusterPki(opts.workDir);
  const client = KubeClient.fromKubeconfig({ kubeconfig: join(opts.workDir, 'admin.kubeconfig') });
  try {
    const deadline = Date.now() + opts.timeoutMs;
    const exists = await client
      .request({ method: 'GET', path: `/api/v1/nodes/${name}` })
      .then(() => true)
      .catch((err) => {
        if (err instanceof StatusError && err.code === 404) return false;
        throw err;
      });
    if (exists) {
      await client.request({
        method: 'PATCH',
        path: `/api/v1/nodes/${name}`,
        contentType: 'application/merge-patch+json',
        body: { spec: { unschedulable: true } },
      });
      opts.say(`${name}: cordoned; evicting its pods`);
      await drain(client, name, deadline, opts.say);
    }
    const plan = planCluster(inv, await loadTemplates(opts.repoRoot)).find((p) => p.host.name === host.name);
    if (plan) await stopHost(opts, plan);
    opts.say(`${name}: daemons stopped, its routes, VXLAN device and nft tables removed`);
    if (exists) {
      await client.request({ method: 'DELETE', path: `/api/v1/nodes/${name}` }).catch((err) => {
        if (!(err instanceof StatusError && err.code === 404)) throw err;
      });
    }
    opts.say(`${name} removed from the cluster; take it out of the inventory's nodes now`);
  } finally {
    client.close();
  }
}

/** Evicts every pod on the node but DaemonSet pods, retrying what a budget refuses (429), until all are gone. */
async function drain(
  client: KubeClient,
  node: string,
  deadline: number,
  say: (line: string) => void,
): Promise<void> {
  const podsOnNode = async () =>
    (
      await client.request<{ items: PodItem[] }>({
        method: 'GET',
        path: '/api/v1/pods',
        query: { fieldSelector: `spec.nodeName=${node}` },
      })
    ).items.filter(
      (p) =>
        !p.metadata.ownerReferences?.some((o) => o.controller && o.kind === 'DaemonSet') &&
        p.status?.phase !== 'Succeeded' &&
        p.status?.phase !== 'Failed',
    );
  let refused = '';
  for (;;) {
    const pods = await podsOnNode();
    if (pods.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(
        `node ${node} still runs ${pods.map((p) => `${p.metadata.namespace}/${p.metadata.name}`).join(', ')}${refused ? ` (${refused})` : ''}`,
      );
    }
    for (const p of pods) {
      const { namespace, name } = p.metadata;
      await client
        .request({
          method: 'POST',
          path: `/api/v1/namespaces/${namespace}/pods/${name}/eviction`,
          body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } },
        })
        .catch((err) => {
          if (err instanceof StatusError && err.code === 429) {
            // A disruption budget says not yet: try again until the deadline, as kubectl drain does.
            if (refused !== err.message) say(`${namespace}/${name}: ${err.message}; retrying`);
            refused = err.message;
            return;
          }
          if (err instanceof StatusError && err.code === 404) return;
          throw err;
        });
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}
