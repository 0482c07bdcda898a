// Majority arithmetic over the voter set. Learners never appear here: they
// receive the log but neither vote nor count towards commitment.

export type VoteResult = 'won' | 'lost' | 'pending';

/**
 * The highest index replicated on a majority of `voters`, given each voter's
 * match index. With no voters nothing can be committed (returns 0).
 */
export function majorityIndex(voters: ReadonlySet<string>, matchOf: (id: string) => number): number {
  const n = voters.size;
  if (n === 0) return 0;
  const matches: number[] = [];
  for (const id of voters) matches.push(matchOf(id));
  // Voter sets are tiny (3-7), so a sort beats anything clever.
  matches.sort((a, b) => b - a);
  return matches[Math.floor(n / 2)];
}

/** Tallies an election: won once a majority granted, lost once a majority can no longer grant. */
export function voteResult(voters: ReadonlySet<string>, votes: ReadonlyMap<string, boolean>): VoteResult {
  const quorum = Math.floor(voters.size / 2) + 1;
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  if (voters.size === 0) return 'lost';
  if (granted >= quorum) return 'won';
  if (rejected >= quorum || voters.size - rejected < quorum) return 'lost';
  return 'pending';
}

/** Whether `holds(id)` is true for a majority of voters (check-quorum). */
export function hasQuorum(voters: ReadonlySet<string>, holds: (id: string) => boolean): boolean {
  let n = 0;
  for (const id of voters) if (holds(id)) n++;
  return voters.size > 0 && n >= Math.floor(voters.size / 2) + 1;
}
