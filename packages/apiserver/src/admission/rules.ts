// Which webhooks a request goes to: a webhook's rules (operation, group,
// version, resource and subresource, scope) and its namespace and object
// selectors, as Kubernetes' admission/plugin/webhook/predicates decide. Pure:
// the namespace's labels are given by the caller.
import { type LabelSelector, labelSelectorAsSelector } from '@kubit/api';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** One admissionregistration/v1 RuleWithOperations (defaults applied). */
export interface Rule {
  operations?: string[];
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  scope?: string;
}

/** What the rules look at in a request. */
export interface RuleAttributes {
  operation: Operation;
  group: string;
  version: string;
  resource: string;
  /** '' for the object itself. */
  subresource: string;
  /** Whether the resource is namespaced (a subresource takes its parent's scope). */
  namespaced: boolean;
}

const has = (list: string[] | undefined, v: string) => (list ?? []).some((x) => x === '*' || x === v);

/** Whether `resources` ("pods", "pods/status", "*", "*\/status", "pods/*", "*\/*") names resource/subresource. */
function resourceMatches(resources: string[] | undefined, resource: string, subresource: string): boolean {
  for (const r of resources ?? []) {
    const [res, sub] = r.split('/', 2);
    if (sub === undefined) {
      // "pods" and "*" are the objects themselves, never their subresources.
      if (subresource === '' && (res === '*' || res === resource)) return true;
      continue;
    }
    if ((res === '*' || res === resource) && (sub === '*' || sub === subresource)) return true;
  }
  return false;
}

export function ruleMatches(rule: Rule, a: RuleAttributes): boolean {
  if (!has(rule.operations, a.operation)) return false;
  if (!has(rule.apiGroups, a.group)) return false;
  if (!has(rule.apiVersions, a.version)) return false;
  if (!resourceMatches(rule.resources, a.resource, a.subresource)) return false;
  const scope = rule.scope ?? '*';
  if (scope === 'Cluster' && a.namespaced) return false;
  if (scope === 'Namespaced' && !a.namespaced) return false;
  return true;
}

export function rulesMatch(rules: Rule[] | undefined, a: RuleAttributes): boolean {
  return (rules ?? []).some((r) => ruleMatches(r, a));
}

type Labels = Record<string, string>;

/** A selector that fails to compile matches nothing (the configuration's validation keeps such out). */
function selects(sel: LabelSelector | undefined, labels: Labels | undefined): boolean {
  if (sel === undefined) return true;
  try {
    return labelSelectorAsSelector(sel).matches(labels ?? {});
  } catch {
    return false;
  }
}

/**
 * namespaceSelector: a namespaced object is matched by its namespace's labels; a Namespace
 * by its own; any other cluster-scoped object always matches.
 */
export function namespaceMatches(
  selector: LabelSelector | undefined,
  a: { namespaced: boolean; group: string; resource: string },
  namespaceLabels: Labels | undefined,
  objectLabels: Labels | undefined,
): boolean {
  if (a.group === '' && a.resource === 'namespaces') return selects(selector, objectLabels);
  if (!a.namespaced) return true;
  return selects(selector, namespaceLabels);
}

/** An empty selector ({}) matches everything, even a request without objects. */
function emptySelector(sel: LabelSelector | undefined): boolean {
  return (
    sel === undefined ||
    (Object.keys(sel.matchLabels ?? {}).length === 0 && (sel.matchExpressions ?? []).length === 0)
  );
}

/**
 * objectSelector: the new object's labels or the old one's (undefined: there is no such
 * object in the request; an object without labels is `{}`).
 */
export function objectMatches(
  selector: LabelSelector | undefined,
  objectLabels: Labels | undefined,
  oldObjectLabels: Labels | undefined,
): boolean {
  if (emptySelector(selector)) return true;
  if (objectLabels !== undefined && selects(selector, objectLabels)) return true;
  return oldObjectLabels !== undefined && selects(selector, oldObjectLabels);
}
