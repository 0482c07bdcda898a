// The overlay differ: what the kernel holds → what the planner wants, as one
// `ip -batch` script and one `bridge -batch` script (FDB entries need the
// device, so the bridge script runs second). Only differences are written: a
// restart that finds everything right writes nothing.
import {
  type DesiredDevice,
  type KernelDevice,
  type KernelState,
  type OverlayRoute,
  type OverlayState,
  ROUTE_PROTO,
} from './types.js';

export interface OverlayScripts {
  ip: string[];
  bridge: string[];
}

function sameDeviceIdentity(k: KernelDevice, d: DesiredDevice): boolean {
  // VNI, local address, port and learning cannot all be changed in place: such a device is made again.
  return (
    k.kind === 'vxlan' &&
    k.vni === d.vni &&
    k.local === d.local &&
    k.port === d.port &&
    k.learning === false &&
    k.mac === d.mac
  );
}

function sameRoute(a: OverlayRoute, b: OverlayRoute): boolean {
  return a.dst === b.dst && a.via === b.via && (a.dev ?? '') === (b.dev ?? '');
}

export function routeCommand(verb: 'replace' | 'del', r: OverlayRoute): string {
  if (verb === 'del') return `route del ${r.dst} proto ${ROUTE_PROTO}`;
  const dev = r.dev ? ` dev ${r.dev} onlink` : '';
  return `route replace ${r.dst} via ${r.via}${dev} proto ${ROUTE_PROTO}`;
}

export function overlayDiff(current: KernelState, want: OverlayState, deviceName: string): OverlayScripts {
  const ip: string[] = [];
  const bridge: string[] = [];
  let dev = current.device;
  const d = want.device;
  // A device of ours that is wrong in what cannot change (or not wanted) goes, with its entries.
  let entriesGone = false;
  if (dev && (!d || !sameDeviceIdentity(dev, d))) {
    ip.push(`link del ${deviceName}`);
    dev = undefined;
    entriesGone = true;
  }
  if (d) {
    if (!dev) {
      ip.push(
        `link add ${d.name} address ${d.mac} type vxlan id ${d.vni} local ${d.local} dstport ${d.port} nolearning`,
      );
      entriesGone = true;
    }
    if (!dev || dev.mtu !== d.mtu || !dev.up) ip.push(`link set ${d.name} mtu ${d.mtu} up`);
    const have = dev?.addresses ?? [];
    for (const a of have) if (a !== d.address) ip.push(`addr del ${a} dev ${d.name}`);
    if (!have.includes(d.address)) ip.push(`addr add ${d.address} dev ${d.name}`);
  }
  const curNeighs = entriesGone ? new Map() : current.neighs;
  const curFdb = entriesGone ? new Map() : current.fdb;
  // Routes through the device vanish with it; host-gw routes stay.
  const curRoutes = new Map([...current.routes].filter(([, r]) => !(entriesGone && r.dev === deviceName)));

  for (const [key, n] of curNeighs) if (!want.neighs.has(key)) ip.push(`neigh del ${n.ip} dev ${deviceName}`);
  for (const [key, n] of want.neighs) {
    if (curNeighs.get(key)?.mac !== n.mac)
      ip.push(`neigh replace ${n.ip} lladdr ${n.mac} dev ${deviceName} nud permanent`);
  }
  for (const [key, r] of curRoutes) if (!want.routes.has(key)) ip.push(routeCommand('del', r));
  for (const [key, r] of want.routes) {
    const have = curRoutes.get(key);
    if (!have || !sameRoute(have, r)) ip.push(routeCommand('replace', r));
  }
  for (const [key, f] of curFdb) {
    if (!want.fdb.has(key)) bridge.push(`fdb del ${f.mac} dev ${deviceName} dst ${f.dst} self`);
  }
  for (const [key, f] of want.fdb) {
    const have = curFdb.get(key);
    if (have?.dst === f.dst) continue;
    // `replace` moves the MAC's one remote to the new underlay address.
    bridge.push(`fdb replace ${f.mac} dev ${deviceName} dst ${f.dst} self permanent`);
  }
  return { ip, bridge };
}

/** Everything kubit-net owns, removed (--cleanup): the device takes its neighbour and FDB entries with it. */
export function cleanupScripts(current: KernelState, deviceName: string): OverlayScripts {
  const ip: string[] = [];
  if (current.device) ip.push(`link del ${deviceName}`);
  for (const r of current.routes.values())
    if (r.dev !== deviceName || !current.device) ip.push(routeCommand('del', r));
  return { ip, bridge: [] };
}
