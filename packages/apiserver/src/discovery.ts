// What clients read to learn the API: /api, /apis, /api/v1, /apis/<g>/<v>,
// aggregated discovery (apidiscovery.k8s.io/v2), /version, and the OpenAPI
// documents (openapi/).
import { createHash } from 'node:crypto';
import type { KindRegistry } from './kinds/index.js';
import { groupVersion, type KindDef, type SubresourceDef } from './kinds/types.js';
import { METRICS_GROUP, METRICS_RESOURCES, METRICS_VERBS, METRICS_VERSION } from './metrics/api.js';
import { OpenApiDocuments } from './openapi/documents.js';

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** Resources served without storage (reviews). */
const REVIEW_RESOURCES = [
  {
    group: 'authorization.k8s.io',
    version: 'v1',
    resource: 'selfsubjectaccessreviews',
    kind: 'SelfSubjectAccessReview',
    singular: 'selfsubjectaccessreview',
  },
  {
    group: 'authorization.k8s.io',
    version: 'v1',
    resource: 'subjectaccessreviews',
    kind: 'SubjectAccessReview',
    singular: 'subjectaccessreview',
  },
  {
    group: 'authorization.k8s.io',
    version: 'v1',
    resource: 'selfsubjectrulesreviews',
    kind: 'SelfSubjectRulesReview',
    singular: 'selfsubjectrulesreview',
  },
  {
    group: 'authentication.k8s.io',
    version: 'v1',
    resource: 'tokenreviews',
    kind: 'TokenReview',
    singular: 'tokenreview',
  },
  {
    group: 'authentication.k8s.io',
    version: 'v1',
    resource: 'selfsubjectreviews',
    kind: 'SelfSubjectReview',
    singular: 'selfsubjectreview',
  },
];

function subresourceKind(
  def: KindDef,
  sub: SubresourceDef,
): { group: string; version: string; kind: string } {
  return sub.kind ?? { group: def.group, version: def.version, kind: def.kind };
}

export class Discovery {
  constructor(
    private readonly kinds: KindRegistry,
    private readonly serverAddress: string,
    /** Whether metrics.k8s.io/v1beta1 is served (metrics/). */
    private readonly servesMetrics = false,
  ) {
    this.openapi = new OpenApiDocuments(kinds, () => this.groupVersions());
  }

  version() {
    return {
      major: '1',
      minor: '32',
      gitVersion: 'v1.32.0-kubit',
      gitCommit: '0000000000000000000000000000000000000000',
      gitTreeState: 'clean',
      buildDate: '2026-01-01T00:00:00Z',
      goVersion: `node${process.versions.node}`,
      compiler: 'tsc',
      platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
    };
  }

  apiVersions() {
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: this.serverAddress }],
    };
  }

  private groupVersions(): { group: string; versions: string[] }[] {
    const m = this.kinds.groups();
    for (const r of REVIEW_RESOURCES) {
      const vs = m.get(r.group) ?? [];
      if (!vs.includes(r.version)) vs.push(r.version);
      m.set(r.group, vs);
    }
    if (this.servesMetrics) m.set(METRICS_GROUP, [METRICS_VERSION]);
    return [...m.entries()].filter(([g]) => g !== '').map(([group, versions]) => ({ group, versions }));
  }

  apiGroupList() {
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: this.groupVersions().map(({ group, versions }) => ({
        name: group,
        versions: versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v })),
        preferredVersion: { groupVersion: `${group}/${versions[0]}`, version: versions[0] },
      })),
    };
  }

  apiGroup(group: string) {
    const gv = this.groupVersions().find((g) => g.group === group);
    if (!gv) return undefined;
    return {
      kind: 'APIGroup',
      apiVersion: 'v1',
      name: group,
      versions: gv.versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v })),
      preferredVersion: { groupVersion: `${group}/${gv.versions[0]}`, version: gv.versions[0] },
    };
  }

  /** /api/v1 or /apis/<g>/<v>; undefined when the group/version is not served. */
  resourceList(group: string, version: string) {
    const defs = this.kinds.inGroupVersion(group, version);
    const reviews = REVIEW_RESOURCES.filter((r) => r.group === group && r.version === version);
    const metrics = this.metricsResources(group, version);
    if (defs.length === 0 && reviews.length === 0 && metrics.length === 0) return undefined;
    const resources: Record<string, unknown>[] = [];
    for (const d of defs) {
      resources.push({
        name: d.resource,
        singularName: d.singular,
        namespaced: d.namespaced,
        kind: d.kind,
        verbs: ALL_VERBS,
        ...(d.shortNames ? { shortNames: d.shortNames } : {}),
        ...(d.categories ? { categories: d.categories } : {}),
        storageVersionHash: createHash('sha256')
          .update(groupVersion(d) + d.kind)
          .digest('base64')
          .slice(0, 11),
      });
      for (const sub of d.subresources) {
        const k = subresourceKind(d, sub);
        resources.push({
          name: `${d.resource}/${sub.name}`,
          singularName: '',
          namespaced: d.namespaced,
          ...(k.group !== d.group ? { group: k.group, version: k.version } : {}),
          kind: k.kind,
          verbs: [...sub.verbs],
        });
      }
    }
    for (const r of reviews) {
      resources.push({
        name: r.resource,
        singularName: r.singular,
        namespaced: false,
        kind: r.kind,
        verbs: ['create'],
      });
    }
    for (const r of metrics) {
      resources.push({
        name: r.resource,
        singularName: r.singular,
        namespaced: r.namespaced,
        kind: r.kind,
        verbs: METRICS_VERBS,
      });
    }
    return {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: group ? `${group}/${version}` : version,
      resources,
    };
  }

  private metricsResources(group: string, version: string) {
    return this.servesMetrics && group === METRICS_GROUP && version === METRICS_VERSION
      ? METRICS_RESOURCES
      : [];
  }

  /** apidiscovery.k8s.io/v2 APIGroupDiscoveryList for /api (legacy) or /apis. */
  aggregated(legacy: boolean, apiVersion = 'apidiscovery.k8s.io/v2') {
    const groups = legacy ? [{ group: '', versions: ['v1'] }] : this.groupVersions();
    return {
      kind: 'APIGroupDiscoveryList',
      apiVersion,
      metadata: {},
      items: groups.map(({ group, versions }) => ({
        metadata: { name: group, creationTimestamp: null },
        versions: versions.map((version) => {
          const defs = this.kinds.inGroupVersion(group, version);
          const reviews = REVIEW_RESOURCES.filter((r) => r.group === group && r.version === version);
          return {
            version,
            resources: [
              ...defs.map((d) => ({
                resource: d.resource,
                responseKind: { group: d.group, version: d.version, kind: d.kind },
                scope: d.namespaced ? 'Namespaced' : 'Cluster',
                singularResource: d.singular,
                verbs: ALL_VERBS,
                ...(d.shortNames ? { shortNames: d.shortNames } : {}),
                ...(d.categories ? { categories: d.categories } : {}),
                ...(d.subresources.length > 0
                  ? {
                      subresources: d.subresources.map((sub) => ({
                        subresource: sub.name,
                        responseKind: subresourceKind(d, sub),
                        verbs: [...sub.verbs],
                      })),
                    }
                  : {}),
              })),
              ...this.metricsResources(group, version).map((r) => ({
                resource: r.resource,
                responseKind: { group, version, kind: r.kind },
                scope: r.namespaced ? 'Namespaced' : 'Cluster',
                singularResource: r.singular,
                verbs: METRICS_VERBS,
              })),
              ...reviews.map((r) => ({
                resource: r.resource,
                responseKind: { group: r.group, version: r.version, kind: r.kind },
                scope: 'Cluster',
                singularResource: r.singular,
                verbs: ['create'],
              })),
            ],
            freshness: 'Current',
          };
        }),
      })),
    };
  }

  /** The OpenAPI v2 and v3 documents of the kinds served now (openapi/documents.ts). */
  readonly openapi: OpenApiDocuments;
}
