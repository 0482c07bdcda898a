// pnpm bench:webhooks — what an admission webhook adds to a write: ConfigMap
// creates, one at a time, in a namespace no webhook sees and in one a validating
// and a mutating webhook (real HTTPS servers in this process, a CA of their own)
// both see, interleaved so that the host's noise falls on both alike. The
// webhook's own time (request in to answer out, measured in its server) is taken
// off, so "added" is the apiserver's share: matching, the AdmissionReview, TLS,
// the patch. Target (issue 22): ≤ 2 ms at p50 and p99 over the webhook's own time.
// A third namespace has one ValidatingAdmissionPolicy with two CEL validations
// bound to it (no webhook): its creates against the plain ones, as a ratio, are
// what evaluating the policy in admission costs.
//
//   node packages/testkit/dist/bench/webhooks.js [--creates=500]
//
// Build first: npx tsc -b packages/testkit packages/apiserver
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resources } from '@kubit/client';
import {
  benchClient,
  machineHeader,
  ms,
  now,
  parseFlags,
  percentile,
  progress,
  runBench,
  sleep,
  sortedCopy,
  startBenchControlPlane,
  table,
} from './common.js';

const SCRIPT = 'bench:webhooks';
const exec = promisify(execFile);

async function certificates(dir: string): Promise<{ key: Buffer; cert: Buffer; ca: Buffer }> {
  const f = (n: string) => join(dir, n);
  const ssl = (args: string[]) => exec('openssl', args);
  await ssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt')].concat([
      '-days',
      '1',
      '-subj',
      '/CN=bench-webhook-ca',
    ]),
  );
  await ssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    f('tls.key'),
    '-out',
    f('tls.csr'),
    '-subj',
    '/CN=127.0.0.1',
  ]);
  writeFileSync(f('ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  await ssl([
    'x509',
    '-req',
    '-in',
    f('tls.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('tls.crt'),
    '-days',
    '1',
    '-extfile',
    f('ext.cnf'),
  ]);
  return { key: readFileSync(f('tls.key')), cert: readFileSync(f('tls.crt')), ca: readFileSync(f('ca.crt')) };
}

runBench(async (cleanup) => {
  const flags = parseFlags(SCRIPT, process.argv.slice(2), { creates: 500 });
  const dir = mkdtempSync(join(tmpdir(), 'kubit-bench-webhooks-'));
  cleanup.add('certificates', () => rmSync(dir, { recursive: true, force: true }));
  const certs = await certificates(dir);
  /** Milliseconds each review spent in the webhook server, by the object's name. */
  const own = new Map<string, number>();
  const server = createServer({ key: certs.key, cert: certs.cert }, (req, res) => {
    const t0 = now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const request = review.request;
      const mutating = req.url?.startsWith('/mutate');
      const response: Record<string, unknown> = { uid: request.uid, allowed: true };
      if (mutating) {
        response.patchType = 'JSONPatch';
        response.patch = Buffer.from(
          JSON.stringify([{ op: 'add', path: '/metadata/labels', value: { seen: 'yes' } }]),
        ).toString('base64');
      }
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }));
      const name = String(request.object?.metadata?.name ?? '');
      own.set(name, (own.get(name) ?? 0) + (now() - t0));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanup.add('webhook server', () => {
    server.closeAllConnections();
    server.close();
  });
  const port = (server.address() as AddressInfo).port;
  progress('starting the control plane');
  const { cp, storeTitle } = await startBenchControlPlane('kubit-store', 1);
  cleanup.add('control plane', () => cp.stop());
  const client = benchClient(cp.kubeconfigPath, 4);
  cleanup.add('client', () => client.close());
  for (const name of ['bench-plain', 'bench-hooked', 'bench-policy']) {
    await client.create(resources.namespaces, { metadata: { name, labels: { bench: name } } } as never);
  }
  const hook = (name: string, path: string) => ({
    name,
    clientConfig: { url: `https://127.0.0.1:${port}${path}`, caBundle: certs.ca.toString('base64') },
    rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
    namespaceSelector: { matchLabels: { bench: 'bench-hooked' } },
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
  });
  const ar = { group: 'admissionregistration.k8s.io', version: 'v1', namespaced: false };
  await client.create(
    { ...ar, resource: 'validatingwebhookconfigurations', kind: 'ValidatingWebhookConfiguration' },
    {
      metadata: { name: 'bench' },
      webhooks: [hook('validate.bench.kubit.dev', '/validate')],
    } as never,
  );
  await client.create(
    { ...ar, resource: 'mutatingwebhookconfigurations', kind: 'MutatingWebhookConfiguration' },
    {
      metadata: { name: 'bench' },
      webhooks: [hook('mutate.bench.kubit.dev', '/mutate')],
    } as never,
  );
  await client.create({ ...ar, resource: 'validatingadmissionpolicies', kind: 'ValidatingAdmissionPolicy' }, {
    metadata: { name: 'bench' },
    spec: {
      matchConstraints: {
        resourceRules: [
          { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] },
        ],
      },
      validations: [
        { expression: "object.data.a == 'b'", message: 'data.a must be b' },
        { expression: 'size(object.metadata.name) < 64 && !has(object.data.forbidden)' },
      ],
    },
  } as never);
  await client.create(
    { ...ar, resource: 'validatingadmissionpolicybindings', kind: 'ValidatingAdmissionPolicyBinding' },
    {
      metadata: { name: 'bench' },
      spec: {
        policyName: 'bench',
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchLabels: { bench: 'bench-policy' } } },
      },
    } as never,
  );
  // The configurations and the policy reach admission through the watch cache.
  for (let i = 0; ; i++) {
    const refused = await client
      .create(resources.configmaps, { metadata: { name: `probe-${i}` }, data: { a: 'x' } } as never, {
        namespace: 'bench-policy',
      })
      .then(
        () => false,
        () => true,
      );
    if (refused) break;
    if (i > 500) throw new Error('the ValidatingAdmissionPolicy never took effect');
    await sleep(10);
  }
  for (let i = 0; ; i++) {
    const cm = (await client.create(resources.configmaps, { metadata: { name: `warm-${i}` } } as never, {
      namespace: 'bench-hooked',
    })) as {
      metadata?: { labels?: Record<string, string> };
    };
    if (cm.metadata?.labels?.seen === 'yes' && i > 20) break;
    await sleep(10);
  }
  progress(`${flags.creates} creates in each namespace, interleaved`);
  const plain: number[] = [];
  const hooked: number[] = [];
  const added: number[] = [];
  const policed: number[] = [];
  for (let i = 0; i < flags.creates; i++) {
    for (const ns of ['bench-plain', 'bench-hooked', 'bench-policy']) {
      const name = `cm-${i}`;
      const t0 = now();
      await client.create(resources.configmaps, { metadata: { name }, data: { a: 'b' } } as never, {
        namespace: ns,
      });
      const t = now() - t0;
      if (ns === 'bench-plain') plain.push(t);
      else if (ns === 'bench-policy') policed.push(t);
      else {
        hooked.push(t);
        added.push(t - (own.get(name) ?? 0));
      }
    }
  }
  const p = (xs: number[], q: number) => percentile(sortedCopy(xs), q);
  const ownTimes = [...own.values()];
  process.stdout.write(
    `${machineHeader()}\nstore: ${storeTitle}; ${flags.creates} sequential ConfigMap creates each\n\n`,
  );
  process.stdout.write(
    `${table(
      ['creates', 'p50', 'p99'],
      [
        ['no webhook', ms(p(plain, 50)), ms(p(plain, 99))],
        ['validating + mutating webhook', ms(p(hooked, 50)), ms(p(hooked, 99))],
        ["the webhooks' own time", ms(p(ownTimes, 50)), ms(p(ownTimes, 99))],
        [
          'added by the webhooks (hooked − plain, own time off)',
          ms(p(added, 50) - p(plain, 50)),
          ms(p(added, 99) - p(plain, 99)),
        ],
        ['one ValidatingAdmissionPolicy, two validations', ms(p(policed, 50)), ms(p(policed, 99))],
        [
          'policy ÷ no webhook (ratio)',
          `${(p(policed, 50) / p(plain, 50)).toFixed(2)}×`,
          `${(p(policed, 99) / p(plain, 99)).toFixed(2)}×`,
        ],
      ],
    )}\n`,
  );
});
