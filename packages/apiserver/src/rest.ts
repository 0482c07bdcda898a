// The REST verbs over the storage layer, generic over kinds: create, get,
// list, update, patch, delete, deletecollection (watch is in watch.ts).
import { randomUUID } from 'node:crypto';
import {
  alreadyExists,
  badRequest,
  conflict,
  expired,
  fieldErrors,
  invalid,
  methodNotSupported,
  notFound,
  StatusError,
  successStatus,
} from '@kubit/api';
import type { Logger } from '@kubit/daemon';
import { checkNamespaceForCreate, IMMORTAL_NAMESPACES, nodeRestriction } from './admission.js';
import type { UserInfo } from './authn.js';
import { selectorText } from './kinds/apps.js';
import type { KindRegistry } from './kinds/index.js';
import { arr, groupVersion, type KindDef, obj, str } from './kinds/types.js';
import { jsonPatch, mergePatch, strategicMergePatch } from './model/patch.js';
import { conform, schemas } from './model/schema.js';
import { parseFieldSelector, parseLabelSelector } from './model/selectors.js';
import {
  decodeObject,
  type FieldValidation,
  generateNameSuffix,
  keepSystemMetadata,
  nowRfc3339,
  parseFieldValidation,
  sameIgnoringVersion,
  sameJson,
  validateChange,
  validateNew,
} from './objects.js';
import {
  BODY_MEDIA_TYPES,
  bodyFormat,
  PATCH_MEDIA_TYPES,
  parseBody,
  parseResourceVersion,
  queryInt,
  queryString,
  type ResourceRequest,
} from './request.js';
import { CompactedError, type KObject, type Store, type StoredObject } from './storage.js';
import type { Filter, WatchCache } from './watchcache.js';

export interface Ctx {
  user: UserInfo;
  query: Record<string, unknown>;
  body: Buffer | undefined;
  contentType: string | undefined;
  warnings: string[];
}

export interface Result {
  code: number;
  body: unknown;
}

function gr(def: KindDef) {
  return { group: def.group, resource: def.resource };
}

export class Rest {
  constructor(
    readonly store: Store,
    readonly kinds: KindRegistry,
    readonly caches: Map<string, WatchCache>,
    readonly log: Logger,
  ) {}

  cacheFor(def: KindDef): WatchCache {
    const c = this.caches.get(this.kinds.storageResource(def));
    if (!c) throw new Error(`no watch cache for ${def.resource}`);
    return c;
  }

  key(def: KindDef, ns: string, name: string): string {
    const sr = this.kinds.storageResource(def);
    return def.namespaced ? `/registry/${sr}/${ns}/${name}` : `/registry/${sr}/${name}`;
  }

  /** The watch cache's copy of `key` (stored form, shared: never mutate it), or null. */
  cachedObject(def: KindDef, key: string): StoredObject | null {
    const o = this.caches.get(this.kinds.storageResource(def))?.objects.get(key);
    const rev = o ? Number(o.metadata?.resourceVersion ?? 0) : 0;
    // Our own newer write whose event is still on its way beats the cache's copy.
    const own = this.store.written.newerThan(key, rev);
    if (own) return { key, obj: own.obj, rev: own.rev };
    return o && rev > 0 ? { key, obj: o, rev } : null;
  }

  prefix(def: KindDef, ns: string): string {
    const sr = this.kinds.storageResource(def);
    return def.namespaced && ns ? `/registry/${sr}/${ns}/` : `/registry/${sr}/`;
  }

  /** The stored form as this kind's version shows it. */
  out(def: KindDef, o: KObject): KObject {
    const x = def.fromStorage ? def.fromStorage(o) : { ...o };
    x.apiVersion = groupVersion(def);
    x.kind = def.kind;
    return x;
  }

  in(def: KindDef, o: KObject): KObject {
    return def.toStorage ? def.toStorage(o) : o;
  }

  // ---------- selectors ----------

  filterFor(def: KindDef, ns: string, query: Record<string, unknown>): Filter {
    const labels = parseLabelSelector(queryString(query, 'labelSelector') ?? '');
    const fields = parseFieldSelector(queryString(query, 'fieldSelector') ?? '');
    const known = new Set(['metadata.name', 'metadata.namespace']);
    const sample = def.fields?.({}) ?? {};
    for (const k of Object.keys(sample)) known.add(k);
    for (const f of fields.requirements) {
      if (!known.has(f.field)) throw badRequest(`field label not supported: ${f.field}`);
    }
    const prefixNs = def.namespaced ? ns : '';
    return (o: KObject) => {
      const m = o.metadata ?? {};
      if (prefixNs && m.namespace !== prefixNs) return false;
      if (!labels.empty() && !labels.matches(m.labels as Record<string, string> | undefined)) return false;
      if (fields.empty()) return true;
      const all: Record<string, string> = {
        'metadata.name': str(m.name),
        'metadata.namespace': str(m.namespace),
        ...(def.fields?.(o) ?? {}),
      };
      return fields.matches(all);
    };
  }

  // ---------- get / list ----------

  async get(def: KindDef, ri: ResourceRequest): Promise<Result> {
    const rv = queryString({}, 'x');
    void rv;
    const cur = await this.store.get(this.key(def, ri.namespace, ri.name));
    if (!cur) throw notFound(gr(def), ri.name);
    return { code: 200, body: this.out(def, cur.obj) };
  }

  async list(
    def: KindDef,
    ri: ResourceRequest,
    ctx: Ctx,
  ): Promise<{ items: KObject[]; meta: Record<string, unknown> }> {
    const q = ctx.query;
    const filter = this.filterFor(def, ri.namespace, q);
    const rvText = queryString(q, 'resourceVersion');
    const rv = parseResourceVersion(rvText);
    const match = queryString(q, 'resourceVersionMatch') ?? '';
    const limit = queryInt(q, 'limit') ?? 0;
    if (limit < 0) throw badRequest(`limit must be non-negative, not ${limit}`);
    const cont = queryString(q, 'continue') ?? '';
    if (match && !['Exact', 'NotOlderThan'].includes(match)) {
      throw invalid({ group: 'meta.k8s.io', kind: 'ListOptions' }, '', [
        fieldErrors.notSupported('resourceVersionMatch', match, ['Exact', 'NotOlderThan']),
      ]);
    }
    if (match && rv === undefined) {
      throw invalid({ group: 'meta.k8s.io', kind: 'ListOptions' }, '', [
        fieldErrors.forbidden(
          'resourceVersionMatch',
          'resourceVersionMatch is forbidden unless resourceVersion is provided',
        ),
      ]);
    }
    if (match === 'Exact' && rv === 0) {
      throw invalid({ group: 'meta.k8s.io', kind: 'ListOptions' }, '', [
        fieldErrors.forbidden(
          'resourceVersionMatch',
          'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
      ]);
    }
    if (cont && rvText !== undefined && rvText !== '') {
      throw invalid({ group: 'meta.k8s.io', kind: 'ListOptions' }, '', [
        fieldErrors.forbidden(
          'resourceVersion',
          'specifying resource version is not allowed when using continue',
        ),
      ]);
    }
    const cache = this.cacheFor(def);
    // resourceVersion=0 (any version is fine): served from the watch cache.
    if (rv === 0 && !cont) {
      const items = cache.list(filter).map((o) => this.out(def, o));
      return { items, meta: { resourceVersion: String(cache.rev) } };
    }
    const prefix = this.prefix(def, ri.namespace);
    let revision = match === 'Exact' ? (rv ?? 0) : 0;
    let startKey = prefix;
    if (cont) {
      const tok = decodeContinue(cont, prefix);
      revision = tok.rv;
      startKey = tok.start;
    }
    const items: KObject[] = [];
    let more = false;
    let nextStart = '';
    let readRev = revision;
    try {
      for (;;) {
        const chunk = limit > 0 ? Math.max(limit - items.length, 50) : 0;
        const r = await this.store.range(prefix, { startKey, limit: chunk, revision: readRev });
        if (readRev === 0) readRev = r.revision;
        for (let i = 0; i < r.items.length; i++) {
          const it = r.items[i];
          if (filter(it.obj)) items.push(this.out(def, it.obj));
          if (limit > 0 && items.length >= limit) {
            const remaining = i < r.items.length - 1 || r.more;
            if (remaining) {
              more = true;
              nextStart = `${it.key}\u0000`;
            }
            break;
          }
        }
        if (more || !r.more || (limit > 0 && items.length >= limit)) break;
        startKey = `${r.items[r.items.length - 1].key}\u0000`;
      }
    } catch (err) {
      if (err instanceof CompactedError) {
        throw expired(
          cont
            ? 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.'
            : `too old resource version: ${rv}`,
        );
      }
      throw err;
    }
    if (match === 'NotOlderThan' && rv !== undefined && readRev < rv) {
      throw expired(`too large resource version: ${rv}, current: ${readRev}`);
    }
    const meta: Record<string, unknown> = { resourceVersion: String(readRev) };
    if (more) meta.continue = encodeContinue(readRev, nextStart);
    return { items, meta };
  }

  listObject(def: KindDef, items: KObject[], meta: Record<string, unknown>): KObject {
    return { kind: `${def.kind}List`, apiVersion: groupVersion(def), metadata: meta, items };
  }

  // ---------- create ----------

  decodeForWrite(def: KindDef, ctx: Ctx, fv: FieldValidation): KObject {
    const format = bodyFormat(ctx.contentType, BODY_MEDIA_TYPES);
    return decodeObject(def, parseBody(ctx.body, format, def.kind), fv, ctx.warnings);
  }

  async create(def: KindDef, ri: ResourceRequest, ctx: Ctx, namespaces: WatchCache): Promise<Result> {
    if (ri.name) throw methodNotSupported(gr(def), 'create');
    const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
    const dryRun = isDryRun(ctx.query);
    const o = this.decodeForWrite(def, ctx, fv);
    const m = o.metadata!;
    if (def.namespaced) {
      if (m.namespace !== undefined && m.namespace !== '' && m.namespace !== ri.namespace) {
        throw badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      if (!ri.namespace) throw badRequest(`${def.resource} must be created in a namespace`);
      m.namespace = ri.namespace;
    } else delete m.namespace;
    if (m.resourceVersion !== undefined && m.resourceVersion !== '') {
      throw badRequest('resourceVersion should not be set on objects to be created');
    }
    if (!m.name && typeof m.generateName === 'string' && m.generateName) {
      m.name = `${m.generateName}${generateNameSuffix()}`;
    }
    def.prepareForCreate?.(o);
    def.defaults?.(o);
    m.uid = randomUUID();
    m.creationTimestamp = nowRfc3339();
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    delete m.selfLink;
    if (def.generation) m.generation = 1;
    else delete m.generation;
    validateNew(def, o);
    if (def.namespaced) await checkNamespaceForCreate(def, ri.namespace, namespaces, this.store);
    nodeRestriction(ctx.user, def, '', 'create', str(m.name), undefined, o);
    if (dryRun) return { code: 201, body: this.out(def, o) };
    const r = await this.store.create(this.key(def, ri.namespace, str(m.name)), this.in(def, o));
    if (!r.ok) throw alreadyExists(gr(def), str(m.name));
    m.resourceVersion = String(r.rev);
    return { code: 201, body: this.out(def, o) };
  }

  // ---------- update / patch ----------

  /**
   * Reads the object, lets `change` produce the new one, checks and writes it
   * guarded on the read revision. Without a client-supplied resourceVersion a
   * lost race is retried; with one it is a 409.
   */
  async updateWith(
    def: KindDef,
    ri: ResourceRequest,
    ctx: Ctx,
    change: (current: KObject) => KObject,
  ): Promise<Result> {
    const key = this.key(def, ri.namespace, ri.name);
    const sub = ri.subresource;
    const dryRun = isDryRun(ctx.query);
    // The first attempt starts from a copy of the watch cache's object, saving the
    // store a quorum read: the write is guarded on its revision, so a stale copy
    // costs a failed guard, never a wrong write. Anything decided on the cached copy
    // that ends the request (a refusal, a conflict, "nothing changed") is decided
    // again on a copy read from the store.
    let cached = dryRun ? null : this.cachedObject(def, key);
    for (let attempt = 0; ; attempt++) {
      const fromCache = cached !== null;
      const cur = cached ? { ...cached, obj: structuredClone(cached.obj) } : await this.store.get(key);
      cached = null;
      if (!cur) throw notFound(gr(def), ri.name);
      try {
        const currentOut = this.out(def, cur.obj);
        // `change` sees the object without its resourceVersion, so a resourceVersion in
        // what it returns came from the client (a PUT body, or a patch that sets one) and
        // is a precondition; a patch without one is retried on a write race, not refused.
        const draft = structuredClone(currentOut);
        if (draft.metadata) delete draft.metadata.resourceVersion;
        const next = change(draft);
        next.metadata ??= {};
        const m = next.metadata;
        if (m.name !== undefined && m.name !== ri.name) {
          throw badRequest(
            `the name of the object (${str(m.name)}) does not match the name on the URL (${ri.name})`,
          );
        }
        if (
          def.namespaced &&
          m.namespace !== undefined &&
          m.namespace !== '' &&
          m.namespace !== ri.namespace
        ) {
          throw badRequest(
            'the namespace of the provided object does not match the namespace sent on the request',
          );
        }
        m.name = ri.name;
        if (def.namespaced) m.namespace = ri.namespace;
        else delete m.namespace;
        const clientRv = parseResourceVersion(
          str(m.resourceVersion) || undefined,
          'metadata.resourceVersion',
        );
        if (clientRv !== undefined && clientRv !== cur.rev) throw conflict(gr(def), ri.name);
        // A uid in the body is a precondition too, as in Kubernetes: a kubelet's status for a
        // pod deleted and recreated under the same name must not land on the new pod.
        const storedUid = str(currentOut.metadata?.uid);
        if (str(m.uid) && m.uid !== storedUid) {
          throw conflict(
            gr(def),
            ri.name,
            `Precondition failed: UID in precondition: ${str(m.uid)}, UID in object meta: ${storedUid}`,
          );
        }
        keepSystemMetadata(next, currentOut);
        if (sub === 'status') def.prepareForStatusUpdate?.(next, currentOut);
        else if (sub === 'finalize') {
          // finalize changes spec.finalizers and nothing else.
          const fins = obj(next.spec).finalizers;
          Object.assign(next, structuredClone(currentOut));
          for (const k of Object.keys(m)) delete m[k];
          Object.assign(m, structuredClone(currentOut.metadata ?? {}));
          next.metadata = m;
          next.spec = { ...obj(currentOut.spec), finalizers: fins };
        } else def.prepareForUpdate?.(next, currentOut);
        def.defaults?.(next);
        if (def.generation && sub !== 'status' && !sameJson(next.spec, currentOut.spec)) {
          m.generation = Number(currentOut.metadata?.generation ?? 0) + 1;
        }
        validateChange(def, next, currentOut);
        nodeRestriction(ctx.user, def, sub, ri.verb, ri.name, currentOut, next);
        m.resourceVersion = String(cur.rev);
        if (sameIgnoringVersion(next, currentOut)) {
          if (fromCache) continue;
          return { code: 200, body: currentOut };
        }
        if (dryRun) return { code: 200, body: next };
        // The last finalizer of an object being deleted is gone: the delete completes.
        const nm = next.metadata ?? {};
        const fins = arr(nm.finalizers);
        const waiting =
          (def.resource === 'pods' && Number(nm.deletionGracePeriodSeconds ?? 0) > 0) ||
          (def.resource === 'namespaces' && arr(obj(next.spec).finalizers).length > 0);
        if (nm.deletionTimestamp && fins.length === 0 && !waiting) {
          const d = await this.store.delete(key, cur.rev);
          if (d.ok) {
            nm.resourceVersion = String(d.rev);
            return { code: 200, body: next };
          }
        } else {
          const w = await this.store.update(key, this.in(def, next), cur.rev);
          if (w.ok) {
            m.resourceVersion = String(w.rev);
            return { code: 200, body: next };
          }
        }
        if (fromCache) continue;
        if (clientRv !== undefined || attempt >= 5) throw conflict(gr(def), ri.name);
      } catch (err) {
        if (fromCache) continue;
        throw err;
      }
    }
  }

  async update(def: KindDef, ri: ResourceRequest, ctx: Ctx): Promise<Result> {
    const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
    const incoming = this.decodeForWrite(def, ctx, fv);
    return this.updateWith(def, ri, ctx, (current) => {
      if (ri.subresource === 'status') return { ...incoming, metadata: { ...incoming.metadata } };
      void current;
      return incoming;
    });
  }

  async patch(def: KindDef, ri: ResourceRequest, ctx: Ctx, namespaces: WatchCache): Promise<Result> {
    const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
    const format = bodyFormat(ctx.contentType, PATCH_MEDIA_TYPES);
    const patch = parseBody(ctx.body, format);
    if (format === 'apply') {
      const force = queryString(ctx.query, 'force') === 'true';
      void force;
      if (!queryString(ctx.query, 'fieldManager')) {
        throw badRequest('PATCH, application/apply-patch+yaml requires fieldManager to be set');
      }
      const exists = await this.store.get(this.key(def, ri.namespace, ri.name));
      if (!exists) {
        const body = Buffer.from(JSON.stringify(patch));
        return this.create(
          def,
          { ...ri, name: '' },
          { ...ctx, body, contentType: 'application/json' },
          namespaces,
        );
      }
    }
    return this.updateWith(def, ri, ctx, (current) =>
      decodeObject(def, applyPatchOfFormat(format, current, patch), fv, ctx.warnings),
    );
  }

  // ---------- delete ----------

  deleteOptions(ctx: Ctx): { grace?: number; policy: string; uid?: string; rv?: string } {
    let opts: Record<string, unknown> = {};
    if (ctx.body && ctx.body.length > 0 && ctx.body.toString().trim() !== '') {
      const raw = parseBody(ctx.body, bodyFormat(ctx.contentType, BODY_MEDIA_TYPES), 'DeleteOptions');
      const probs = { unknown: [], types: [] as string[] };
      opts = conform(raw, schemas.deleteOptions, '', probs) as Record<string, unknown>;
      if (probs.types.length > 0 || typeof opts !== 'object' || opts === null) {
        throw badRequest(
          `DeleteOptions cannot be decoded: ${probs.types[0] ?? 'the body must be a JSON object'}`,
        );
      }
    }
    const qGrace = queryInt(ctx.query, 'gracePeriodSeconds');
    const grace =
      qGrace ?? (typeof opts.gracePeriodSeconds === 'number' ? opts.gracePeriodSeconds : undefined);
    let policy = queryString(ctx.query, 'propagationPolicy') ?? str(opts.propagationPolicy);
    if (opts.orphanDependents === true || queryString(ctx.query, 'orphanDependents') === 'true')
      policy = policy || 'Orphan';
    if (policy && !['Orphan', 'Background', 'Foreground'].includes(policy)) {
      throw invalid({ group: 'meta.k8s.io', kind: 'DeleteOptions' }, '', [
        fieldErrors.notSupported('propagationPolicy', policy, ['Foreground', 'Background', 'Orphan']),
      ]);
    }
    if (grace !== undefined && grace < 0) {
      throw invalid({ group: 'meta.k8s.io', kind: 'DeleteOptions' }, '', [
        fieldErrors.invalid('gracePeriodSeconds', grace, 'must be greater than or equal to 0'),
      ]);
    }
    const pre = obj(opts.preconditions);
    return {
      grace,
      policy: policy || 'Background',
      uid: typeof pre.uid === 'string' ? pre.uid : undefined,
      rv: typeof pre.resourceVersion === 'string' ? pre.resourceVersion : undefined,
    };
  }

  async delete(def: KindDef, ri: ResourceRequest, ctx: Ctx): Promise<Result> {
    const opts = this.deleteOptions(ctx);
    return this.deleteOne(def, ri.namespace, ri.name, opts, ctx);
  }

  async deleteOne(
    def: KindDef,
    ns: string,
    name: string,
    opts: { grace?: number; policy: string; uid?: string; rv?: string },
    ctx: Ctx,
  ): Promise<Result> {
    const key = this.key(def, ns, name);
    const dryRun = isDryRun(ctx.query);
    if (def.resource === 'namespaces' && IMMORTAL_NAMESPACES.includes(name)) {
      throw new StatusError({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `namespaces "${name}" is forbidden: this namespace may not be deleted`,
        reason: 'Forbidden',
        details: { name, kind: 'namespaces' },
        code: 403,
      });
    }
    for (let attempt = 0; ; attempt++) {
      const cur = await this.store.get(key);
      if (!cur) throw notFound(gr(def), name);
      const o = this.out(def, cur.obj);
      o.metadata ??= {};
      const m = o.metadata;
      if (opts.uid !== undefined && opts.uid !== m.uid) {
        throw conflict(
          gr(def),
          name,
          `Precondition failed: UID in precondition: ${opts.uid}, UID in object meta: ${str(m.uid)}`,
        );
      }
      if (opts.rv !== undefined && opts.rv !== String(cur.rev)) {
        throw conflict(
          gr(def),
          name,
          `Precondition failed: ResourceVersion in precondition: ${opts.rv}, ResourceVersion in object meta: ${cur.rev}`,
        );
      }
      nodeRestriction(ctx.user, def, '', 'delete', name, o, undefined);
      const plan = this.deletionPlan(def, o, opts);
      if (dryRun) return { code: 200, body: o };
      let w: Awaited<ReturnType<Store['delete']>>;
      if (plan === 'now') {
        w = await this.store.delete(key, cur.rev);
        if (w.ok) {
          m.resourceVersion = String(w.rev);
          return { code: 200, body: o };
        }
      } else if (plan === 'unchanged') {
        return { code: 202, body: o };
      } else {
        w = await this.store.update(key, this.in(def, plan), cur.rev);
        if (w.ok) {
          plan.metadata!.resourceVersion = String(w.rev);
          if (def.resource === 'namespaces') {
            // NamespaceLifecycle admission reads namespaces from the cache: once the client
            // hears "Terminating", a create in the namespace through this apiserver is refused.
            await this.cacheFor(def).waitForRevision(w.rev);
            return { code: 200, body: plan };
          }
          return { code: 202, body: plan };
        }
      }
      if (opts.rv !== undefined || attempt >= 5) throw conflict(gr(def), name);
    }
  }

  /**
   * What a delete does to an object: remove it now, or mark it (deletionTimestamp)
   * and leave the rest to its kubelet, its finalizers or the namespace controller.
   */
  private deletionPlan(
    def: KindDef,
    o: KObject,
    opts: { grace?: number; policy: string },
  ): KObject | 'now' | 'unchanged' {
    const m = o.metadata ?? {};
    const marked = structuredClone(o);
    const mm = marked.metadata!;
    const fins = arr(mm.finalizers).map(str);
    const now = Date.now();
    if (def.resource === 'namespaces') {
      if (mm.deletionTimestamp) return 'unchanged';
      mm.deletionTimestamp = nowRfc3339(now);
      mm.deletionGracePeriodSeconds = 0;
      marked.status = { ...obj(marked.status), phase: 'Terminating' };
      return marked;
    }
    if (opts.policy === 'Foreground' && !fins.includes('foregroundDeletion')) fins.push('foregroundDeletion');
    if (opts.policy === 'Orphan' && !fins.includes('orphan')) fins.push('orphan');
    if (fins.length > 0) mm.finalizers = fins;
    let grace = 0;
    if (def.resource === 'pods') {
      const spec = obj(o.spec);
      const phase = str(obj(o.status).phase);
      const bound = str(spec.nodeName) !== '';
      grace = opts.grace ?? Number(spec.terminationGracePeriodSeconds ?? 30);
      // Nothing runs an unbound or finished pod: there is nothing to wait for.
      if (!bound || phase === 'Succeeded' || phase === 'Failed') grace = 0;
      const prevGrace =
        typeof m.deletionGracePeriodSeconds === 'number' ? m.deletionGracePeriodSeconds : undefined;
      if (prevGrace !== undefined && grace > prevGrace) grace = prevGrace;
    }
    if (grace === 0 && fins.length === 0) return 'now';
    if (
      mm.deletionTimestamp &&
      mm.deletionGracePeriodSeconds === grace &&
      JSON.stringify(fins) === JSON.stringify(arr(m.finalizers))
    ) {
      return 'unchanged';
    }
    if (!mm.deletionTimestamp || grace < Number(mm.deletionGracePeriodSeconds ?? Number.MAX_SAFE_INTEGER)) {
      mm.deletionTimestamp = nowRfc3339(now + grace * 1000);
    }
    mm.deletionGracePeriodSeconds = grace;
    if (def.generation) mm.generation = Number(mm.generation ?? 0) + 1;
    return marked;
  }

  async deleteCollection(def: KindDef, ri: ResourceRequest, ctx: Ctx): Promise<Result> {
    const opts = this.deleteOptions(ctx);
    const { items, meta } = await this.list(def, ri, {
      ...ctx,
      query: { ...ctx.query, limit: undefined, continue: undefined },
    });
    const deleted: KObject[] = [];
    for (const it of items) {
      const m = it.metadata ?? {};
      try {
        const r = await this.deleteOne(def, str(m.namespace), str(m.name), opts, ctx);
        deleted.push(r.body as KObject);
      } catch (err) {
        if (!(err instanceof StatusError && err.code === 404)) throw err;
      }
    }
    return { code: 200, body: this.listObject(def, deleted, meta) };
  }

  // ---------- scale (autoscaling/v1 Scale over spec.replicas) ----------

  /** The Scale view of a scalable object: desired replicas, observed replicas and the pod selector. */
  toScale(o: KObject): KObject {
    const m = o.metadata ?? {};
    return {
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      // Only the fields the object has: a patch sees no resourceVersion unless it sets one.
      metadata: Object.fromEntries(
        Object.entries({
          name: m.name,
          namespace: m.namespace,
          uid: m.uid,
          resourceVersion: m.resourceVersion,
          creationTimestamp: m.creationTimestamp,
        }).filter(([, v]) => v !== undefined),
      ),
      spec: { replicas: Number(obj(o.spec).replicas ?? 0) },
      status: { replicas: Number(obj(o.status).replicas ?? 0), selector: selectorText(o) },
    };
  }

  async getScale(def: KindDef, ri: ResourceRequest): Promise<Result> {
    const r = await this.get(def, ri);
    return { code: 200, body: this.toScale(r.body as KObject) };
  }

  /** PUT or PATCH of .../scale: only spec.replicas of the object changes. */
  async updateScale(def: KindDef, ri: ResourceRequest, ctx: Ctx): Promise<Result> {
    const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
    const isPatch = ri.verb === 'patch';
    const format = bodyFormat(ctx.contentType, isPatch ? PATCH_MEDIA_TYPES : BODY_MEDIA_TYPES);
    const body = parseBody(ctx.body, format, 'Scale');
    const r = await this.updateWith(def, ri, ctx, (current) => {
      const raw = isPatch ? applyPatchOfFormat(format, this.toScale(current), body) : body;
      const scale = decodeObject(SCALE_DEF, raw, fv, ctx.warnings);
      const replicas = obj(scale.spec).replicas;
      if (typeof replicas === 'number' && replicas < 0) {
        throw invalid({ group: 'autoscaling', kind: 'Scale' }, ri.name, [
          fieldErrors.invalid('spec.replicas', replicas, 'must be greater than or equal to 0'),
        ]);
      }
      const sm = scale.metadata ?? {};
      if (sm.name !== undefined && sm.name !== ri.name) {
        throw badRequest(
          `the name of the object (${str(sm.name)}) does not match the name on the URL (${ri.name})`,
        );
      }
      current.spec = { ...obj(current.spec), replicas: typeof replicas === 'number' ? replicas : 0 };
      current.metadata ??= {};
      // A client-supplied resourceVersion on the Scale is a precondition on the object.
      if (str(sm.resourceVersion)) current.metadata.resourceVersion = sm.resourceVersion;
      return current;
    });
    return { code: r.code, body: this.toScale(r.body as KObject) };
  }

  // ---------- pods/binding ----------

  async bind(ri: ResourceRequest, ctx: Ctx, podDef: KindDef): Promise<Result> {
    const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
    const raw = parseBody(ctx.body, bodyFormat(ctx.contentType, BODY_MEDIA_TYPES), 'Binding');
    const bindingDef = bindingDefOf(podDef);
    const b = decodeObject(bindingDef, raw, fv, ctx.warnings);
    const podName = ri.name || str(b.metadata?.name);
    if (ri.name && b.metadata?.name && b.metadata.name !== ri.name) {
      throw badRequest(
        `the name of the object (${str(b.metadata.name)}) does not match the name on the URL (${ri.name})`,
      );
    }
    const target = obj(b.target);
    const node = str(target.name);
    if (!node) {
      throw invalid({ group: '', kind: 'Binding' }, podName, [fieldErrors.required('target.name')]);
    }
    if (target.kind !== undefined && target.kind !== '' && target.kind !== 'Node') {
      throw invalid({ group: '', kind: 'Binding' }, podName, [
        fieldErrors.notSupported('target.kind', target.kind, ['Node']),
      ]);
    }
    const podRi: ResourceRequest = { ...ri, resource: 'pods', name: podName, subresource: 'binding' };
    const key = this.key(podDef, ri.namespace, podName);
    // Start from the watch cache's copy: the write is guarded on its revision, so a
    // stale copy costs a failed guard (whose reply carries the current object), never
    // a wrong write; this saves the store a read per binding. A refusal is only ever
    // decided on a copy read from the store itself.
    const dryRun = isDryRun(ctx.query);
    let cur = dryRun ? null : this.cachedObject(podDef, key);
    let fresh = false;
    for (let conflicts = 0; ; ) {
      if (!cur) {
        cur = await this.store.get(key);
        fresh = true;
      }
      if (!cur) throw notFound({ group: '', resource: 'pods' }, podName);
      const refusal = bindingRefusal(cur.obj, podName, str(b.metadata?.uid));
      if (refusal) {
        if (fresh) throw refusal;
        cur = null;
        continue;
      }
      if (dryRun) break;
      // A new object sharing what the binding leaves alone: the cached copy is never mutated.
      const pod: KObject = {
        ...cur.obj,
        spec: { ...obj(cur.obj.spec), nodeName: node },
        status: withPodScheduled(obj(cur.obj.status)),
      };
      const w = await this.store.update(key, pod, cur.rev);
      if (w.ok) break;
      if (++conflicts >= 5) throw conflict({ group: '', resource: 'pods' }, podName);
      // The failed guard's reply holds the object as it is now (null: deleted meanwhile).
      cur = w.current;
      fresh = true;
    }
    void podRi;
    return { code: 201, body: successStatus() };
  }
}

/** The Binding body's kind, derived once per pod kind (it was a copy per request). */
const bindingDefs = new WeakMap<KindDef, KindDef>();
function bindingDefOf(podDef: KindDef): KindDef {
  let d = bindingDefs.get(podDef);
  if (!d) {
    d = { ...podDef, kind: 'Binding', schema: schemas.binding };
    bindingDefs.set(podDef, d);
  }
  return d;
}

/** Why a pod cannot be bound (a 409 Status), or null when it can. */
function bindingRefusal(pod: KObject, podName: string, wantUid: string): StatusError | null {
  const meta = pod.metadata ?? {};
  const gr = { group: '', resource: 'pods' };
  if (wantUid && wantUid !== meta.uid) {
    return conflict(
      gr,
      podName,
      `Precondition failed: UID in precondition: ${wantUid}, UID in object meta: ${str(meta.uid)}`,
    );
  }
  if (meta.deletionTimestamp) {
    return conflict(gr, podName, `pod ${podName} is being deleted, cannot be assigned to a host`);
  }
  const nodeName = str(obj(pod.spec).nodeName);
  if (nodeName) return conflict(gr, podName, `pod ${podName} is already assigned to node "${nodeName}"`);
  return null;
}

/** The pod's status with PodScheduled=True (a new object; `status` is left as it was). */
function withPodScheduled(status: Record<string, unknown>): Record<string, unknown> {
  const conditions = arr(status.conditions)
    .map(obj)
    .filter((c) => c.type !== 'PodScheduled');
  conditions.push({
    type: 'PodScheduled',
    status: 'True',
    lastProbeTime: null,
    lastTransitionTime: nowRfc3339(),
  });
  return { ...status, conditions };
}

/** The Scale subresource's body, decoded like a kind (unknown fields, wrong types). */
const SCALE_DEF: Pick<KindDef, 'group' | 'version' | 'kind' | 'schema'> = {
  group: 'autoscaling',
  version: 'v1',
  kind: 'Scale',
  schema: schemas.scale,
};

function applyPatchOfFormat(format: string, current: KObject, patch: unknown): unknown {
  switch (format) {
    case 'merge':
    case 'apply':
      if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
        throw badRequest('a merge patch must be a JSON object');
      }
      return mergePatch(current, patch);
    case 'strategic':
      return strategicMergePatch(current, patch);
    case 'jsonpatch':
      return jsonPatch(current, patch);
    default:
      throw badRequest(`unsupported patch type ${format}`);
  }
}

function isDryRun(q: Record<string, unknown>): boolean {
  const v = queryString(q, 'dryRun');
  if (v === undefined || v === '') return false;
  if (v !== 'All') throw badRequest(`dryRun: Unsupported value: "${v}": supported values: "All"`);
  return true;
}

function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start })).toString('base64url');
}

function decodeContinue(token: string, prefix: string): { rv: number; start: string } {
  try {
    const t = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as {
      rv?: unknown;
      start?: unknown;
    };
    if (typeof t.rv === 'number' && t.rv > 0 && typeof t.start === 'string' && t.start.startsWith(prefix)) {
      return { rv: t.rv, start: t.start };
    }
  } catch {
    // fall through to the error below
  }
  throw badRequest('continue key is not valid: the continue token is malformed or belongs to another list');
}

export type { StoredObject };
