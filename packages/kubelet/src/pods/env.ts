// A container's environment: literal values, valueFrom (fieldRef,
// resourceFieldRef, configMapKeyRef, secretKeyRef), envFrom, and $(VAR)
// references to variables defined before.
import { toMilli, toNumber } from '@kubit/api';
import type { Container, EnvVar, Pod } from 'kubernetes-types/core/v1.js';
import type { ObjectSource } from './sinks.js';

/** A container cannot be configured (Kubernetes' waiting reason CreateContainerConfigError). */
export class ContainerConfigError extends Error {
  override name = 'ContainerConfigError';
}

export interface PodNetworkInfo {
  podIP: string;
  hostIP: string;
}

export function fieldValue(pod: Pod, path: string, net: PodNetworkInfo): string {
  const meta = pod.metadata ?? {};
  const mapRef = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (mapRef) {
    const map = mapRef[1] === 'labels' ? meta.labels : meta.annotations;
    return map?.[mapRef[2]] ?? '';
  }
  switch (path) {
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? 'default';
    case 'metadata.uid':
      return meta.uid ?? '';
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.hostIP':
      return net.hostIP;
    case 'status.podIP':
    case 'status.podIPs':
      return net.podIP;
    default:
      throw new ContainerConfigError(`unsupported fieldRef fieldPath "${path}"`);
  }
}

export function resourceValue(
  container: Container,
  resource: string,
  divisor: string | number | undefined,
): string {
  const [kind, name] = resource.split('.') as [string, string];
  const source = kind === 'limits' ? container.resources?.limits : container.resources?.requests;
  const raw = source?.[name];
  if (raw === undefined) return '0';
  if (name === 'cpu') {
    const div = divisor ? toMilli(divisor) : 1000;
    return String(Math.ceil(toMilli(raw) / div));
  }
  const div = divisor ? toNumber(divisor) : 1;
  return String(Math.ceil(toNumber(raw) / div));
}

/** Expands $(NAME) from `vars`; $$ is a literal $, unknown references stay as written. */
export function expandReferences(value: string, vars: Map<string, string>): string {
  return value.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) => {
    if (m === '$$') return '$';
    return name !== undefined && vars.has(name) ? (vars.get(name) as string) : m;
  });
}

function decodeSecret(data: Record<string, string> | undefined, key: string): string | undefined {
  const v = data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
}

async function valueFrom(
  env: EnvVar,
  pod: Pod,
  container: Container,
  objects: ObjectSource,
  net: PodNetworkInfo,
): Promise<string | undefined> {
  const ns = pod.metadata?.namespace ?? 'default';
  const from = env.valueFrom;
  if (!from) return undefined;
  if (from.fieldRef) return fieldValue(pod, from.fieldRef.fieldPath, net);
  if (from.resourceFieldRef) {
    return resourceValue(container, from.resourceFieldRef.resource, from.resourceFieldRef.divisor);
  }
  if (from.configMapKeyRef) {
    const ref = from.configMapKeyRef;
    const cm = await objects.configMap(ns, ref.name ?? '');
    const v =
      cm?.data?.[ref.key] ??
      (cm?.binaryData?.[ref.key] !== undefined ? decodeSecret(cm.binaryData, ref.key) : undefined);
    if (v === undefined && !ref.optional) {
      throw new ContainerConfigError(
        cm
          ? `couldn't find key ${ref.key} in ConfigMap ${ns}/${ref.name}`
          : `configmap "${ref.name}" not found`,
      );
    }
    return v;
  }
  if (from.secretKeyRef) {
    const ref = from.secretKeyRef;
    const secret = await objects.secret(ns, ref.name ?? '');
    const v = decodeSecret(secret?.data, ref.key) ?? secret?.stringData?.[ref.key];
    if (v === undefined && !ref.optional) {
      throw new ContainerConfigError(
        secret
          ? `couldn't find key ${ref.key} in Secret ${ns}/${ref.name}`
          : `secret "${ref.name}" not found`,
      );
    }
    return v;
  }
  return undefined;
}

/**
 * The container's environment in order, as KEY=value pairs for the CRI: envFrom,
 * then env (which may refer to the Service variables), then the Service variables
 * (service-env.ts) the container did not set itself, as Kubernetes orders them.
 */
export async function containerEnv(
  pod: Pod,
  container: Container,
  objects: ObjectSource,
  net: PodNetworkInfo,
  serviceVars: ReadonlyMap<string, string> = new Map(),
): Promise<{ key: string; value: string }[]> {
  const ns = pod.metadata?.namespace ?? 'default';
  const own = new Map<string, string>();
  // $(VAR) sees the container's own variables first, then the Services'.
  const scope = new Map(serviceVars);
  const set = (k: string, v: string) => {
    own.set(k, v);
    scope.set(k, v);
  };
  for (const src of container.envFrom ?? []) {
    const prefix = src.prefix ?? '';
    if (src.configMapRef) {
      const cm = await objects.configMap(ns, src.configMapRef.name ?? '');
      if (!cm && !src.configMapRef.optional)
        throw new ContainerConfigError(`configmap "${src.configMapRef.name}" not found`);
      for (const [k, v] of Object.entries(cm?.data ?? {})) set(prefix + k, v);
    }
    if (src.secretRef) {
      const s = await objects.secret(ns, src.secretRef.name ?? '');
      if (!s && !src.secretRef.optional)
        throw new ContainerConfigError(`secret "${src.secretRef.name}" not found`);
      for (const k of Object.keys(s?.data ?? {})) set(prefix + k, decodeSecret(s?.data, k) ?? '');
    }
  }
  for (const env of container.env ?? []) {
    if (env.valueFrom) {
      const v = await valueFrom(env, pod, container, objects, net);
      if (v !== undefined) set(env.name, v);
    } else {
      set(env.name, expandReferences(env.value ?? '', scope));
    }
  }
  for (const [k, v] of serviceVars) if (!own.has(k)) own.set(k, v);
  return [...own].map(([key, value]) => ({ key, value }));
}
