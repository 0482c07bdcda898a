#!/usr/bin/env node
// Bundles each daemon's built entry point (dist/src/<entry>.js) into one file
// beside it (dist/src/<entry>.bundle.mjs) with esbuild, and the CLI into
// packages/cli/dist/bundle/ (split per verb). Why: a daemon loaded
// from hundreds of ESM modules spends most of its start-up resolving and
// compiling them (measured: about 0.65 s of CPU for kubit-store's --help,
// 0.27 s bundled) and keeps more memory for module records; ./scripts/up starts
// ten of them at once on two cores. The bundle sits in the same directory as
// main.js so the daemons' own lookups of proto/ and deploy/ files (which walk
// up from import.meta.url) find the same files.
//
// Packages that read files next to their own code at run time (__dirname: the
// etcd3 client's .proto, level's native addon) stay outside the bundle and load
// from node_modules as usual; each is a direct dependency of the package whose
// bundle imports it, so Node resolves it from there (pnpm links only direct
// dependencies into a package's node_modules). pino-pretty is only loaded for
// a terminal, by a pino transport; the launcher's daemons log JSON to files.
//
//   node scripts/bundle.mjs            bundle every daemon (after `tsc -b`)
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Loaded from node_modules at run time (see above), by every bundle that imports them. */
const external = ['etcd3', 'level', 'pino-pretty'];

const entries = [
  ['store', 'main'],
  ['apiserver', 'main'],
  ['scheduler', 'main'],
  ['controllers', 'main'],
  ['dns', 'main'],
  ['kubelet', 'main'],
  ['kubelet', 'hollow'],
  ['proxy', 'main'],
  ['net', 'main'],
];

// ESM output of CommonJS dependencies needs a require() of its own.
const banner =
  "import { createRequire as __kubitRequire } from 'node:module';\nconst require = __kubitRequire(import.meta.url);";

/**
 * Lists the workspace files a bundle was built from (not node_modules: those
 * change only with `pnpm install`, after which one builds anyway). A bundle
 * older than any of them is stale (freshBundle in @kubit/daemon; kubit.ts).
 */
function writeInputs(file, metafile) {
  const inputs = Object.keys(metafile.inputs)
    .filter((p) => !p.includes('node_modules'))
    .map((p) => resolve(root, p));
  writeFileSync(file, `${JSON.stringify(inputs)}\n`);
}

/** What every bundle is built with: ESM for Node 20 from built code. */
const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external,
  banner: { js: banner },
  // Built code only: the sources' custom export condition must not win here.
  conditions: ['node', 'import', 'default'],
  logLevel: 'warning',
  legalComments: 'none',
};

const started = Date.now();
await Promise.all(
  entries.map(async ([pkg, entry]) => {
    const input = join(root, 'packages', pkg, 'dist', 'src', `${entry}.js`);
    if (!existsSync(input)) throw new Error(`bundle: ${input} is missing; run \`tsc -b\` first`);
    const outfile = join(root, 'packages', pkg, 'dist', 'src', `${entry}.bundle.mjs`);
    const result = await build({
      entryPoints: [input],
      outfile,
      metafile: true,
      ...common,
    });
    writeInputs(`${outfile}.inputs.json`, result.metafile);
  }),
);

// The CLI: split at its dynamic imports (one chunk per verb), so a verb loads
// only what it uses, as the module graph did; packages/cli/src/kubit.ts picks it.
// A fresh directory each time: chunk names carry content hashes, so old ones would pile up.
const cliOut = join(root, 'packages', 'cli', 'dist', 'bundle');
rmSync(cliOut, { recursive: true, force: true });
const cli = await build({
  entryPoints: { main: join(root, 'packages', 'cli', 'dist', 'src', 'main.js') },
  outdir: cliOut,
  metafile: true,
  outExtension: { '.js': '.mjs' },
  splitting: true,
  ...common,
});
writeInputs(join(cliOut, 'main.mjs.inputs.json'), cli.metafile);
process.stdout.write(`bundled ${entries.length} daemons and the CLI in ${Date.now() - started} ms\n`);
