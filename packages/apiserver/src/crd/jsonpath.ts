// The simple JSONPath of printer columns and scale paths (`.spec.replicas`,
// `.status.conditions[0].type`, `.metadata.labels['app']`): fields and indexes only.

type Step = { field: string } | { index: number };

export function parseSimplePath(path: string): Step[] | undefined {
  const steps: Step[] = [];
  const re = /\.([A-Za-z0-9_$-]+)|\[(\d+)\]|\[['"]([^'"]*)['"]\]/y;
  let p = path.trim();
  if (p.startsWith('{') && p.endsWith('}')) p = p.slice(1, -1);
  if (p.startsWith('$')) p = p.slice(1);
  re.lastIndex = 0;
  while (re.lastIndex < p.length) {
    const m = re.exec(p);
    if (!m) return undefined;
    if (m[1] !== undefined) steps.push({ field: m[1] });
    else if (m[2] !== undefined) steps.push({ index: Number(m[2]) });
    else steps.push({ field: m[3] });
  }
  return steps;
}

export function getPath(obj: unknown, path: string): unknown {
  const steps = parseSimplePath(path);
  if (!steps) return undefined;
  let cur: unknown = obj;
  for (const s of steps) {
    if ('index' in s) cur = Array.isArray(cur) ? cur[s.index] : undefined;
    else
      cur =
        cur && typeof cur === 'object' && !Array.isArray(cur)
          ? (cur as Record<string, unknown>)[s.field]
          : undefined;
    if (cur === undefined) return undefined;
  }
  return cur;
}

/** Sets a field path (no indexes), creating the objects on the way. */
export function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const steps = parseSimplePath(path);
  if (!steps || steps.length === 0 || steps.some((s) => 'index' in s)) return;
  let cur = obj;
  for (const [i, s] of steps.entries()) {
    const f = (s as { field: string }).field;
    if (i === steps.length - 1) cur[f] = value;
    else {
      const next = cur[f];
      if (!next || typeof next !== 'object' || Array.isArray(next)) cur[f] = {};
      cur = cur[f] as Record<string, unknown>;
    }
  }
}
