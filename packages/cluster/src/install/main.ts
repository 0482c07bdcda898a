#!/usr/bin/env node
// kubit-install: sets up a Kubit cluster on the hosts of an inventory over ssh.
//   kubit-install up     -i INVENTORY [--mode systemd|direct] [--work-dir DIR] [--timeout SECONDS]
//   kubit-install down   -i INVENTORY [--mode systemd|direct] [--work-dir DIR]
//   kubit-install routes -i INVENTORY [--work-dir DIR]   (re-adds the pod routes, e.g. after a reboot)
//   kubit-install check  -i INVENTORY [--mode systemd|direct]
//   kubit-install join NODE   -i INVENTORY [--mode …] [--work-dir DIR]   (a node newly listed in the inventory)
//   kubit-install remove NODE -i INVENTORY [--mode …] [--work-dir DIR]   (drain, stop, delete its Node)
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { repoRootOf } from '@kubit/daemon';
import { listNodes, loadClientTls } from '../probes.js';
import { checkHosts, type InstallMode, install, syncRoutes, uninstall } from './install.js';
import { type Inventory, parseInventory } from './inventory.js';
import { joinNode, removeNode } from './nodes.js';
import { apiserverUrl } from './plan.js';

const USAGE = `usage: kubit-install up|down|routes|check|join NODE|remove NODE -i INVENTORY [--mode systemd|direct] [--work-dir DIR] [--timeout SECONDS]
  up      make the PKI, copy certificates, configs and units to every host, start the daemons, route pod subnets
  down    stop the daemons (direct: by PID file; systemd: systemctl disable --now)
  join    add NODE, newly listed under nodes:, to the running cluster (its certificates from the work dir's CA)
  remove  cordon NODE, evict its pods (disruption budgets hold; DaemonSet pods stay), stop it, delete its Node
  routes  route every node's pod subnet through its address on every host again
  check   check the inventory and that every host answers ssh and has what it needs
  --mode direct runs each unit's ExecStart over ssh (detached, PID file, log file) for hosts without systemd`;

function loadInventory(file: string): Inventory {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the inventory ${file}: ${(err as Error).message}`);
  }
  return parseInventory(text, file, dirname(file));
}

const started = Date.now();
/** Progress on stderr, with the seconds since the start: slow steps show where the time went. */
const say = (line: string) =>
  process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${line}\n`);

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      inventory: { type: 'string', short: 'i' },
      mode: { type: 'string', default: 'systemd' },
      'work-dir': { type: 'string' },
      timeout: { type: 'string', default: '300' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals[0];
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    if (!values.help) process.exitCode = 2;
    return;
  }
  if (!['up', 'down', 'routes', 'check', 'join', 'remove'].includes(command))
    throw new Error(`unknown command "${command}"\n${USAGE}`);
  const nodeArg = positionals[1];
  if ((command === 'join' || command === 'remove') && !nodeArg)
    throw new Error(`${command} needs the node's name: kubit-install ${command} NODE -i INVENTORY`);
  if (!values.inventory) throw new Error(`-i INVENTORY is required\n${USAGE}`);
  const mode = values.mode;
  if (mode !== 'systemd' && mode !== 'direct')
    throw new Error(`--mode must be systemd or direct, not "${mode}"`);
  const timeout = Number(values.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0)
    throw new Error(`--timeout must be seconds > 0, not "${values.timeout}"`);
  const file = resolve(values.inventory);
  const inventory = loadInventory(file);
  const workDir = resolve(values['work-dir'] ?? join(dirname(file), '.kubit-install', inventory.clusterName));
  const repoRoot = repoRootOf(import.meta.url);
  const installMode: InstallMode = mode;
  switch (command) {
    case 'check':
      await checkHosts(inventory, installMode);
      process.stdout.write(`inventory ${file} is valid and every host is ready\n`);
      return;
    case 'up': {
      const r = await install({
        inventory,
        repoRoot,
        workDir,
        mode: installMode,
        timeoutMs: timeout * 1000,
        say,
      });
      process.stdout.write(
        [
          `Kubit is up on ${inventory.controlPlane.length + inventory.nodes.length} hosts: ${r.nodes.length} node(s) Ready.`,
          `  export KUBECONFIG=${r.adminKubeconfig}`,
          '  kubit get nodes',
          '',
        ].join('\n'),
      );
      return;
    }
    case 'join':
      await joinNode(
        { inventory, repoRoot, workDir, mode: installMode, timeoutMs: timeout * 1000, say },
        nodeArg,
      );
      process.stdout.write(`${nodeArg} joined the cluster.\n`);
      return;
    case 'remove':
      await removeNode(
        { inventory, repoRoot, workDir, mode: installMode, timeoutMs: timeout * 1000, say },
        nodeArg,
      );
      process.stdout.write(`${nodeArg} left the cluster; remove it from ${file}.\n`);
      return;
    case 'down':
      await uninstall({ inventory, repoRoot, workDir, mode: installMode, say });
      process.stdout.write('Kubit daemons stopped.\n');
      return;
    case 'routes': {
      const pki = join(workDir, 'pki');
      const admin = loadClientTls(join(pki, 'ca.crt'), join(pki, 'admin.crt'), join(pki, 'admin.key'));
      await syncRoutes(inventory, await listNodes(apiserverUrl(inventory), admin), (line) =>
        process.stdout.write(`${line}\n`),
      );
      process.stdout.write(
        "pod routes are in place on every control-plane host (kubit-net keeps the nodes')\n",
      );
      return;
    }
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`kubit-install: ${(err as Error).message}\n`);
  process.exitCode = 1;
});
