// kubit edit with scripted editors, and the failure paths a user meets, each
// against a real apiserver (on etcd): conflicts, invalid objects with their
// field causes, bad YAML in a file, a watch that outlives an apiserver restart,
// and the exit codes of the real kubit process.

import assert from 'node:assert/strict';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type ControlPlane,
  freePort,
  startControlPlane,
  type TestProcess,
  tempDir,
  waitFor,
} from '@kubit/testkit';
import { type KubitOptions, kubit, kubitProcess } from './helpers.js';
import { restartApiserver } from './restart.js';

let cp: ControlPlane;
let tmp: { path: string; cleanup: () => Promise<void> };
let env: NodeJS.ProcessEnv;
let restarted: TestProcess | undefined;

const k = (args: string[], o: Partial<KubitOptions> = {}) => kubit(args, { env, ...o });

before(async () => {
  tmp = await tempDir('kubit-cli-edit-');
  cp = await startControlPlane();
  env = { HOME: tmp.path, KUBECONFIG: cp.kubeconfigPath, TMPDIR: tmp.path };
});

after(async () => {
  await restarted?.stop();
  await cp?.stop();
  await tmp?.cleanup();
});

/** An editor: a shell script run as `script FILE`; `n` counts its runs so it can act differently each time. */
async function editor(name: string, body: string): Promise<string> {
  const path = join(tmp.path, `${name}.sh`);
  await writeFile(
    path,
    `#!/bin/sh\nset -e\nf="$1"\nn=$(cat "$0.runs" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$0.runs"\ncp "$f" "$0.seen.$n"\n${body}\n`,
  );
  await chmod(path, 0o755);
  return path;
}

const configMap = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: "1"\n';
const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  replicas: 1
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec: {containers: [{name: c, image: busybox}]}
`;

describe('kubit edit', () => {
  it('applies the edited object and reports "edited"', async () => {
    let r = await k(['apply', '-f', '-'], { stdin: configMap });
    assert.equal(r.code, 0, r.err);
    const ed = await editor('set-a', `sed -i 's/^  a: "1"$/  a: "2"/' "$f"`);
    r = await k(['edit', 'configmap/settings'], { env: { ...env, EDITOR: ed } });
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'configmap/settings edited\n');
    r = await k(['get', 'cm', 'settings', '-o', 'jsonpath={.data.a}']);
    assert.equal(r.out, '2');
    // The editor saw YAML with a comment header, and KUBE_EDITOR wins over EDITOR.
    const seen = await readFile(`${ed}.seen.1`, 'utf8');
    assert.match(seen, /^# .*\n(#.*\n)*apiVersion: v1\n/);
    assert.match(seen, /^kind: ConfigMap$/m);
    const json = await editor('json', `sed -i 's/"a": "2"/"a": "3"/' "$f"`);
    r = await k(['edit', 'cm', 'settings', '-o', 'json'], {
      env: { ...env, EDITOR: 'false', KUBE_EDITOR: json },
    });
    assert.equal(r.out, 'configmap/settings edited\n', r.err);
    r = await k(['get', 'cm', 'settings', '-o', 'jsonpath={.data.a}']);
    assert.equal(r.out, '3');
  });

  it('cancels when nothing changed or the file was emptied', async () => {
    let r = await k(['edit', 'cm/settings'], { env: { ...env, EDITOR: 'true' } });
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'Edit cancelled, no changes made.\n');
    const empty = await editor('empty', ': > "$f"');
    r = await k(['edit', 'cm/settings'], { env: { ...env, EDITOR: empty } });
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'Edit cancelled, no changes made.\n');
    r = await k(['edit', 'cm/settings'], { env: { ...env, EDITOR: 'false' } });
    assert.equal(r.code, 1);
    assert.match(r.err, /^error: there was a problem with the editor "false"/);
    r = await k(['edit', 'cm/nope'], { env: { ...env, EDITOR: 'true' } });
    assert.equal(r.code, 1);
    assert.equal(r.err, 'Error from server (NotFound): configmaps "nope" not found\n');
  });

  it("reopens an invalid edit with the server's error; saving it unchanged gives up", async () => {
    let r = await k(['apply', '-f', '-'], { stdin: deployment });
    assert.equal(r.code, 0, r.err);
    const invalid = await editor(
      'invalid',
      `[ $n -eq 1 ] && sed -i 's/^  replicas: 1$/  replicas: -1/' "$f"; true`,
    );
    r = await k(['edit', 'deployment/d'], { env: { ...env, EDITOR: invalid } });
    assert.equal(r.code, 1);
    assert.match(r.err, /^The Deployment "d" is invalid: spec\.replicas: Invalid value: -1: /m);
    const copy = /A copy of your changes has been stored to "([^"]+)"/.exec(r.err)?.[1];
    assert.ok(copy?.startsWith(tmp.path), r.err);
    assert.match(r.err, /\nerror: Edit cancelled, no valid changes were saved\.\n$/);
    const reopened = await readFile(`${invalid}.seen.2`, 'utf8');
    assert.match(reopened, /^# The Deployment "d" is invalid: spec\.replicas: Invalid value: -1/m);
    assert.match(reopened, /^ {2}replicas: -1$/m, 'the reopened file keeps the edit');
    assert.match(await readFile(copy ?? '', 'utf8'), /replicas: -1/);
    r = await k(['get', 'deploy', 'd', '-o', 'jsonpath={.spec.replicas}']);
    assert.equal(r.out, '1', 'nothing was written');

    // Fixed on the second try: the fix is applied.
    const fixed = await editor(
      'fixed',
      `if [ $n -eq 1 ]; then sed -i 's/^  replicas: 1$/  replicas: -1/' "$f"; else sed -i 's/^  replicas: -1$/  replicas: 4/' "$f"; fi`,
    );
    r = await k(['edit', 'deploy/d'], { env: { ...env, EDITOR: fixed } });
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'deployment.apps/d edited\n');
    r = await k(['get', 'deploy', 'd', '-o', 'jsonpath={.spec.replicas}']);
    assert.equal(r.out, '4');
  });

  it('a change made meanwhile is a Conflict (409), not a lost update', async () => {
    const started = join(tmp.path, 'editor-started');
    const proceed = join(tmp.path, 'editor-proceed');
    const slow = await editor(
      'slow',
      `if [ $n -eq 1 ]; then touch "${started}"; while [ ! -f "${proceed}" ]; do sleep 0.1; done; sed -i 's/^  a: "3"$/  a: "4"/' "$f"; fi`,
    );
    const editing = k(['edit', 'cm/settings'], { env: { ...env, EDITOR: slow } });
    await waitFor('the editor to start', async () => {
      await readFile(started);
      return true;
    });
    const other = await k(['label', 'cm', 'settings', 'changed=meanwhile']);
    assert.equal(other.code, 0, other.err);
    await writeFile(proceed, '');
    const r = await editing;
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /^Error from server \(Conflict\): Operation cannot be fulfilled on configmaps "settings": the object has been modified; please apply your changes to the latest version and try again\n/,
    );
    const got = await k(['get', 'cm', 'settings', '-o', 'jsonpath={.data.a}']);
    assert.equal(got.out, '3');

    const rv = await k(['get', 'cm', 'settings', '-o', 'jsonpath={.metadata.resourceVersion}']);
    await k(['label', 'cm', 'settings', 'again=yes']);
    const stale = await k(['label', 'cm', 'settings', 'stale=yes', `--resource-version=${rv.out}`]);
    assert.equal(stale.code, 1);
    assert.match(
      stale.err,
      /^Error from server \(Conflict\): Operation cannot be fulfilled on configmaps "settings"/,
    );
  });
});

describe('failure paths', () => {
  it('bad YAML in a file names the file and the line', async () => {
    const file = join(tmp.path, 'broken.yaml');
    await writeFile(
      file,
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\ndata:\n  a: "1"\n   b: 2\n',
    );
    const r = await k(['apply', '-f', file]);
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      new RegExp(`^error: error parsing ${file}: error converting YAML to JSON: yaml: line 7: `),
    );
    const twoDocs = join(tmp.path, 'two.yaml');
    await writeFile(twoDocs, `${configMap}---\napiVersion: v1\nkind: ConfigMap\nmetadata: [oops\n`);
    const r2 = await k(['apply', '-f', twoDocs]);
    assert.equal(r2.code, 1);
    assert.match(
      r2.err,
      new RegExp(`^error: error parsing ${twoDocs}: error converting YAML to JSON: yaml: line \\d+: `),
    );
  });

  it('the real kubit process exits non-zero on every failure', async () => {
    // Each run is a whole process start under tsx: a few, for the exit codes (in-process runs check the rest).
    const noCreds = { HOME: tmp.path };
    let r = await kubitProcess(['get', 'cm', 'settings', '-o', 'name'], env);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'configmap/settings\n');
    r = await kubitProcess(['get', 'pod', 'nope'], env);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'Error from server (NotFound): pods "nope" not found\n');
    r = await kubitProcess(
      ['get', 'pods', '--server', cp.url, '--certificate-authority', cp.caFile],
      noCreds,
    );
    assert.equal(r.code, 1);
    assert.equal(r.err, 'error: You must be logged in to the server (Unauthorized)\n');
    const port = await freePort();
    r = await kubitProcess(['get', 'pods', '--server', `https://127.0.0.1:${port}`], noCreds);
    assert.equal(r.code, 1);
    assert.equal(
      r.err,
      `The connection to the server 127.0.0.1:${port} was refused - did you specify the right host or port?\n`,
    );
  });

  it('get -w resumes after an apiserver restart from the last version, without duplicates', async () => {
    const cm = (name: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}, namespace: watched}\n`;
    let r = await k(['create', 'namespace', 'watched']);
    assert.equal(r.code, 0, r.err);
    r = await k(['create', '-f', '-'], { stdin: cm('before') });
    assert.equal(r.code, 0, r.err);
    const ac = new AbortController();
    let out = '';
    const watching = k(['get', 'configmaps', '-n', 'watched', '-w'], {
      signal: ac.signal,
      onOut: (s) => {
        out += s;
      },
    });
    try {
      await waitFor('the initial listing', () => /^before\s/m.test(out), 30_000, 50);
      r = await k(['create', '-f', '-'], { stdin: cm('during') });
      assert.equal(r.code, 0, r.err);
      await waitFor('the watch to print "during"', () => /^during\s/m.test(out), 30_000, 50);

      // A write the watch does not see: the restarted server's history then starts after the
      // watch's last version, so it must relist (410 Gone) and print only what changed.
      r = await k(['create', '-f', '-'], {
        stdin: cm('elsewhere').replace('namespace: watched', 'namespace: default'),
      });
      assert.equal(r.code, 0, r.err);
      restarted = await restartApiserver(cp);

      r = await k(['create', '-f', '-'], { stdin: cm('after') });
      assert.equal(r.code, 0, r.err);
      r = await k(['label', 'cm', 'during', '-n', 'watched', 'touched=yes']);
      assert.equal(r.code, 0, r.err);
      await waitFor(
        'the watch to print "after" and "during" again',
        () => /^after\s/m.test(out) && (out.match(/^during\s/gm) ?? []).length >= 2,
        60_000,
        50,
      ).catch(async (e: Error) => {
        ac.abort();
        const w = await watching;
        throw new Error(`${e.message}\nstdout:\n${w.out}\nstderr:\n${w.err}`);
      });
    } finally {
      ac.abort();
    }
    const done = await watching;
    assert.equal(done.code, 0, done.err);
    assert.match(done.err, /watch interrupted/);
    const names = done.out
      .trim()
      .split('\n')
      .map((l) => l.split(/\s+/)[0]);
    assert.equal(names[0], 'NAME', 'one header');
    assert.deepEqual(names.slice(1), ['before', 'during', 'after', 'during'], done.out);
  });
});
