// The controllers kubit-controller-manager knows, and Kubernetes' --controllers syntax.
// Kept apart from the controllers so flag checking stays cheap.

export const KNOWN_CONTROLLERS = [
  'replicaset',
  'replicationcontroller',
  'deployment',
  'nodeipam',
  'nodelifecycle',
  'garbagecollector',
  'namespace',
  'podgc',
  'serviceaccount',
  'root-ca-cert-publisher',
  'endpoint',
  'endpointslice',
  'endpointslicemirroring',
  'service-lb-ipam',
  'disruption',
  'job',
  'cronjob',
  'ttl-after-finished',
  'daemonset',
  'statefulset',
  'persistentvolume-binder',
  'persistentvolume-expander',
  'pvc-protection',
  'pv-protection',
  'ephemeral-volume',
  'resourcequota',
  'horizontalpodautoscaling',
] as const;
export type ControllerName = (typeof KNOWN_CONTROLLERS)[number];

/**
 * Resolves --controllers: "*" is every controller on by default, "foo" turns one
 * on, "-foo" turns one off (e.g. "*,-nodeipam"). An unknown name is an error.
 */
export function enabledControllers(spec: readonly string[]): Set<ControllerName> {
  const known = new Set<string>(KNOWN_CONTROLLERS);
  const on = new Set<ControllerName>();
  const off = new Set<ControllerName>();
  let star = false;
  for (const item of spec.length ? spec : ['*']) {
    if (item === '*') {
      star = true;
      continue;
    }
    const name = item.startsWith('-') ? item.slice(1) : item;
    if (!known.has(name)) {
      throw new Error(`"${name}" is not in the list of known controllers (${KNOWN_CONTROLLERS.join(', ')})`);
    }
    (item.startsWith('-') ? off : on).add(name as ControllerName);
  }
  const out = new Set<ControllerName>(star ? KNOWN_CONTROLLERS : []);
  for (const n of on) out.add(n);
  for (const n of off) out.delete(n);
  return out;
}
