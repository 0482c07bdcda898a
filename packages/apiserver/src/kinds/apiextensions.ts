// apiextensions.k8s.io/v1 CustomResourceDefinitions, cluster-scoped with a
// status the apiserver itself writes (crd/serving.ts turns each one into kinds
// it serves). Validation and defaulting are @kubit/api's (validation/crd.ts).
import { CRD_CLEANUP_FINALIZER, defaultCustomResourceDefinition } from '@kubit/api';
import { objectMeta, S } from '../model/schema.js';
import type { KObject } from '../storage.js';
import { statusSubresource } from '../subresources/status.js';
import { arr, type KindDef, str } from './types.js';

export const customresourcedefinitions: KindDef = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  resource: 'customresourcedefinitions',
  singular: 'customresourcedefinition',
  namespaced: false,
  shortNames: ['crd', 'crds'],
  categories: ['api-extensions'],
  // The spec is a JSONSchemaProps tree; its shape is checked by the CRD validation.
  schema: S.obj({ apiVersion: S.str, kind: S.str, metadata: objectMeta, spec: S.any, status: S.any }),
  nameRule: 'subdomain',
  subresources: [statusSubresource],
  generation: true,
  example: {
    metadata: { name: 'examples.kubit.example.com' },
    spec: {
      group: 'kubit.example.com',
      scope: 'Namespaced',
      names: { plural: 'examples', singular: 'example', kind: 'Example' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  },
  defaults(crd: KObject) {
    defaultCustomResourceDefinition(crd as Record<string, unknown>);
  },
  prepareForCreate(crd: KObject) {
    // Its objects are removed before the CRD itself (crd/serving.ts clears the finalizer).
    const m = crd.metadata ?? {};
    const fins = arr(m.finalizers).map(str);
    if (!fins.includes(CRD_CLEANUP_FINALIZER)) m.finalizers = [...fins, CRD_CLEANUP_FINALIZER];
    crd.metadata = m;
    crd.status = { conditions: [], acceptedNames: { plural: '', kind: '' }, storedVersions: [] };
  },
  prepareForUpdate(crd: KObject, old: KObject) {
    crd.status = old.status;
  },
  prepareForStatusUpdate(crd: KObject, old: KObject) {
    crd.spec = old.spec;
  },
  table: {
    columns: [{ name: 'Created At', type: 'date', description: 'CreationTimestamp', priority: 0 }],
    cells: (crd) => [crd.metadata?.creationTimestamp ?? ''],
  },
};
