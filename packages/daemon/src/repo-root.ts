// The checkout a module runs from: the nearest ancestor with pnpm-workspace.yaml.
// The launcher, the installer and the test harness start daemons and read
// deploy/ files from it, whether they run from src/ (tsx) or dist/src/.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root above `moduleUrl` (pass `import.meta.url`). */
export function repoRootOf(moduleUrl: string): string {
  const from = dirname(fileURLToPath(moduleUrl));
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return dir;
    if (dirname(dir) === dir)
      throw new Error(`cannot find the repository root (no pnpm-workspace.yaml above ${from})`);
  }
}
