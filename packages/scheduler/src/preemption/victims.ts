// Choosing what to preempt, as Kubernetes' DefaultPreemption chooses (pure: no
// cache, no API). On one node: take away every pod of lower priority than the
// preemptor; if it still does not fit, the node cannot help. Otherwise give the
// pods back one at a time, most important first (higher priority, then the one
// running longer), those whose PodDisruptionBudget would be broken before the
// others, keeping each that leaves the preemptor fitting: the rest are the victims.
// Between nodes: fewest budget violations, then the lowest highest-victim
// priority, the lowest sum of priorities, the fewest victims, the latest start of
// the most important victims, and the first node.
import { compileLabelSelector, type Selector } from '../labels.js';
import type { PodInfo } from '../pod-info.js';
import type { LabelSelector } from '../types.js';

/** What victim selection reads of a PodDisruptionBudget. */
export interface DisruptionBudget {
  namespace: string;
  selector?: LabelSelector;
  /** status.disruptionsAllowed */
  disruptionsAllowed: number;
  /** status.disruptedPods: names already counted against the budget. */
  disruptedPods: ReadonlySet<string>;
}

export interface NodeVictims {
  node: string;
  /** Most important first. */
  victims: PodInfo[];
  /** How many of them break a budget. */
  pdbViolations: number;
}

/** The start time of a pod in ms, or +Infinity when it has not started (least important among equals). */
export function startTimeOf(p: PodInfo): number {
  const t = p.pod.status?.startTime;
  const ms = t ? Date.parse(String(t)) : Number.NaN;
  return Number.isNaN(ms) ? Number.POSITIVE_INFINITY : ms;
}

/** Kubernetes' MoreImportantPod: higher priority, then the one that started earlier. */
export function moreImportant(a: PodInfo, b: PodInfo): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  return startTimeOf(a) - startTimeOf(b);
}

interface CompiledBudget {
  budget: DisruptionBudget;
  selector: Selector;
}

/**
 * Splits pods (in their order) into those whose removal would take a matching budget
 * below zero and the others, counting each removal against every budget it matches
 * (Kubernetes' filterPodsWithPDBViolation). A budget with an empty selector matches nothing.
 */
export function splitByBudgetViolation(
  pods: readonly PodInfo[],
  budgets: readonly DisruptionBudget[],
): { violating: PodInfo[]; nonViolating: PodInfo[] } {
  const compiled: CompiledBudget[] = [];
  for (const b of budgets) {
    let selector: Selector;
    try {
      selector = compileLabelSelector(b.selector);
    } catch {
      continue; // a selector the apiserver would not have taken matches nothing
    }
    if (!selector.empty) compiled.push({ budget: b, selector });
  }
  const allowed = compiled.map((c) => c.budget.disruptionsAllowed);
  const violating: PodInfo[] = [];
  const nonViolating: PodInfo[] = [];
  for (const p of pods) {
    let breaks = false;
    compiled.forEach((c, i) => {
      if (c.budget.namespace !== p.namespace || !c.selector.matches(p.labels)) return;
      // Already being disrupted: the budget has counted it.
      if (c.budget.disruptedPods.has(p.name)) return;
      allowed[i]--;
      if (allowed[i] < 0) breaks = true;
    });
    (breaks ? violating : nonViolating).push(p);
  }
  return { violating, nonViolating };
}

/**
 * The victims on one node, or undefined when removing every lower-priority pod still
 * leaves no room. `fits(without)` says whether the preemptor fits on the node with the
 * pods in `without` taken away.
 */
export function selectVictimsOnNode(
  node: string,
  preemptor: PodInfo,
  podsOnNode: readonly PodInfo[],
  budgets: readonly DisruptionBudget[],
  fits: (without: ReadonlySet<string>) => boolean,
): NodeVictims | undefined {
  const potential = podsOnNode.filter((p) => p.priority < preemptor.priority);
  if (potential.length === 0) return undefined;
  const removed = new Set(potential.map((p) => p.key));
  if (!fits(removed)) return undefined;
  potential.sort(moreImportant);
  const { violating, nonViolating } = splitByBudgetViolation(potential, budgets);
  const victims: PodInfo[] = [];
  let pdbViolations = 0;
  const reprieve = (p: PodInfo): boolean => {
    removed.delete(p.key);
    if (fits(removed)) return true;
    removed.add(p.key);
    victims.push(p);
    return false;
  };
  for (const p of violating) if (!reprieve(p)) pdbViolations++;
  for (const p of nonViolating) reprieve(p);
  victims.sort(moreImportant);
  return { node, victims, pdbViolations };
}

/** Kubernetes' GetEarliestPodStartTime: the earliest start among the highest-priority victims. */
function earliestStartOfMostImportant(c: NodeVictims): number {
  if (c.victims.length === 0) return Number.NEGATIVE_INFINITY;
  const top = c.victims[0].priority;
  let earliest = Number.POSITIVE_INFINITY;
  for (const v of c.victims) if (v.priority === top) earliest = Math.min(earliest, startTimeOf(v));
  return earliest;
}

// Sums are made positive as Kubernetes makes them (priority + MaxInt32 + 1), so a
// victim of negative priority still adds to the cost.
const PRIORITY_OFFSET = 2 ** 31;

/** Kubernetes' pickOneNodeForPreemption over the candidates, in order; undefined when there are none. */
export function pickNode(candidates: readonly NodeVictims[]): NodeVictims | undefined {
  const criteria: ((c: NodeVictims) => number)[] = [
    (c) => -c.pdbViolations,
    (c) => (c.victims.length === 0 ? Number.POSITIVE_INFINITY : -c.victims[0].priority),
    (c) => -c.victims.reduce((s, v) => s + v.priority + PRIORITY_OFFSET, 0),
    (c) => -c.victims.length,
    earliestStartOfMostImportant,
  ];
  let left = [...candidates];
  for (const score of criteria) {
    if (left.length <= 1) break;
    const scores = left.map(score);
    const best = Math.max(...scores);
    left = left.filter((_, i) => scores[i] === best);
  }
  return left[0];
}
