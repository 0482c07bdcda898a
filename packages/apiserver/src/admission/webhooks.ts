// Dynamic admission: the apiserver calls the webhooks of the
// Mutating/ValidatingWebhookConfigurations in its watch cache with AdmissionReview
// v1 (v1beta1 for a webhook that takes only that) over HTTPS, as Kubernetes' admission/plugin/webhook does. Mutating webhooks
// run one at a time in order (configurations by name, webhooks as listed), their
// JSONPatch applied before the next, and those with reinvocationPolicy IfNeeded
// once more when a later one changed the object; validating webhooks run in
// parallel once the object is valid. A webhook that cannot be reached fails the
// request unless its failurePolicy is Ignore. A webhook's matchConditions (CEL,
// match-conditions.ts) are evaluated before it is called: any false skips it.
import { randomUUID } from 'node:crypto';
import { Agent, request as httpsRequest } from 'node:https';
import { badRequest, internalError, type LabelSelector, StatusError } from '@kubit/api';
import { Histogram, type Logger, type Registry } from '@kubit/daemon';
import type { UserInfo } from '../authn.js';
import type { Authorizer } from '../authz.js';
import type { KindRegistry } from '../kinds/index.js';
import { arr, type KindDef, obj, str } from '../kinds/types.js';
import { jsonPatch } from '../model/patch.js';
import { decodeObject } from '../objects.js';
import type { KObject, Store } from '../storage.js';
import type { WatchCache } from '../watchcache.js';
import { asMatchedKind } from './cel-request.js';
import { evaluateMatchConditions, type MatchCondition } from './match-conditions.js';
import { namespaceMatches, type Operation, objectMatches, type Rule, rulesMatch } from './rules.js';

/** One admission request as the REST layer describes it. */
export interface AdmissionAttributes {
  def: KindDef;
  subresource: string;
  operation: Operation;
  namespace: string;
  name: string;
  /** The object being written (absent for DELETE); mutating webhooks change it in place. */
  object?: KObject;
  /** The stored object (UPDATE, DELETE). */
  oldObject?: KObject;
  user: UserInfo;
  dryRun: boolean;
  /** The options object the webhook sees (CreateOptions, UpdateOptions, DeleteOptions). */
  options?: Record<string, unknown>;
  /** Warnings the webhooks return go here, for the answer's Warning header. */
  warnings: string[];
}

interface Webhook {
  name: string;
  clientConfig: {
    url?: string;
    service?: { namespace: string; name: string; path?: string; port?: number };
    caBundle?: string;
  };
  rules?: Rule[];
  failurePolicy?: string;
  matchPolicy?: string;
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  sideEffects?: string;
  timeoutSeconds?: number;
  reinvocationPolicy?: string;
  admissionReviewVersions?: string[];
  matchConditions?: MatchCondition[];
}

/** What a request looks like to one matched webhook: the kind it was matched as (matchPolicy). */
interface Match {
  hook: Webhook;
  def: KindDef;
  /** Kubernetes' metric label: admit (mutating) or validating. */
  type: 'admit' | 'validating';
}

/** Answers bigger than this are refused (a webhook gone wrong must not take the apiserver's memory). */
const MAX_RESPONSE_BYTES = 3 * 1024 * 1024;

/** Kubernetes never sends its webhook configurations to webhooks: a bad webhook could not be removed. */
const isExempt = (def: KindDef) =>
  def.group === 'admissionregistration.k8s.io' &&
  (def.resource === 'validatingwebhookconfigurations' || def.resource === 'mutatingwebhookconfigurations');

export class WebhookAdmission {
  /**
   * Connections to webhooks are kept between calls: a TLS handshake per request would
   * cost more than most webhooks' own work. The pool keys connections by address, CA and
   * server name, so webhooks never share a connection another's CA vouched for.
   */
  private readonly agent = new Agent({
    keepAlive: true,
    maxSockets: 64,
    maxFreeSockets: 16,
    timeout: 60_000,
  });

  constructor(
    private readonly kinds: KindRegistry,
    private readonly caches: Map<string, WatchCache>,
    private readonly log: Logger,
    /** Read only for a namespace the watch cache has not seen yet. */
    private readonly store?: Store,
    registry?: Registry,
    /** What `authorizer` in matchConditions asks. */
    private readonly authz?: Authorizer,
  ) {
    this.duration = new Histogram({
      name: 'apiserver_admission_webhook_admission_duration_seconds',
      help: 'Admission webhook latency in seconds, by webhook name, type (admit or validating), operation and whether it rejected the request.',
      labelNames: ['name', 'type', 'operation', 'rejected'],
      buckets: [0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 25],
      registers: registry ? [registry] : [],
    });
  }

  private readonly duration: Histogram<'name' | 'type' | 'operation' | 'rejected'>;

  /** Closes the kept connections (the apiserver is stopping). */
  close(): void {
    this.agent.destroy();
  }

  /** Runs the matching mutating webhooks; `a.object` ends up as they left it. */
  async mutate(a: AdmissionAttributes): Promise<void> {
    if (isExempt(a.def)) return;
    const matched = await this.matching('mutatingwebhookconfigurations', a);
    if (matched.length === 0) return;
    let lastChange = -1;
    for (let i = 0; i < matched.length; i++) {
      if (await this.callMutating(matched[i], a)) lastChange = i;
    }
    // Reinvocation: a webhook that asked for it and whose view of the object a later one changed.
    for (let i = 0; i < lastChange; i++) {
      if (matched[i].hook.reinvocationPolicy === 'IfNeeded') await this.callMutating(matched[i], a);
    }
  }

  /** Runs the matching validating webhooks in parallel; the first refusal (in order) is the answer. */
  async validate(a: AdmissionAttributes): Promise<void> {
    if (isExempt(a.def)) return;
    const matched = await this.matching('validatingwebhookconfigurations', a);
    if (matched.length === 0) return;
    const results = await Promise.allSettled(matched.map((m) => this.call(m, a)));
    for (let i = 0; i < results.length; i++) {
      const r = results[i];
      if (r.status === 'rejected') throw r.reason;
      const resp = r.value;
      if (resp && resp.allowed !== true) throw denied(matched[i].hook.name, obj(resp.status));
    }
  }

  /** The webhooks of the cached configurations of `resource` that this request goes to. */
  private async matching(resource: string, a: AdmissionAttributes): Promise<Match[]> {
    const cache = this.caches.get(resource);
    if (!cache) return [];
    const configs = cache.list(() => true);
    if (configs.length === 0) return [];
    configs.sort((x, y) => str(x.metadata?.name).localeCompare(str(y.metadata?.name)));
    const nsLabels = a.def.namespaced ? await this.namespaceLabels(a.namespace) : undefined;
    const labelsOf = (o: KObject | undefined) =>
      o ? ((o.metadata?.labels as Record<string, string> | undefined) ?? {}) : undefined;
    const objectLabels = labelsOf(a.object);
    const oldLabels = labelsOf(a.oldObject);
    const out: Match[] = [];
    for (const c of configs) {
      for (const raw of arr(c.webhooks)) {
        const hook = raw as Webhook;
        const def = this.matchedKind(hook, a);
        if (!def) continue;
        if (!namespaceMatches(hook.namespaceSelector, a.def, nsLabels, objectLabels ?? oldLabels)) continue;
        if (!objectMatches(hook.objectSelector, objectLabels, oldLabels)) continue;
        // matchConditions last, as Kubernetes: the cheap selectors rule out most requests first.
        const conditions = evaluateMatchConditions(hook.matchConditions, a, def, this.authz);
        if ('error' in conditions) {
          this.failed(hook, `failed to evaluate match conditions: ${conditions.error}`);
          continue;
        }
        if (!conditions.matched) continue;
        out.push({ hook, def, type: resource === 'mutatingwebhookconfigurations' ? 'admit' : 'validating' });
      }
    }
    return out;
  }

  /** The kind the webhook's rules match the request as: its own, else (Equivalent) one sharing its storage. */
  private matchedKind(hook: Webhook, a: AdmissionAttributes): KindDef | undefined {
    const attrs = (d: KindDef) => ({
      operation: a.operation,
      group: d.group,
      version: d.version,
      resource: d.resource,
      subresource: a.subresource,
      namespaced: d.namespaced,
    });
    if (rulesMatch(hook.rules, attrs(a.def))) return a.def;
    if (hook.matchPolicy === 'Exact') return undefined;
    const storage = this.kinds.storageResource(a.def);
    for (const d of this.kinds.all) {
      if (d === a.def || this.kinds.storageResource(d) !== storage || d.kind !== a.def.kind) continue;
      if (rulesMatch(hook.rules, attrs(d))) return d;
    }
    return undefined;
  }

  /** The namespace's labels: from the watch cache, or the store when the cache has not seen it yet. */
  private async namespaceLabels(ns: string): Promise<Record<string, string>> {
    const key = `/registry/namespaces/${ns}`;
    const n = this.caches.get('namespaces')?.objects.get(key) ?? (await this.store?.get(key))?.obj;
    return (n?.metadata?.labels as Record<string, string> | undefined) ?? {};
  }

  /** Calls one mutating webhook and applies its patch; whether the object changed. */
  private async callMutating(m: Match, a: AdmissionAttributes): Promise<boolean> {
    const resp = await this.call(m, a);
    if (!resp) return false;
    if (resp.allowed !== true) throw denied(m.hook.name, obj(resp.status));
    // A DELETE has no object a patch could change, a CONNECT only its options.
    if (resp.patch === undefined || resp.patch === '' || !a.object || a.operation === 'CONNECT') return false;
    if (resp.patchType !== 'JSONPatch') {
      this.failed(m.hook, `received invalid webhook response: unsupported patchType: ${str(resp.patchType)}`);
      return false;
    }
    const target = a.object;
    let ops: unknown;
    try {
      ops = JSON.parse(Buffer.from(str(resp.patch), 'base64').toString('utf8'));
    } catch (err) {
      this.failed(m.hook, `received invalid webhook response: ${(err as Error).message}`);
      return false;
    }
    const before = JSON.stringify(target);
    // The webhook saw the object in the version it matched; the patch applies there.
    let patched: unknown;
    try {
      patched = jsonPatch(this.asMatched(m.def, a.def, target), ops);
    } catch (err) {
      throw internalError(
        new Error(`JSON Patch: ${err instanceof StatusError ? err.status.message : (err as Error).message}`),
      );
    }
    const decoded = decodeObject(m.def, patched, 'Ignore', []);
    m.def.defaults?.(decoded);
    const back = this.asMatched(a.def, m.def, decoded);
    replaceContents(target, back);
    return JSON.stringify(target) !== before;
  }

  /** The object converted from kind `from` to `to` (kinds sharing storage), or a copy of itself. */
  private asMatched(to: KindDef, from: KindDef, o: KObject): KObject {
    return asMatchedKind(to, from, o);
  }

  /**
   * Sends the AdmissionReview and returns its response, or undefined when the webhook failed
   * and its failurePolicy is Ignore.
   */
  private async call(m: Match, a: AdmissionAttributes): Promise<Record<string, unknown> | undefined> {
    const start = process.hrtime.bigint();
    let rejected = true;
    try {
      const resp = await this.callOnce(m, a);
      rejected = resp !== undefined && resp.allowed !== true;
      return resp;
    } finally {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      this.duration.observe(
        { name: m.hook.name, type: m.type, operation: a.operation, rejected: String(rejected) },
        seconds,
      );
    }
  }

  private async callOnce(m: Match, a: AdmissionAttributes): Promise<Record<string, unknown> | undefined> {
    const hook = m.hook;
    if (a.dryRun && hook.sideEffects !== 'None' && hook.sideEffects !== 'NoneOnDryRun') {
      throw badRequest(`admission webhook "${hook.name}" does not support dry run`);
    }
    // v1 when the webhook takes it, else v1beta1 (the same shape under its own apiVersion).
    const reviewVersion = (hook.admissionReviewVersions ?? []).includes('v1')
      ? 'admission.k8s.io/v1'
      : 'admission.k8s.io/v1beta1';
    const uid = randomUUID();
    const review = {
      apiVersion: reviewVersion,
      kind: 'AdmissionReview',
      request: this.reviewRequest(uid, m, a),
    };
    let reply: unknown;
    try {
      reply = await this.post(hook, Buffer.from(JSON.stringify(review)));
    } catch (err) {
      if (err instanceof StatusError) throw err;
      return this.failed(hook, (err as Error).message);
    }
    const r = obj(reply);
    if (r.apiVersion !== reviewVersion || r.kind !== 'AdmissionReview') {
      return this.failed(
        hook,
        `received invalid webhook response: expected webhook response of ${reviewVersion}, Kind=AdmissionReview, got ${str(r.apiVersion)}, Kind=${str(r.kind)}`,
      );
    }
    const resp = obj(r.response);
    if (r.response === undefined) {
      return this.failed(hook, 'received invalid webhook response: webhook response was absent');
    }
    if (str(resp.uid) !== uid) {
      return this.failed(
        hook,
        `received invalid webhook response: expected response.uid="${uid}", got "${str(resp.uid)}"`,
      );
    }
    for (const w of arr(resp.warnings)) if (typeof w === 'string' && w) a.warnings.push(w);
    return resp;
  }

  /** A webhook that failed: the request fails (500) unless the failure policy says to go on. */
  private failed(hook: Webhook, reason: string): undefined {
    const message = `failed calling webhook "${hook.name}": ${reason}`;
    if (hook.failurePolicy === 'Ignore') {
      this.log.warn(
        { webhook: hook.name, reason },
        'admission webhook failed; ignored (failurePolicy Ignore)',
      );
      return undefined;
    }
    throw internalError(new Error(message));
  }

  private reviewRequest(uid: string, m: Match, a: AdmissionAttributes): Record<string, unknown> {
    const kindOf = (d: KindDef) => {
      // A CONNECT's object is its options (PodExecOptions), and so is its kind.
      if (a.operation === 'CONNECT' && a.object?.kind)
        return { group: '', version: 'v1', kind: str(a.object.kind) };
      const sub = d.subresources.find((s) => s.name === a.subresource);
      // The kind of the object sent: a scale update here carries its parent (Kubernetes sends a Scale).
      if (sub?.kind && a.object?.kind === sub.kind.kind) return sub.kind;
      return { group: d.group, version: d.version, kind: d.kind };
    };
    const resourceOf = (d: KindDef) => ({ group: d.group, version: d.version, resource: d.resource });
    const user: Record<string, unknown> = { username: a.user.name, groups: a.user.groups };
    if (a.user.uid) user.uid = a.user.uid;
    if (a.user.extra) user.extra = a.user.extra;
    const req: Record<string, unknown> = {
      uid,
      kind: kindOf(m.def),
      resource: resourceOf(m.def),
      requestKind: kindOf(a.def),
      requestResource: resourceOf(a.def),
      name: a.name,
      operation: a.operation,
      userInfo: user,
      object: a.object ? this.asMatched(m.def, a.def, a.object) : null,
      oldObject: a.oldObject ? this.asMatched(m.def, a.def, a.oldObject) : null,
      dryRun: a.dryRun,
    };
    if (a.subresource) {
      req.subResource = a.subresource;
      req.requestSubResource = a.subresource;
    }
    if (a.def.namespaced || (a.def.group === '' && a.def.resource === 'namespaces')) {
      req.namespace = a.def.namespaced ? a.namespace : a.name;
    }
    if (a.options) req.options = a.options;
    return req;
  }

  /** Where the webhook answers: its URL, or its Service resolved to one ready endpoint. */
  private endpoint(
    hook: Webhook,
    timeoutSeconds: number,
  ): { url: URL; connectTo?: string; servername?: string } {
    const cc = hook.clientConfig;
    if (cc.url) {
      const url = new URL(cc.url);
      url.searchParams.set('timeout', `${timeoutSeconds}s`);
      return { url };
    }
    const svc = cc.service!;
    const port = svc.port ?? 443;
    const host = `${svc.name}.${svc.namespace}.svc`;
    const url = new URL(`https://${host}:${port}${svc.path ?? ''}`);
    url.searchParams.set('timeout', `${timeoutSeconds}s`);
    const target = this.resolveService(svc.namespace, svc.name, port);
    if (typeof target === 'string') throw new Error(`failed to call webhook: Post "${url}": ${target}`);
    url.port = String(target.port);
    return { url, connectTo: target.address, servername: host };
  }

  /**
   * A Service port to one ready endpoint address and port, through the Service's EndpointSlices,
   * as Kubernetes' endpoint service resolver does (the apiserver is not in the pod network, so it
   * cannot count on the cluster IP). A string says why none was found.
   */
  private resolveService(ns: string, name: string, port: number): { address: string; port: number } | string {
    const services = this.kinds.lookup('', 'v1', 'services');
    const slices = this.kinds.lookup('discovery.k8s.io', 'v1', 'endpointslices');
    if (!services || !slices) return `service "${name}" not found`;
    const svcCache = this.caches.get(this.kinds.storageResource(services));
    const svc = svcCache?.list((o) => str(o.metadata?.namespace) === ns && str(o.metadata?.name) === name)[0];
    if (!svc) return `service "${name}" not found`;
    const sp = arr(obj(svc.spec).ports)
      .map(obj)
      .find((p) => p.port === port);
    if (!sp) return `service "${name}" does not have a port ${port}`;
    const portName = str(sp.name);
    const candidates = (this.caches
      .get(this.kinds.storageResource(slices))
      ?.list(
        (o) =>
          str(o.metadata?.namespace) === ns && obj(o.metadata?.labels)['kubernetes.io/service-name'] === name,
      ) ?? []) as KObject[];
    for (const slice of candidates) {
      if (str(slice.addressType) !== 'IPv4') continue;
      const p = arr(slice.ports)
        .map(obj)
        .find((x) => str(x.name) === portName);
      if (!p || typeof p.port !== 'number') continue;
      for (const e of arr(slice.endpoints).map(obj)) {
        if (obj(e.conditions).ready === false) continue;
        const address = str(arr(e.addresses)[0]);
        if (address) return { address, port: p.port };
      }
    }
    return `no endpoints available for service "${name}"`;
  }

  /** POSTs the review and parses the answer; errors say what the Go client would. */
  private post(hook: Webhook, body: Buffer, retried = false): Promise<unknown> {
    const timeoutSeconds = hook.timeoutSeconds ?? 10;
    const { url, connectTo, servername } = this.endpoint(hook, timeoutSeconds);
    const ca = hook.clientConfig.caBundle ? Buffer.from(hook.clientConfig.caBundle, 'base64') : undefined;
    const where = `Post "${url.toString()}"`;
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        {
          host: connectTo ?? url.hostname.replace(/^\[|\]$/g, ''),
          port: url.port || 443,
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          ...(ca ? { ca } : {}),
          ...(servername ? { servername } : {}),
          headers: {
            'Content-Type': 'application/json',
            Accept: 'application/json',
            'Content-Length': body.length,
            Host: url.host,
          },
          agent: this.agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_RESPONSE_BYTES) {
              req.destroy(new Error(`failed to call webhook: ${where}: response body too large`));
              return;
            }
            chunks.push(c);
          });
          res.on('end', () => {
            clearTimeout(timer);
            const text = Buffer.concat(chunks).toString('utf8');
            if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) >= 300) {
              reject(
                new Error(
                  `failed to call webhook: the server responded with the status code ${res.statusCode} but did not return more information`,
                ),
              );
              return;
            }
            try {
              resolve(JSON.parse(text));
            } catch (err) {
              reject(new Error(`received invalid webhook response: ${(err as Error).message}`));
            }
          });
          res.on('error', (err) => reject(new Error(`failed to call webhook: ${where}: ${err.message}`)));
        },
      );
      const timer = setTimeout(() => {
        req.destroy(new Error('context deadline exceeded'));
      }, timeoutSeconds * 1000);
      req.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        // A kept connection the webhook closed meanwhile: once more on a new one (the
        // request never reached it), as Go's client does for an idle connection.
        if (!retried && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
          this.post(hook, body, true).then(resolve, reject);
          return;
        }
        const msg = err.message.startsWith('failed to call webhook')
          ? err.message
          : `failed to call webhook: ${where}: ${err.message}`;
        reject(new Error(msg));
      });
      req.end(body);
    });
  }
}

/** A refusal, as Kubernetes' webhookerrors.ToStatusErr words it. */
function denied(webhook: string, result: Record<string, unknown>): StatusError {
  const by = `admission webhook "${webhook}" denied the request`;
  const code = typeof result.code === 'number' && result.code >= 400 ? result.code : 400;
  const message = str(result.message)
    ? `${by}: ${str(result.message)}`
    : str(result.reason)
      ? `${by}: ${str(result.reason)}`
      : `${by} without explanation`;
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    ...(str(result.reason) ? { reason: str(result.reason) } : {}),
    ...(result.details ? { details: result.details } : {}),
    code,
  } as StatusError['status']);
}

/** Makes `target` equal to `source` keeping its identity (and its metadata object's), as callers hold both. */
function replaceContents(target: KObject, source: KObject): void {
  const m = target.metadata;
  for (const k of Object.keys(target)) if (k !== 'metadata') delete (target as Record<string, unknown>)[k];
  for (const [k, v] of Object.entries(source))
    if (k !== 'metadata') (target as Record<string, unknown>)[k] = v;
  if (m) {
    for (const k of Object.keys(m)) delete m[k];
    Object.assign(m, source.metadata ?? {});
  } else target.metadata = source.metadata;
}
