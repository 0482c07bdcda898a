#!/usr/bin/env node
// The `kubit` executable. It starts from the esbuild bundle that `pnpm build`
// makes (scripts/bundle.mjs: dist/bundle/main.mjs, one chunk per verb, so a
// verb still loads only its own code) when the bundle is fresh, and from
// dist/src/main.js otherwise. Why: resolving and loading a few hundred ES
// modules was most of `kubit get pods`'s time. The freshness rule is
// @kubit/daemon's freshBundle, repeated here so that this file loads nothing.
import { readFileSync, statSync } from 'node:fs';

const main = new URL('./main.js', import.meta.url);
const bundle = new URL('../bundle/main.mjs', import.meta.url);

/** The bundle is at least as new as every workspace file it was built from (its .inputs.json). */
function bundleIsFresh(): boolean {
  if (process.env.KUBIT_NO_BUNDLE === '1') return false;
  try {
    const built = statSync(bundle).mtimeMs;
    const inputs = JSON.parse(
      readFileSync(new URL('../bundle/main.mjs.inputs.json', import.meta.url), 'utf8'),
    );
    return (
      Array.isArray(inputs) && inputs.every((f) => typeof f === 'string' && statSync(f).mtimeMs <= built)
    );
  } catch {
    return false;
  }
}

await import(bundleIsFresh() ? bundle.href : main.href);
