// The kind registry: every resource the apiserver serves, by group/version/resource.

import type { ServiceAccountTokens } from '../sa-tokens.js';
import type { ServiceNetworking } from '../services/networking.js';
import { tokenSubresource } from '../subresources/token.js';
import { validatingadmissionpolicies, validatingadmissionpolicybindings } from './admissionpolicies.js';
import { mutatingwebhookconfigurations, validatingwebhookconfigurations } from './admissionregistration.js';
import { customresourcedefinitions } from './apiextensions.js';
import {
  controllerrevisions,
  daemonsets,
  deployments,
  replicasets,
  replicationcontrollers,
  statefulsets,
} from './apps.js';
import { horizontalpodautoscalers, horizontalpodautoscalersV1 } from './autoscaling.js';
import { cronjobs, jobs } from './batch.js';
import {
  clusterrolebindings,
  clusterroles,
  configmaps,
  events,
  eventsV1,
  leases,
  namespaces,
  nodes,
  rolebindings,
  roles,
  secrets,
  serviceaccounts,
} from './core.js';
import { networkpolicies } from './networking.js';
import { pods } from './pods.js';
import { podtemplates } from './podtemplates.js';
import { poddisruptionbudgets } from './policy.js';
import { limitranges, resourcequotas } from './quota.js';
import { priorityclasses } from './scheduling.js';
import { endpoints, endpointslices, serviceKind, services } from './services.js';
import {
  csistoragecapacities,
  persistentvolumeclaims,
  persistentvolumes,
  storageclasses,
} from './storage.js';
import { groupVersion, type KindDef } from './types.js';

export type { Column, KindDef, TableDef } from './types.js';
export { groupVersion } from './types.js';

export class KindRegistry {
  private readonly byPath = new Map<string, KindDef>();
  readonly all: KindDef[] = [];

  constructor(defs: KindDef[]) {
    for (const d of defs) this.add(d);
  }

  add(def: KindDef): void {
    this.all.push(def);
    this.byPath.set(`${groupVersion(def)}/${def.resource}`, def);
  }

  /** Stops serving a kind added at runtime (a deleted or changed CustomResourceDefinition's). */
  remove(def: KindDef): void {
    const i = this.all.indexOf(def);
    if (i >= 0) this.all.splice(i, 1);
    const path = `${groupVersion(def)}/${def.resource}`;
    if (this.byPath.get(path) === def) this.byPath.delete(path);
  }

  lookup(group: string, version: string, resource: string): KindDef | undefined {
    return this.byPath.get(`${group ? `${group}/` : ''}${version}/${resource}`);
  }

  /** Group → versions, in registration order (the first is preferred). */
  groups(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const d of this.all) {
      const vs = out.get(d.group) ?? [];
      if (!vs.includes(d.version)) vs.push(d.version);
      out.set(d.group, vs);
    }
    return out;
  }

  inGroupVersion(group: string, version: string): KindDef[] {
    return this.all.filter((d) => d.group === group && d.version === version);
  }

  storageResource(def: KindDef): string {
    return def.storageResource ?? def.resource;
  }
}

export interface KindOptions {
  /** With a token signer, ServiceAccounts serve serviceaccounts/<name>/token (TokenRequest). */
  serviceAccountTokens?: ServiceAccountTokens;
  /** The ranges Services' cluster IPs and node ports come from (default: Kubernetes' defaults). */
  serviceNetworking?: ServiceNetworking;
}

export function builtinKinds(options: KindOptions = {}): KindDef[] {
  const tokens = options.serviceAccountTokens;
  return [
    namespaces,
    pods,
    replicationcontrollers,
    nodes,
    events,
    configmaps,
    secrets,
    tokens ? { ...serviceaccounts, subresources: [tokenSubresource(tokens)] } : serviceaccounts,
    options.serviceNetworking ? serviceKind(options.serviceNetworking) : services,
    endpoints,
    endpointslices,
    eventsV1,
    leases,
    roles,
    clusterroles,
    rolebindings,
    clusterrolebindings,
    replicasets,
    deployments,
    daemonsets,
    statefulsets,
    controllerrevisions,
    poddisruptionbudgets,
    networkpolicies,
    jobs,
    cronjobs,
    persistentvolumes,
    persistentvolumeclaims,
    storageclasses,
    csistoragecapacities,
    validatingwebhookconfigurations,
    mutatingwebhookconfigurations,
    validatingadmissionpolicies,
    validatingadmissionpolicybindings,
    resourcequotas,
    limitranges,
    priorityclasses,
    podtemplates,
    horizontalpodautoscalers,
    horizontalpodautoscalersV1,
  ];
}

/**
 * Kinds that extend the API: CustomResourceDefinitions (their names are fixed by
 * their spec, `<plural>.<group>`, so they stay out of the suites that write every
 * built-in kind under names of their own; test/crd.test.ts covers them).
 */
export function apiExtensionKinds(): KindDef[] {
  return [customresourcedefinitions];
}
