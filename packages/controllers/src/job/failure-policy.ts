// A Job's podFailurePolicy: which rule a failed pod matches, in order (Kubernetes'
// pod_failure_policy.go semantics). onExitCodes looks at terminated containers
// with a non-zero exit code (containers first, then init containers);
// onPodConditions at the pod's conditions. An unmatched failure counts.
import type {
  ContainerStatus,
  Pod,
  PodFailurePolicy,
  PodFailurePolicyOnExitCodesRequirement,
} from '@kubit/api';

export type FailurePolicyAction = 'FailJob' | 'FailIndex' | 'Ignore' | 'Count';

export interface FailurePolicyMatch {
  action: FailurePolicyAction;
  /** Whether the failure counts toward backoffLimit (and backoffLimitPerIndex). */
  counts: boolean;
  /** For FailJob: the message of the Job's FailureTarget and Failed conditions. */
  message?: string;
}

const COUNT: FailurePolicyMatch = { action: 'Count', counts: true };

export function matchPodFailurePolicy(policy: PodFailurePolicy | undefined, pod: Pod): FailurePolicyMatch {
  if (!policy) return COUNT;
  const where = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  for (const [index, rule] of (policy.rules ?? []).entries()) {
    let message: string | undefined;
    if (rule.onExitCodes) {
      const c = matchOnExitCodes(pod, rule.onExitCodes);
      if (!c) continue;
      message = `Container ${c.name} for pod ${where} failed with exit code ${c.state?.terminated?.exitCode} matching ${rule.action} rule at index ${index}`;
    } else if (rule.onPodConditions) {
      const type = matchOnPodConditions(pod, rule.onPodConditions);
      if (type === undefined) continue;
      message = `Pod ${where} has condition ${type} matching ${rule.action} rule at index ${index}`;
    } else continue;
    switch (rule.action) {
      case 'Ignore':
        return { action: 'Ignore', counts: false };
      case 'FailIndex':
        return { action: 'FailIndex', counts: true };
      case 'Count':
        return COUNT;
      case 'FailJob':
        return { action: 'FailJob', counts: true, message };
    }
    // An action validation should have refused: the rule matches nothing.
  }
  return COUNT;
}

function matchOnExitCodes(
  pod: Pod,
  req: PodFailurePolicyOnExitCodesRequirement,
): ContainerStatus | undefined {
  return (
    firstMatching(pod.status?.containerStatuses, req) ?? firstMatching(pod.status?.initContainerStatuses, req)
  );
}

function firstMatching(
  statuses: readonly ContainerStatus[] | undefined,
  req: PodFailurePolicyOnExitCodesRequirement,
): ContainerStatus | undefined {
  for (const s of statuses ?? []) {
    const code = s.state?.terminated?.exitCode;
    if (code === undefined || code === 0) continue;
    if (req.containerName !== undefined && req.containerName !== s.name) continue;
    const listed = (req.values ?? []).includes(code);
    if (req.operator === 'In' ? listed : req.operator === 'NotIn' ? !listed : false) return s;
  }
  return undefined;
}

function matchOnPodConditions(
  pod: Pod,
  patterns: readonly { type: string; status: string }[],
): string | undefined {
  for (const c of pod.status?.conditions ?? []) {
    if (patterns.some((p) => p.type === c.type && p.status === c.status)) return c.type;
  }
  return undefined;
}
