// Which requests a ValidatingAdmissionPolicy's matchConstraints (and a binding's
// matchResources) select, as Kubernetes' admission/plugin/policy/matching does:
// resourceRules with resourceNames, excludeResourceRules, namespace and object
// selectors, and matchPolicy Equivalent (a rule naming another version or group
// of the same stored kind matches, and the policy sees the object in that version).
import type { LabelSelector } from '@kubit/api';
import type { KindRegistry } from '../kinds/index.js';
import type { KindDef } from '../kinds/types.js';
import type { KObject } from '../storage.js';
import { namespaceMatches, objectMatches, type Rule, ruleMatches } from './rules.js';
import type { AdmissionAttributes } from './webhooks.js';

export interface NamedRule extends Rule {
  resourceNames?: string[];
}

export interface MatchResources {
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  resourceRules?: NamedRule[];
  excludeResourceRules?: NamedRule[];
  matchPolicy?: string;
}

const labelsOf = (o: KObject | undefined) =>
  o ? ((o.metadata?.labels as Record<string, string> | undefined) ?? {}) : undefined;

function namedRuleMatches(r: NamedRule, d: KindDef, a: AdmissionAttributes): boolean {
  const attrs = {
    operation: a.operation,
    group: d.group,
    version: d.version,
    resource: d.resource,
    subresource: a.subresource,
    namespaced: d.namespaced,
  };
  if (!ruleMatches(r, attrs)) return false;
  const names = r.resourceNames ?? [];
  return names.length === 0 || names.includes(a.name);
}

const anyRule = (rules: NamedRule[] | undefined, d: KindDef, a: AdmissionAttributes) =>
  (rules ?? []).some((r) => namedRuleMatches(r, d, a));

/**
 * The kind the request is matched as, or undefined when `m` does not select it.
 * `namespaceLabels` are the labels of the request's namespace (undefined for a
 * cluster-scoped request). Without resourceRules (a binding's matchResources may
 * leave them out) every resource the selectors let through matches as itself.
 */
export function matchedBy(
  kinds: KindRegistry,
  m: MatchResources,
  a: AdmissionAttributes,
  namespaceLabels: Record<string, string> | undefined,
): KindDef | undefined {
  const objectLabels = labelsOf(a.object);
  const oldLabels = labelsOf(a.oldObject);
  if (!namespaceMatches(m.namespaceSelector, a.def, namespaceLabels, objectLabels ?? oldLabels)) return;
  if (!objectMatches(m.objectSelector, objectLabels, oldLabels)) return;
  if (anyRule(m.excludeResourceRules, a.def, a)) return;
  if (m.resourceRules === undefined || m.resourceRules.length === 0) return a.def;
  if (anyRule(m.resourceRules, a.def, a)) return a.def;
  if (m.matchPolicy === 'Exact') return;
  const storage = kinds.storageResource(a.def);
  for (const d of kinds.all) {
    if (d === a.def || kinds.storageResource(d) !== storage || d.kind !== a.def.kind) continue;
    if (anyRule(m.resourceRules, d, a)) return d;
  }
  return;
}
