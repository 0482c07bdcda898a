// kubit-install's registry section: each mirrored registry's hosts.toml lists
// the local mirror first and the registry itself as the server (no hosts: the
// inventory is parsed and planned, the files read from the plan).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '@kubit/testkit';
import { loadTemplates } from '../src/install/install.js';
import { parseInventory } from '../src/install/inventory.js';
import { planCluster } from '../src/install/plan.js';

const inventory = (registry: string) => `ssh:
  key: ${join(repoRoot, 'package.json')}
kubit:
  root: /opt/kubit
controlPlane:
  - { name: cp-1, address: 10.9.0.11, roles: [store, apiserver, scheduler, controller-manager] }
nodes:
  - { name: node-1, address: 10.9.0.21 }
${registry}`;

async function hostsFiles(registry: string): Promise<Map<string, string>> {
  const inv = parseInventory(inventory(registry), 'inv.yaml', '/');
  const node = planCluster(inv, await loadTemplates(repoRoot)).find((p) => p.host.name === 'node-1');
  assert.ok(node);
  return new Map(
    node.files.flatMap((f) =>
      'text' in f.content && f.path.endsWith('/hosts.toml') ? [[f.path, f.content.text] as const] : [],
    ),
  );
}

test('docker.io: the mirror as the first host, Docker Hub as the server', async () => {
  const files = await hostsFiles('registry:\n  mirror: 10.9.0.5:5000\n');
  assert.equal(files.size, 1);
  const [[path, text]] = [...files];
  assert.match(path, /\/docker\.io\/hosts\.toml$/);
  assert.match(text, /^server = "https:\/\/registry-1\.docker\.io"$/m);
  assert.match(text, /^\[host\."http:\/\/10\.9\.0\.5:5000"\]$/m);
  assert.doesNotMatch(text, /\{\{/);
});

test('mirrorOf names more registries, each falling through to itself', async () => {
  const files = await hostsFiles('registry:\n  mirror: 10.9.0.5:5000\n  mirrorOf: [docker.io, quay.io]\n');
  const quay = [...files].find(([p]) => p.endsWith('/quay.io/hosts.toml'));
  assert.ok(quay, [...files.keys()].join(', '));
  assert.match(quay[1], /^server = "https:\/\/quay\.io"$/m);
  assert.match(quay[1], /^\[host\."http:\/\/10\.9\.0\.5:5000"\]$/m);
  assert.equal(files.size, 2);
});

test('bad registry sections name the field', () => {
  const parse = (r: string) => () => parseInventory(inventory(r), 'inv.yaml', '/');
  assert.throws(
    parse('registry:\n  mirror: 10.9.0.5:5000\n  mirrorOf: [Quay.IO/x]\n'),
    /registry\.mirrorOf\[0\]/,
  );
  assert.throws(parse('registry:\n  mirrorOf: [quay.io]\n'), /registry\.mirrorOf.*needs registry\.mirror/);
});
