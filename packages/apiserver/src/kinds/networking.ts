// networking.k8s.io/v1 NetworkPolicies: stored as written (no status, no
// controller on the control plane: each node's kubit-net enforces them),
// generation counting spec changes, and `kubectl get networkpolicy`'s columns
// (NAME, POD-SELECTOR, AGE). Defaulting and validation are @kubit/api's.
import { defaultNetworkPolicy, type LabelSelector, labelSelectorAsSelector } from '@kubit/api';
import { schemas } from '../model/schema.js';
import type { KObject } from '../storage.js';
import { age } from '../table.js';
import { type KindDef, obj } from './types.js';

/** Kubernetes prints the pod selector with FormatLabelSelector: "<none>" for the empty one. */
function podSelectorText(np: KObject): string {
  const sel = obj(np.spec).podSelector;
  if (!sel || typeof sel !== 'object') return '<none>';
  try {
    return labelSelectorAsSelector(sel as LabelSelector).toString() || '<none>';
  } catch {
    // Stored policies were validated; an unparsable selector prints as nothing rather than failing a list.
    return '<none>';
  }
}

export const networkpolicies: KindDef = {
  group: 'networking.k8s.io',
  version: 'v1',
  kind: 'NetworkPolicy',
  resource: 'networkpolicies',
  singular: 'networkpolicy',
  namespaced: true,
  shortNames: ['netpol'],
  schema: schemas.networkPolicy,
  nameRule: 'subdomain',
  subresources: [],
  generation: true,
  example: { spec: { podSelector: { matchLabels: { app: 'example' } }, policyTypes: ['Ingress'] } },
  defaults(np: KObject) {
    defaultNetworkPolicy(np as Record<string, unknown>);
  },
  table: {
    columns: [
      {
        name: 'Pod-Selector',
        type: 'string',
        description:
          'podSelector selects the pods to which this NetworkPolicy object applies; empty selects all pods of the namespace.',
        priority: 0,
      },
      { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 },
    ],
    cells(np, now) {
      return [podSelectorText(np), age(np, now)];
    },
  },
};
