// The VXLAN / host-gw overlay between nodes: the planner (Nodes → kernel objects),
// the kernel reader and batch runner (iproute2), the differ, and the agent.

export {
  type OverlayAgent,
  type OverlayAgentOptions,
  type OverlaySyncResult,
  runOverlayAgent,
} from './agent.js';
export { cleanupScripts, type OverlayScripts, overlayDiff } from './differ.js';
export { Iproute, IprouteError, readOverlayKernel } from './kernel.js';
export {
  directlyConnected,
  internalIP,
  type OverlayPlan,
  type OverlayProblem,
  type PeerPlan,
  type PlanInput,
  parseBackendData,
  peerUnderlay,
  planOverlay,
  vtepMac,
} from './planner.js';
export * from './types.js';
