// "Did you mean" suggestions for mistyped verbs and resource types.

/** Levenshtein distance (insertions, deletions, substitutions). */
export function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0];
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j];
      prev[j] = Math.min(prev[j] + 1, prev[j - 1] + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length];
}

/** Candidates close to `typed` (distance ≤ 2, or a shared prefix of 3+), best first. */
export function suggestions(typed: string, candidates: readonly string[], max = 3): string[] {
  const t = typed.toLowerCase();
  const scored = [...new Set(candidates)]
    .map((c) => ({ c, d: editDistance(t, c.toLowerCase()) }))
    .filter(
      ({ c, d }) =>
        d <= Math.max(1, Math.min(2, Math.floor(t.length / 3))) ||
        (t.length >= 3 && c.toLowerCase().startsWith(t)),
    )
    .sort((a, b) => a.d - b.d || a.c.localeCompare(b.c));
  return scored.slice(0, max).map((s) => s.c);
}
