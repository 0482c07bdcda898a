// NetworkPolicy enforcement on a node: the planner (policies, pods, namespaces →
// one nft table per node), the differ (one transaction of what changed), the
// kernel reader (restart without rewriting), and the agent that runs them.
export {
  type NetworkPolicyAgent,
  type NetworkPolicyAgentOptions,
  networkPoliciesResource,
  runNetworkPolicyAgent,
} from './agent.js';
export { deleteNetpolTableScript, netpolDiff } from './differ.js';
export { readNetpolTable } from './kernel.js';
export { emptyNetpolRuleset, type NetpolNode, planPolicies } from './planner.js';
export { NETPOL_FAMILY, type NetpolRuleset, netpolTableName } from './ruleset.js';
