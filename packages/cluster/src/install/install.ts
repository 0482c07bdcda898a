// The installer: from an inventory to a running cluster over ssh, in the
// spirit of "Kubernetes the Hard Way", automated. Certificates are made here
// (scripts/pki; the CA key stays in the work dir), every host gets only the
// files its roles need, the daemons run from deploy/systemd's units, and each
// host routes to every node's pod subnet through that node's address.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { certKubeconfigYaml } from '@kubit/client';
import { get, listNodes, loadClientTls, type NodeView, waitUntil } from '../probes.js';
import { logFile, pidFile, startScript, statusScript, stopScript, unitCommand } from './direct.js';
import { type Host, hostWithRole, type Inventory, storeHosts } from './inventory.js';
import {
  apiserverUrl,
  dnsHosts,
  type HostPlan,
  hostPaths,
  nodeCleanupScript,
  PORTS,
  planCluster,
  serverSans,
  storeMetricsUrl,
  type Templates,
} from './plan.js';
import { copyTree, runSsh, runSshChecked, type SshOptions, shQuote } from './ssh.js';

const run = promisify(execFile);

export type InstallMode = 'systemd' | 'direct';

export interface InstallOptions {
  inventory: Inventory;
  /** The local repository: deploy/ templates and scripts/pki. */
  repoRoot: string;
  /** Keeps the PKI (with the CA key), the admin kubeconfig and the staged host files. */
  workDir: string;
  mode: InstallMode;
  timeoutMs: number;
  say: (line: string) => void;
}

export interface InstallResult {
  apiserverUrl: string;
  adminKubeconfig: string;
  nodes: NodeView[];
}

function sshOptions(inv: Inventory): SshOptions {
  return inv.knownHosts ? { knownHosts: inv.knownHosts } : {};
}

function allHosts(inv: Inventory): Host[] {
  return [...inv.controlPlane, ...inv.nodes];
}

export async function loadTemplates(repoRoot: string): Promise<Templates> {
  const read = async (...parts: string[]) => {
    const path = join(repoRoot, 'deploy', ...parts);
    try {
      return await readFile(path, 'utf8');
    } catch {
      throw new Error(`${path} is missing: the installer reads its templates from the repository`);
    }
  };
  const units = new Map<string, string>();
  for (const u of [
    'kubit-store@.service',
    'kubit-apiserver.service',
    'kubit-scheduler.service',
    'kubit-controller-manager.service',
    'containerd-kubit@.service',
    'kubit-kubelet@.service',
    'kubit-proxy.service',
    'kubit-net@.service',
    'kubit-dns@.service',
  ]) {
    units.set(u, await read('systemd', u));
  }
  return {
    units,
    containerdConfig: await read('containerd', 'config.toml.tmpl'),
    hostsToml: await read('containerd', 'hosts.toml.tmpl'),
    conflist: await read('containerd', '10-kubit.conflist.tmpl'),
  };
}

/** Every host answers ssh and has what its roles need; one clear message lists what is missing where. */
export async function checkHosts(
  inv: Inventory,
  mode: InstallMode,
  hosts: Host[] = allHosts(inv),
): Promise<void> {
  const problems = await Promise.all(
    hosts.map(async (h) => {
      const isNode = inv.nodes.includes(h);
      const need = [
        `[ -x ${shQuote(inv.nodePath)} ] || echo "node (${inv.nodePath})"`,
        inv.kubitCopyFrom
          ? ''
          : inv.kubitRun === 'dist'
            ? `[ -f ${shQuote(`${inv.kubitRoot}/packages/store/dist/src/main.js`)} ] || echo "a built Kubit in ${inv.kubitRoot} (kubit.root; or give kubit.copyFrom)"`
            : `[ -d ${shQuote(`${inv.kubitRoot}/node_modules/tsx`)} ] || echo "Kubit's sources with tsx installed in ${inv.kubitRoot} (kubit.run: source)"`,
        'command -v tar >/dev/null || echo tar',
        mode === 'systemd'
          ? 'command -v systemctl >/dev/null || echo "systemctl (use --mode direct without systemd)"'
          : '',
        mode === 'direct' ? 'command -v setsid >/dev/null || echo "setsid (util-linux)"' : '',
        isNode
          ? '[ -x /usr/bin/containerd ] || echo "/usr/bin/containerd (apt-get install containerd runc)"'
          : '',
        isNode
          ? '[ -x /usr/lib/cni/bridge ] || echo "/usr/lib/cni/bridge (apt-get install containernetworking-plugins)"'
          : '',
        isNode ? 'command -v ip >/dev/null || echo "ip (apt-get install iproute2)"' : '',
        isNode ? 'command -v nft >/dev/null || echo "nft (apt-get install nftables)"' : '',
        isNode ? 'command -v conntrack >/dev/null || echo "conntrack (apt-get install conntrack)"' : '',
        // kubit-disk volumes: a loop device (losetup) with an ext4 (mkfs.ext4, resize2fs).
        isNode ? 'command -v losetup >/dev/null || echo "losetup (apt-get install mount)"' : '',
        isNode ? 'command -v mkfs.ext4 >/dev/null || echo "mkfs.ext4 (apt-get install e2fsprogs)"' : '',
        dnsHosts(inv).includes(h) ? dnsPortCheck(h) : '',
      ].filter(Boolean);
      const out = await runSshChecked(h, 'checking prerequisites', need.join('\n'), sshOptions(inv));
      const missing = out.trim().split('\n').filter(Boolean);
      return missing.length > 0 ? `${h.name} (${h.address}) is missing: ${missing.join(', ')}` : undefined;
    }),
  );
  const found = problems.filter((p): p is string => p !== undefined);
  if (found.length > 0) throw new Error(found.join('\n'));
}

/**
 * kubit-dns binds the host's address, port 53: anything else on it (or on the
 * wildcard address) is a conflict; a resolver on 127.0.0.53 (systemd-resolved)
 * is not. A listener whose command line names the host's /etc/kubit is ours
 * (an installed cluster being installed again).
 */
function dnsPortCheck(h: Host): string {
  const local = [h.address, '0.0.0.0', '*', '[::]'].map((a) => a.replace(/[.*[\]]/g, '\\$&')).join('|');
  return [
    'if command -v ss >/dev/null; then',
    `  for pid in $(ss -Hlnutp 'sport = :${PORTS.dns}' | grep -E ' (${local}):${PORTS.dns} ' | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do`,
    `    tr '\\000' ' ' < /proc/$pid/cmdline 2>/dev/null | grep -qF -- ${shQuote(hostPaths(h).etc)} ||`,
    `      echo "port ${PORTS.dns} on ${h.address} for kubit-dns (it is taken by $(cat /proc/$pid/comm 2>/dev/null) pid $pid)"`,
    '  done',
    'fi',
  ].join('\n');
}

export async function makePki(inv: Inventory, repoRoot: string, pkiDir: string): Promise<void> {
  const args = [pkiDir, ...inv.nodes.flatMap((n) => ['--node', n.name]), ...serverSans(inv)];
  try {
    await run(join(repoRoot, 'scripts', 'pki'), args);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`scripts/pki failed: ${(e.stderr ?? '').trim() || e.message}`);
  }
}

/** Writes each host's files under workDir/hosts/NAME/fs, laid out as they go onto the host's "/". */
export async function stage(
  plans: HostPlan[],
  pkiDir: string,
  workDir: string,
): Promise<Map<string, string>> {
  const roots = new Map<string, string>();
  for (const plan of plans) {
    const fs = join(workDir, 'hosts', plan.host.name, 'fs');
    await rm(fs, { recursive: true, force: true });
    for (const f of plan.files) {
      const local = join(fs, f.path);
      await mkdir(dirname(local), { recursive: true });
      const data = 'text' in f.content ? f.content.text : await readFile(join(pkiDir, f.content.localPki));
      await writeFile(local, data, { mode: f.mode });
    }
    roots.set(plan.host.name, fs);
  }
  return roots;
}

export async function writeAdminKubeconfig(inv: Inventory, workDir: string): Promise<string> {
  const pki = join(workDir, 'pki');
  const file = join(workDir, 'admin.kubeconfig');
  await writeFile(
    file,
    certKubeconfigYaml({
      server: apiserverUrl(inv),
      caFile: join(pki, 'ca.crt'),
      certFile: join(pki, 'admin.crt'),
      keyFile: join(pki, 'admin.key'),
      user: 'admin',
    }),
    { mode: 0o600 },
  );
  return file;
}

/** Units of a phase on every host, in parallel; in direct mode from the staged unit and env files. */
export async function startUnits(
  opts: InstallOptions,
  plans: HostPlan[],
  staged: Map<string, string>,
  pick: (unitName: string) => boolean,
): Promise<void> {
  const ssh = sshOptions(opts.inventory);
  await Promise.all(
    plans.map(async (plan) => {
      const units = plan.units.filter((u) => pick(u.name));
      if (units.length === 0) return;
      if (opts.mode === 'systemd') {
        const names = units.map((u) => shQuote(u.name)).join(' ');
        await runSshChecked(plan.host, 'systemctl enable --now', `systemctl enable --now ${names}`, ssh);
        return;
      }
      const fs = staged.get(plan.host.name) ?? '';
      const readStaged = (path: string) => {
        try {
          return readFileSync(join(fs, path), 'utf8');
        } catch {
          return undefined;
        }
      };
      // One ssh session per host: each unit's script in a subshell, stopping at the first failure.
      const script = units
        .map((u) => `(\n${startScript(plan.paths, u, unitCommand(plan.paths, u, readStaged))}) || exit 1`)
        .join('\n');
      await runSshChecked(plan.host, `starting ${units.map((u) => u.name).join(', ')}`, script, ssh);
    }),
  );
}

/** What is not running, with the end of its log (direct mode) or systemctl's view (systemd). */
export async function unitProblems(inv: Inventory, plans: HostPlan[], mode: InstallMode): Promise<string> {
  const ssh = sshOptions(inv);
  const reports = await Promise.all(
    plans.map(async (plan) => {
      const script =
        mode === 'direct'
          ? statusScript(plan.paths, plan.units)
          : plan.units
              .map(
                (u) =>
                  `systemctl is-active --quiet ${shQuote(u.name)} || { echo "== ${u.name}:"; journalctl -u ${shQuote(u.name)} -n 8 --no-pager; }`,
              )
              .join('\n');
      const r = await runSsh(plan.host, script, ssh).catch((err: Error) => ({ stdout: err.message }));
      return r.stdout.trim() ? `${plan.host.name}:\n${r.stdout.trim()}` : '';
    }),
  );
  return reports.filter(Boolean).join('\n');
}

/** The Kubit tree (kubit.copyFrom) and each host's staged files, onto the hosts. */
export async function copyToHosts(
  opts: InstallOptions,
  plans: HostPlan[],
  staged: Map<string, string>,
): Promise<void> {
  const inv = opts.inventory;
  const ssh = sshOptions(inv);
  await Promise.all(
    plans.map(async (plan) => {
      if (inv.kubitCopyFrom) {
        await copyTree(plan.host, inv.kubitCopyFrom, inv.kubitRoot, ssh, [
          './.git',
          './.kubit',
          './.kubit-install',
        ]);
      }
      await copyTree(plan.host, staged.get(plan.host.name) ?? '', '/', ssh);
      if (opts.mode === 'systemd') {
        await runSshChecked(plan.host, 'systemctl daemon-reload', 'systemctl daemon-reload', ssh);
      }
    }),
  );
}

/** A wait's failure, with what is not running on the hosts of `plans` and why. */
export function explainer(
  inv: Inventory,
  plans: HostPlan[],
  mode: InstallMode,
): (err: unknown) => Promise<never> {
  return async (err) => {
    const problems = await unitProblems(inv, plans, mode);
    throw new Error(`${(err as Error).message}${problems ? `\n${problems}` : ''}`);
  };
}

/**
 * Each control-plane host routes every node's pod subnet through that node's address (the
 * apiserver reaches webhooks and pods there). Node hosts need none of this: their kubit-net
 * keeps their routes (or VXLAN) to the other nodes, and keeps them across reboots. A node that
 * is not on the control-plane host's own segment cannot be a next hop: that is said, and left.
 */
export async function syncRoutes(
  inv: Inventory,
  nodes: NodeView[],
  say: (line: string) => void = () => {},
): Promise<void> {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  await Promise.all(
    inv.controlPlane
      .filter((h) => !inv.nodes.some((n) => n.name === h.name))
      .map(async (h) => {
        const routes = inv.nodes.map((n) => {
          const cidr = byName.get(n.name)?.podCidr;
          if (!cidr) throw new Error(`node ${n.name} has no spec.podCIDR yet`);
          const [c, via] = [shQuote(cidr), shQuote(n.address)];
          return `if ip -o route get ${via} | grep -q ' via '; then echo "${n.name} (${n.address}) is not on this host's segment: its pod subnet ${cidr} is not routed from here"; else ip route replace ${c} via ${via}; fi`;
        });
        const out = await runSshChecked(h, 'adding pod routes', routes.join('\n'), sshOptions(inv));
        for (const line of out.trim().split('\n').filter(Boolean)) say(`${h.name}: ${line}`);
      }),
  );
}

export async function install(opts: InstallOptions): Promise<InstallResult> {
  const inv = opts.inventory;
  opts.say(`checking ${allHosts(inv).length} hosts over ssh`);
  await checkHosts(inv, opts.mode);

  const pkiDir = join(opts.workDir, 'pki');
  await mkdir(opts.workDir, { recursive: true });
  await makePki(inv, opts.repoRoot, pkiDir);
  const adminKubeconfig = await writeAdminKubeconfig(inv, opts.workDir);
  const plans = planCluster(inv, await loadTemplates(opts.repoRoot));
  const staged = await stage(plans, pkiDir, opts.workDir);
  opts.say(`PKI and host files ready in ${opts.workDir}`);

  await copyToHosts(opts, plans, staged);
  opts.say(`copied certificates, configs and units to every host (${opts.mode} mode)`);

  const deadline = Date.now() + opts.timeoutMs;
  const left = () => Math.max(1000, deadline - Date.now());
  const explain = explainer(inv, plans, opts.mode);

  // Direct mode has no systemd to restart a daemon whose dependency is not up
  // yet, so it starts them in dependency order; systemd mode starts all at once.
  const isStore = (n: string) => n.startsWith('kubit-store@');
  const isApiserver = (n: string) => n === 'kubit-apiserver.service';
  if (opts.mode === 'direct') {
    await startUnits(opts, plans, staged, isStore);
    await waitUntil(
      'the store members to elect a leader',
      async () => {
        const res = await Promise.all(storeHosts(inv).map((h) => get(`${storeMetricsUrl(h)}/health`)));
        return res.every((r) => r.status === 200);
      },
      { timeoutMs: left(), intervalMs: 200 },
    ).catch(explain);
    await startUnits(opts, plans, staged, isApiserver);
  } else {
    await startUnits(opts, plans, staged, () => true);
  }
  const server = apiserverUrl(inv);
  const admin = loadClientTls(join(pkiDir, 'ca.crt'), join(pkiDir, 'admin.crt'), join(pkiDir, 'admin.key'));
  await waitUntil(
    `kubit-apiserver /readyz on ${hostWithRole(inv, 'apiserver').name}`,
    async () => {
      return (await get(`${server}/readyz`, admin)).status === 200;
    },
    { timeoutMs: left(), intervalMs: 200 },
  ).catch(explain);
  if (opts.mode === 'direct') await startUnits(opts, plans, staged, (n) => !isStore(n) && !isApiserver(n));
  opts.say('control plane ready; waiting for the nodes to register');

  const wanted = inv.nodes.map((n) => n.name);
  let nodes: NodeView[] = [];
  await waitUntil(
    `nodes ${wanted.join(', ')} to register with a pod subnet`,
    async () => {
      nodes = (await listNodes(server, admin)).filter((n) => wanted.includes(n.name));
      return nodes.length === wanted.length && nodes.every((n) => n.podCidr);
    },
    { timeoutMs: left(), intervalMs: 200 },
  ).catch(explain);
  opts.say(
    `nodes registered (${nodes.map((n) => `${n.name} ${n.podCidr}`).join(', ')}); kubit-net on each node routes between them (${inv.overlayMode})`,
  );
  await syncRoutes(inv, nodes, opts.say);
  await waitUntil(
    `nodes ${wanted.join(', ')} to be Ready`,
    async () => {
      nodes = (await listNodes(server, admin)).filter((n) => wanted.includes(n.name));
      return nodes.length === wanted.length && nodes.every((n) => n.ready);
    },
    { timeoutMs: left(), intervalMs: 200 },
  ).catch(explain);
  return { apiserverUrl: server, adminKubeconfig, nodes };
}

/** Stops the cluster's daemons on every host: by PID file (direct) or systemctl disable --now. */
export async function uninstall(opts: Omit<InstallOptions, 'timeoutMs'>): Promise<void> {
  const plans = planCluster(opts.inventory, await loadTemplates(opts.repoRoot));
  const errors: string[] = [];
  await Promise.all(
    plans.map((plan) => stopHost(opts, plan).catch((err: Error) => errors.push(err.message))),
  );
  if (errors.length > 0) throw new Error(errors.join('\n'));
}

/** Stops one host's daemons, dependents first, and on a node host removes what they leave in its kernel. */
export async function stopHost(opts: Omit<InstallOptions, 'timeoutMs'>, plan: HostPlan): Promise<void> {
  const inv = opts.inventory;
  // Dependents first: kubelets before their containerd, the apiserver before the store.
  const units = [...plan.units].reverse();
  const script =
    opts.mode === 'direct'
      ? stopScript(plan.paths, units)
      : `systemctl disable --now ${units.map((u) => shQuote(u.name)).join(' ')}`;
  // A node host's kubit-proxy and kubit-net left their nft tables (and kubit-net its routes and
  // VXLAN device) behind when they stopped, for a restart to take over.
  const cleanup = plan.units.some((u) => u.name === 'kubit-proxy.service')
    ? `\n${nodeCleanupScript(inv, plan.host)}`
    : '';
  const out = await runSshChecked(plan.host, 'stopping the daemons', `${script}${cleanup}`, sshOptions(inv));
  if (out.trim()) opts.say(`${plan.host.name}: ${out.trim().split('\n').join(', ')}`);
}

export { logFile, pidFile };
