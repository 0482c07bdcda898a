// `kubit cluster list`: the one-machine clusters (./scripts/up) on this
// machine, from its cluster registry, whichever checkout made them — kind's
// `kind get clusters`, with what a person needs to tell them apart.
import { listClusters, runningProcesses } from '@kubit/daemon/cluster-registry';
import { CliError } from '../errors.js';
import type { Factory } from '../factory.js';
import { alignColumns } from '../printers/tabwriter.js';

export async function cluster(
  f: Factory,
  sub: string,
  o: { output?: string; noHeaders?: boolean },
): Promise<void> {
  if (sub !== 'list') throw new CliError(`unknown cluster command "${sub}"`);
  const clusters = listClusters().map((c) => {
    const running = runningProcesses(c.stateDir).length;
    return { ...c, status: running > 0 ? `Running (${running} processes)` : 'Stopped' };
  });
  if (o.output === 'json') {
    f.io.out.write(`${JSON.stringify({ clusters }, null, 2)}\n`);
    return;
  }
  if (o.output === 'name') {
    for (const c of clusters) f.io.out.write(`${c.name}\n`);
    return;
  }
  if (o.output) throw new CliError(`--output must be 'json' or 'name'`);
  if (clusters.length === 0) {
    f.io.err.write('No clusters on this machine (./scripts/up makes one).\n');
    return;
  }
  const rows = clusters.map((c) => [
    c.name,
    c.status,
    String(c.nodes),
    c.apiserver,
    c.clusterCidr,
    c.serviceCidr,
    c.stateDir,
  ]);
  const header = ['NAME', 'STATUS', 'NODES', 'API', 'POD CIDR', 'SERVICE CIDR', 'STATE'];
  f.io.out.write(alignColumns(o.noHeaders ? rows : [header, ...rows]));
}
