// @kubit/proxy: kubit-proxy's rule planner, differ and nft runner (the daemon is main.ts).
export { diffScript, sameRuleset } from './differ.js';
export { hashAndTruncate } from './names.js';
export { NftError, NftRunner } from './nft.js';
export { DEFAULT_AFFINITY_TIMEOUT_SECONDS, type PlannerOptions, planRuleset, skipReason } from './planner.js';
export { deleteTableScript, fullScript, type Ruleset, TABLE_FAMILY, TABLE_NAME } from './ruleset.js';
