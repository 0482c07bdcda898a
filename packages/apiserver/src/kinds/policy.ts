// policy/v1 PodDisruptionBudgets: status kept apart from spec (the disruption
// controller and the eviction subresource write it), generation counting spec
// changes, and the columns of `kubectl get pdb`. Validation (minAvailable and
// maxUnavailable exclusive, int or percentage, the selector) is @kubit/api's.
import { schemas } from '../model/schema.js';
import type { KObject } from '../storage.js';
import { statusSubresource } from '../subresources/status.js';
import { age } from '../table.js';
import { type KindDef, obj } from './types.js';

/** A new budget's status: Kubernetes' zero status, whose counts have no omitempty. */
export function emptyBudgetStatus(): Record<string, unknown> {
  return { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 };
}

const intOrString = (v: unknown): string =>
  typeof v === 'number' || typeof v === 'string' ? String(v) : 'N/A';

export const poddisruptionbudgets: KindDef = {
  group: 'policy',
  version: 'v1',
  kind: 'PodDisruptionBudget',
  resource: 'poddisruptionbudgets',
  singular: 'poddisruptionbudget',
  namespaced: true,
  shortNames: ['pdb'],
  schema: schemas.podDisruptionBudget,
  nameRule: 'subdomain',
  subresources: [statusSubresource],
  generation: true,
  example: { spec: { minAvailable: 1, selector: { matchLabels: { app: 'example' } } } },
  prepareForCreate(pdb: KObject) {
    pdb.status = emptyBudgetStatus();
  },
  prepareForUpdate(pdb: KObject, old: KObject) {
    pdb.status = old.status;
  },
  prepareForStatusUpdate(pdb: KObject, old: KObject) {
    pdb.spec = old.spec;
  },
  table: {
    columns: [
      {
        name: 'Min Available',
        type: 'string',
        description: 'The minimum number of pods that must be available.',
        priority: 0,
      },
      {
        name: 'Max Unavailable',
        type: 'string',
        description: 'The maximum number of pods that may be unavailable.',
        priority: 0,
      },
      {
        name: 'Allowed Disruptions',
        type: 'integer',
        description: 'Calculated number of pods that may be disrupted at this time.',
        priority: 0,
      },
      { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 },
    ],
    cells(pdb, now) {
      const spec = obj(pdb.spec);
      const allowed = obj(pdb.status).disruptionsAllowed;
      return [
        intOrString(spec.minAvailable),
        intOrString(spec.maxUnavailable),
        typeof allowed === 'number' ? allowed : 0,
        age(pdb, now),
      ];
    },
  },
};
