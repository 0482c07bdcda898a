#!/usr/bin/env node
// kubit-net: the node's pod network agent. Programs the overlay to every other
// node's pods (host-gw routes, or Linux VXLAN in the manner of flannel's vxlan
// backend), publishes this node's tunnel endpoint on its Node, and enforces
// NetworkPolicy for this node's pods with nftables.
import { intArg, runMain, StartupError } from '@kubit/daemon';
import { Command, InvalidArgumentError, Option } from 'commander';
import { runCleanup, runNetDaemon } from './daemon.js';
import { netpolTableName } from './netpol/ruleset.js';
import { OVERLAY_MODES, type OverlayMode } from './overlay/types.js';

function boolArg(value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new InvalidArgumentError(`"${value}" is not a boolean (true or false).`);
}

function bindAddressArg(value: string): { host: string; port: number } | undefined {
  if (value === '') return undefined;
  const m = /^(.*):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[2]) : Number.NaN;
  if (!m || port > 65535)
    throw new InvalidArgumentError(`"${value}" is not host:port (example: 0.0.0.0:10263).`);
  return { host: m[1] === '' ? '0.0.0.0' : m[1], port };
}

function ipv4Arg(value: string): string {
  const parts = value.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255))
    throw new InvalidArgumentError(`"${value}" is not an IPv4 address.`);
  return value;
}

function deviceArg(value: string): string {
  // Linux interface names: at most 15 bytes, no '/', no whitespace.
  if (!/^[A-Za-z0-9_.-]{1,15}$/.test(value))
    throw new InvalidArgumentError(`"${value}" is not an interface name (1–15 of A-Z a-z 0-9 _ . -).`);
  return value;
}

/** Kubernetes' --v verbosity onto pino levels: 4 and up is debug. */
function levelOf(v: number | undefined, level: string | undefined): string | undefined {
  if (level) return level;
  if (v === undefined) return undefined;
  return v >= 4 ? 'debug' : 'info';
}

const program = new Command('kubit-net')
  .description(
    "Kubit's pod network agent: routes to every other node's pods (host-gw or VXLAN), this node's tunnel " +
      'endpoint on its Node, and NetworkPolicy for its pods (nftables).',
  )
  .option('--kubeconfig <file>', 'kubeconfig with the apiserver address and credentials (required)')
  .option('--hostname-override <name>', "this node's name, as its Node object is named (required)")
  .option(
    '--overlay-mode <mode>',
    'host-gw | vxlan | auto (host-gw where a peer is on a connected subnet, else vxlan)',
    'host-gw',
  )
  .option(
    '--underlay-address <ip>',
    "the address tunnels and routes use (default: the Node's InternalIP)",
    ipv4Arg,
  )
  .option('--vxlan-id <n>', 'the VXLAN network identifier (VNI)', intArg(1, 16_777_215), 1)
  .option('--vxlan-port <n>', 'the VXLAN UDP port (Linux and flannel use 8472)', intArg(1, 65_535), 8472)
  .option('--vxlan-device <name>', 'the VXLAN device kubit-net owns', deviceArg, 'kubit.1')
  .addOption(
    new Option('--network-policy [bool]', "enforce NetworkPolicy for this node's pods (nftables)")
      .argParser(boolArg)
      .default(true),
  )
  .addOption(
    new Option(
      '--healthz-bind-address <host:port>',
      'where /healthz, /livez, /readyz and /metrics are served ("" for nowhere)',
    )
      .argParser(bindAddressArg)
      .default({ host: '0.0.0.0', port: 10263 }, '0.0.0.0:10263'),
  )
  .option(
    '--nft-table <name>',
    "its NetworkPolicy nft table (family inet; default kubit-netpol-<hash of the node's name>): nodes of several clusters sharing one network namespace each need their own",
  )
  .option(
    '--cleanup',
    "remove everything this node's kubit-net owns (device, routes, neighbours, FDB, netpol table) and exit",
    false,
  )
  .option('--v <level>', 'log verbosity (4 and up: debug)', intArg(0, 10))
  .option('--log-level <level>', 'debug, info, warn or error (overrides --v)')
  .action(async (o) => {
    const logLevel = levelOf(o.v, o.logLevel);
    const nodeName = String(o.hostnameOverride ?? '')
      .trim()
      .toLowerCase();
    if (!nodeName)
      throw new StartupError('--hostname-override is required (the name of this node’s Node object)');
    const netpolTable = String(o.nftTable ?? netpolTableName(nodeName));
    if (!/^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(netpolTable)) {
      throw new StartupError(
        `--nft-table "${netpolTable}" must start with a letter and hold at most 64 letters, digits, "-" or "_"`,
      );
    }
    if (o.cleanup) {
      await runCleanup(nodeName, o.vxlanDevice, netpolTable, logLevel);
      return;
    }
    if (!OVERLAY_MODES.includes(o.overlayMode)) {
      process.stderr.write(
        `kubit-net: unknown --overlay-mode "${o.overlayMode}": use host-gw, vxlan or auto\n`,
      );
      process.exit(2);
    }
    if (!o.kubeconfig) throw new StartupError('--kubeconfig is required');
    await runNetDaemon({
      kubeconfig: o.kubeconfig,
      nodeName,
      overlay: {
        mode: o.overlayMode as OverlayMode,
        vni: o.vxlanId,
        port: o.vxlanPort,
        device: o.vxlanDevice,
      },
      underlayAddress: o.underlayAddress,
      networkPolicy: o.networkPolicy,
      netpolTable,
      healthz: o.healthzBindAddress,
      logLevel,
    });
  });

await runMain(program);
