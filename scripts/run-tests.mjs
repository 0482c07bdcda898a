#!/usr/bin/env node
// Runs every test file of the workspace (or of the packages named as arguments)
// with Node's own test runner. Tests import TypeScript sources directly (tsx and the
// "kubit-source" export condition), so a test run never depends on a stale dist/.
//
//   node scripts/run-tests.mjs                      every package
//   node scripts/run-tests.mjs packages/store       one package
//   node scripts/run-tests.mjs packages/store/test/raft.test.ts
//   KUBIT_TEST_FILTER=raft node scripts/run-tests.mjs   only files whose path contains "raft"
//
// Files run two at a time (KUBIT_TEST_CONCURRENCY). A file whose first lines
// say `// kubit-test: serial` runs afterwards, alone: the whole-cluster tests
// (a dozen processes, containerd, dockerd) would starve each other, and the
// rest, on two cores.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(import.meta.url), '../..');
const args = process.argv.slice(2);
const targets = args.length > 0 ? args.map((a) => resolve(root, a)) : [join(root, 'packages')];

function collect(path, out) {
  const st = statSync(path);
  if (st.isFile()) {
    if (/\.test\.ts$/.test(path)) out.push(path);
    return;
  }
  for (const entry of readdirSync(path)) {
    if (entry === 'node_modules' || entry === 'dist') continue;
    collect(join(path, entry), out);
  }
}

const files = [];
for (const t of targets) {
  if (!existsSync(t)) {
    console.error(`run-tests: no such path: ${relative(root, t)}`);
    process.exit(2);
  }
  collect(t, files);
}
const filter = process.env.KUBIT_TEST_FILTER;
const selected = files.filter((f) => !filter || f.includes(filter)).sort();
if (selected.length === 0) {
  console.error('run-tests: no test files found');
  process.exit(2);
}

const isSerial = (file) =>
  /^\/\/ kubit-test: serial$/m.test(readFileSync(file, 'utf8').split('\n').slice(0, 5).join('\n'));
const serial = selected.filter(isSerial);
const parallel = selected.filter((f) => !serial.includes(f));

function run(group, concurrency) {
  if (group.length === 0) return 0;
  const result = spawnSync(
    process.execPath,
    [
      '--conditions=kubit-source',
      '--import',
      'tsx',
      '--test',
      `--test-concurrency=${concurrency}`,
      ...group.map((f) => relative(root, f)),
    ],
    { cwd: root, stdio: 'inherit', env: { ...process.env, KUBIT_SOURCE: '1' } },
  );
  return result.status ?? 1;
}

// Both groups always run, so one failure never hides another.
const parallelStatus = run(parallel, process.env.KUBIT_TEST_CONCURRENCY ?? '2');
const serialStatus = run(serial, '1');
process.exit(parallelStatus || serialStatus);
