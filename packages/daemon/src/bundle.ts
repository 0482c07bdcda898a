// Which build of a daemon to run: the esbuild bundle that scripts/bundle.mjs
// writes beside a built entry point, or the entry point itself.
import { readFileSync, statSync } from 'node:fs';

/**
 * The bundle beside a built entry point (dist/src/main.js → main.bundle.mjs)
 * when it is fresh: at least as new as every workspace file it was built from
 * (scripts/bundle.mjs lists them in `<bundle>.inputs.json`), so an edit
 * followed by `tsc -b` alone never runs stale code. Undefined otherwise, or
 * with KUBIT_NO_BUNDLE=1 (for comparisons and debugging).
 */
export function freshBundle(builtEntry: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.KUBIT_NO_BUNDLE === '1') return undefined;
  const bundle = builtEntry.replace(/\.js$/, '.bundle.mjs');
  try {
    const built = statSync(bundle).mtimeMs;
    const inputs = JSON.parse(readFileSync(`${bundle}.inputs.json`, 'utf8')) as unknown;
    if (!Array.isArray(inputs)) return undefined;
    for (const input of inputs)
      if (typeof input !== 'string' || statSync(input).mtimeMs > built) return undefined;
    return bundle;
  } catch {
    // No bundle, no input list, or an input gone: run the module graph.
    return undefined;
  }
}
