// The REST verbs over the storage layer, generic over kinds: create, get,
// list, update, patch, delete, deletecollection (watch is in watch.ts).

import { randomUUID } from 'node:crypto';
import {
  alreadyExists,
  badRequest,
  conflict,
  expired,
  fieldErrors,
  internalError,
  invalid,
  methodNotSupported,
  notFound,
  StatusError,
} from '@kubit/api';
import type { Logger } from '@kubit/daemon';
import type { AdmissionAttributes } from './admission/webhooks.js';
import { checkNamespaceForCreate, nodeRestriction } from './admission.js';
import type { UserInfo } from './authn.js';
import { applyConfiguration, recordUpdate, type Writer } from './fieldmanager/field-manager.js';
import { managerOf } from './fieldmanager/manager-name.js';
import type { KindRegistry } from './kinds/index.js';
import {
  arr,
  type Claim,
  type ClaimReader,
  type ClaimsDef,
  groupVersion,
  type KindDef,
  obj,
  str,
} from './kinds/types.js';
import { scanFields } from './model/duplicates.js';
import { applyPatchOfFormat } from './model/patch.js';
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
import { type DeleteOpts, deleteOptions, type OptionsKind, queryDryRun } from './options.js';
import {
  BODY_MEDIA_TYPES,
  bodyFormat,
  CUSTOM_PATCH_MEDIA_TYPES,
  PATCH_MEDIA_TYPES,
  parseBody,
  parseResourceVersion,
  queryInt,
  queryString,
  type ResourceRequest,
} from './request.js';
import { CompactedError, type KObject, type SideKeys, type Store, type StoredObject } from './storage.js';
import type { Filter, WatchCache } from './watchcache.js';

export interface Ctx {
  user: UserInfo;
  query: Record<string, unknown>;
  body: Buffer | undefined;
  contentType: string | undefined;
  warnings: string[];
  /** The request's User-Agent: the field manager of a write that names none. */
  userAgent?: string;
}

/** A server-side apply: whether it takes over other managers' fields. */
interface ApplyRequest {
  force: boolean;
  /** The applied configuration, decoded. */
  config: KObject;
}

/** An admission plugin's look at an object about to be created: it may change it or refuse it (throw). */
export type CreateAdmission = (def: KindDef, o: KObject, namespace: string) => Promise<void>;
/** The same for an update (`subresource` '' for the object itself): `next` replaces `current`. */
export type UpdateAdmission = (
  def: KindDef,
  subresource: string,
  next: KObject,
  current: KObject,
) => Promise<void>;

/** Admission by webhooks: mutating (changes `object` in place) and validating. */
export interface DynamicAdmission {
  mutate(a: AdmissionAttributes): Promise<void>;
  validate(a: AdmissionAttributes): Promise<void>;
}

/** The options object an AdmissionReview carries for a write. */
function writeOptions(kind: string, dryRun: boolean): Record<string, unknown> {
  return { kind, apiVersion: 'meta.k8s.io/v1', ...(dryRun ? { dryRun: ['All'] } : {}) };
}

export interface Result {
  code: number;
  body: unknown;
}

/** Tries of one write whose picked claims (a cluster IP, a node port) lost a race each time. */
const MAX_CLAIM_ATTEMPTS = 10;

export function gr(def: KindDef) {
  return { group: def.group, resource: def.resource };
}

export class Rest {
  constructor(
    readonly store: Store,
    readonly kinds: KindRegistry,
    readonly caches: Map<string, WatchCache>,
    readonly log: Logger,
    /** Mutating admission for creates (ServiceAccount, storage), run after defaults, before validation. */
    private readonly createAdmission: CreateAdmission[] = [],
    /** Admission for updates (claim resize), run after validation. */
    private readonly updateAdmission: UpdateAdmission[] = [],
    /** Admission webhooks: mutating after the built-in plugins, validating once the object is valid. */
    private readonly webhooks?: DynamicAdmission,
  ) {}

  /** How claims hooks read the store: straight from it, since a claim is decided there. */
  readonly claimReader: ClaimReader = {
    holder: async (key) => (await this.store.rawGet(key))?.value,
    keys: async (prefix) => (await this.store.rawRange(prefix)).entries.map((e) => e.key),
  };

  cacheFor(def: KindDef): WatchCache {
    return this.cacheOf(this.kinds.storageResource(def));
  }

  private cacheOf(storageResource: string): WatchCache {
    const c = this.caches.get(storageResource);
    if (!c) throw new Error(`no watch cache for ${storageResource}`);
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
    const raw = parseBody(ctx.body, format, def.kind);
    // Only JSON can hide a duplicate: YAML's parser refuses one, protobuf has none.
    const scan =
      format === 'json' && fv !== 'Ignore' && ctx.body ? scanFields(ctx.body.toString('utf8')) : undefined;
    return decodeObject(def, raw, fv, ctx.warnings, scan);
  }

  /** Who a write is recorded under in managedFields. */
  writer(def: KindDef, ri: ResourceRequest, ctx: Ctx, optionsKind: string): Writer {
    return {
      manager: managerOf(queryString(ctx.query, 'fieldManager'), ctx.userAgent, optionsKind),
      apiVersion: groupVersion(def),
      subresource: ri.subresource,
    };
  }

  async create(def: KindDef, ri: ResourceRequest, ctx: Ctx, apply?: ApplyRequest): Promise<Result> {
    if (ri.name && !apply) throw methodNotSupported(gr(def), 'create');
    const dryRun = queryDryRun(ctx.query, apply ? 'PatchOptions' : 'CreateOptions');
    const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
    const who = this.writer(def, ri, ctx, apply ? 'PatchOptions' : 'CreateOptions');
    const o = apply
      ? applyConfiguration(def, undefined, apply.config, who, apply.force, nowRfc3339())
      : this.decodeForWrite(def, ctx, fv);
    const m = o.metadata!;
    if (apply && m.name !== ri.name) {
      throw badRequest(
        `the name of the object (${str(m.name)}) does not match the name on the URL (${ri.name})`,
      );
    }
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
    // The uid comes first: a Job's generated selector and pod labels are made from it.
    m.uid = randomUUID();
    def.prepareForCreate?.(o);
    def.defaults?.(o);
    // Kubernetes records a create's fields once it is decoded and defaulted, before admission.
    if (!apply) recordUpdate(def, undefined, o, who, nowRfc3339());
    for (const admit of this.createAdmission) await admit(def, o, ri.namespace);
    const review: AdmissionAttributes = {
      def,
      subresource: '',
      operation: 'CREATE',
      namespace: ri.namespace,
      name: str(m.name),
      object: o,
      user: ctx.user,
      dryRun,
      options: writeOptions('CreateOptions', dryRun),
      warnings: ctx.warnings,
    };
    await this.webhooks?.mutate(review);
    m.creationTimestamp = nowRfc3339();
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    delete m.selfLink;
    if (def.generation) m.generation = 1;
    else delete m.generation;
    // A kind with claims is validated once they are assigned (a health check node port
    // that is required is picked first), as Kubernetes allocates before it validates.
    if (!def.claims) validateNew(def, o);
    if (def.namespaced)
      await checkNamespaceForCreate(def, ri.namespace, this.cacheOf('namespaces'), this.store);
    nodeRestriction(ctx.user, def, '', 'create', str(m.name), undefined, o);
    await this.webhooks?.validate(review);
    const key = this.key(def, ri.namespace, str(m.name));
    if (def.claims) return this.createClaiming(def, def.claims, o, key, dryRun);
    if (dryRun) {
      // What the write would find: an object already there is the same 409 a real create gets.
      if (await this.store.get(key)) throw alreadyExists(gr(def), str(m.name));
      return { code: 201, body: this.out(def, o) };
    }
    const r = await this.store.create(key, this.in(def, o));
    if (!r.ok) throw alreadyExists(gr(def), str(m.name));
    m.resourceVersion = String(r.rev);
    return { code: 201, body: this.out(def, o) };
  }

  /**
   * A create that claims keys beside its object, in the object's own Txn. A claim picked
   * for the object that another write took first is picked again; one the client asked
   * for is its 422.
   */
  private async createClaiming(
    def: KindDef,
    claimsDef: ClaimsDef,
    o: KObject,
    key: string,
    dryRun: boolean,
  ): Promise<Result> {
    const name = str(o.metadata?.name);
    for (let attempt = 0; ; attempt++) {
      const draft = structuredClone(o);
      const claims = await claimsDef.assign(draft, undefined, this.claimReader, attempt);
      validateNew(def, draft);
      if (dryRun) {
        if (await this.store.get(key)) throw alreadyExists(gr(def), name);
        return { code: 201, body: this.out(def, draft) };
      }
      const r = await this.store.create(key, this.in(def, draft), sideKeys([], claims));
      if (r.ok) {
        draft.metadata!.resourceVersion = String(r.rev);
        return { code: 201, body: this.out(def, draft) };
      }
      if (r.current) throw alreadyExists(gr(def), name);
      claimLost(claims, r.taken ?? [], attempt);
    }
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
    /** `change` applies a configuration and records its managed fields itself. */
    applied = false,
  ): Promise<Result> {
    const key = this.key(def, ri.namespace, ri.name);
    const sub = ri.subresource;
    const dryRun = queryDryRun(ctx.query, optionsKindOf(ri.verb));
    const who = applied ? undefined : this.writer(def, ri, ctx, optionsKindOf(ri.verb));
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
        const subDef = sub ? def.subresources.find((s) => s.name === sub) : undefined;
        if (subDef?.prepareForUpdate) subDef.prepareForUpdate(next, currentOut);
        else if (sub === 'status') def.prepareForStatusUpdate?.(next, currentOut);
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
        if (who) recordUpdate(def, currentOut, next, who, nowRfc3339());
        const review: AdmissionAttributes | undefined = this.webhooks && {
          def,
          subresource: sub,
          operation: 'UPDATE',
          namespace: ri.namespace,
          name: ri.name,
          object: next,
          oldObject: currentOut,
          user: ctx.user,
          dryRun,
          options: writeOptions(ri.verb === 'patch' ? 'PatchOptions' : 'UpdateOptions', dryRun),
          warnings: ctx.warnings,
        };
        if (review) {
          await this.webhooks?.mutate(review);
          // What only the server sets stays the server's, whatever a patch did to it.
          keepSystemMetadata(next, currentOut);
        }
        if (def.generation && sub !== 'status' && !sameJson(next.spec, currentOut.spec)) {
          m.generation = Number(currentOut.metadata?.generation ?? 0) + 1;
        }
        // Subresources keep the spec, and with it what it holds.
        const claimsDef = sub ? undefined : def.claims;
        const claims = claimsDef
          ? await claimsDef.assign(next, currentOut, this.claimReader, attempt)
          : undefined;
        if (subDef?.validateUpdate) {
          const errs = subDef.validateUpdate(next, currentOut);
          if (errs.length > 0) throw invalid({ group: def.group, kind: def.kind }, ri.name, errs);
        } else validateChange(def, next, currentOut);
        for (const admit of this.updateAdmission) await admit(def, sub, next, currentOut);
        nodeRestriction(ctx.user, def, sub, ri.verb, ri.name, currentOut, next);
        if (review) await this.webhooks?.validate({ ...review, object: next });
        m.resourceVersion = String(cur.rev);
        if (sameIgnoringVersion(next, currentOut)) {
          if (fromCache) continue;
          return { code: 200, body: currentOut };
        }
        if (dryRun) return { code: 200, body: next };
        // The last finalizer of an object being deleted is gone: the delete completes.
        const nm = next.metadata ?? {};
        const fins = arr(nm.finalizers);
        const waiting = def.deletion?.stillWaiting?.(next) ?? false;
        if (nm.deletionTimestamp && fins.length === 0 && !waiting) {
          const d = await this.store.delete(key, cur.rev, def.claims?.held(cur.obj));
          if (d.ok) {
            nm.resourceVersion = String(d.rev);
            return { code: 200, body: next };
          }
        } else {
          const side = claims && claimsDef ? sideKeys(claimsDef.held(cur.obj), claims) : undefined;
          const w = await this.store.update(key, this.in(def, next), cur.rev, side);
          if (w.ok) {
            m.resourceVersion = String(w.rev);
            return { code: 200, body: next };
          }
          // The object was as read but a claim was taken meanwhile: pick again (or the 422).
          if (claims && w.current?.rev === cur.rev && (w.taken?.length ?? 0) > 0) {
            claimLost(claims, w.taken ?? [], attempt);
            continue;
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

  async patch(def: KindDef, ri: ResourceRequest, ctx: Ctx): Promise<Result> {
    const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
    // A custom resource has no strategic-merge schema (no patch keys): Kubernetes answers 415, naming the rest.
    const format = bodyFormat(
      ctx.contentType,
      def.customResource ? CUSTOM_PATCH_MEDIA_TYPES : PATCH_MEDIA_TYPES,
    );
    const patch = parseBody(ctx.body, format);
    if (format === 'apply') {
      const force = parseForce(queryString(ctx.query, 'force'));
      if (!queryString(ctx.query, 'fieldManager')) {
        throw badRequest('PATCH, application/apply-patch+yaml requires fieldManager to be set');
      }
      const config = decodeObject(def, patch, fv, ctx.warnings);
      // Who owns what is the server's to say; an applied configuration does not carry it.
      if (config.metadata?.managedFields !== undefined)
        throw badRequest('metadata.managedFields must be nil');
      const who = this.writer(def, ri, ctx, 'PatchOptions');
      const exists = await this.store.get(this.key(def, ri.namespace, ri.name));
      if (!exists && !ri.subresource) return this.create(def, ri, ctx, { force, config });
      return this.updateWith(
        def,
        ri,
        ctx,
        (current) => applyConfiguration(def, current, structuredClone(config), who, force, nowRfc3339()),
        true,
      );
    }
    if (queryString(ctx.query, 'force') !== undefined) {
      throw unprocessablePatchOptions('force: Forbidden: may not be specified for non-apply patch');
    }
    // A merge patch has the object's shape, so its duplicate fields are the object's.
    const mergeLike = format === 'merge' || format === 'strategic';
    const scan = mergeLike && fv !== 'Ignore' && ctx.body ? scanFields(ctx.body.toString('utf8')) : undefined;
    return this.updateWith(def, ri, ctx, (current) =>
      decodeObject(def, applyPatchOfFormat(format, current, patch), fv, ctx.warnings, scan),
    );
  }

  // ---------- delete ----------

  async delete(def: KindDef, ri: ResourceRequest, ctx: Ctx): Promise<Result> {
    const opts = deleteOptions(ctx.body, ctx.contentType, ctx.query);
    return this.deleteOne(def, ri.namespace, ri.name, opts, ctx);
  }

  /**
   * Deletes one object, or marks it (deletionTimestamp, finalizers) when something must
   * happen first. A dry run decides exactly as the real delete would, preconditions and
   * refusals included, and answers with the object as the delete would leave it.
   */
  async deleteOne(def: KindDef, ns: string, name: string, opts: DeleteOpts, ctx: Ctx): Promise<Result> {
    const key = this.key(def, ns, name);
    def.deletion?.admit?.(name);
    for (let attempt = 0; ; attempt++) {
      const cur = await this.store.get(key);
      if (!cur) throw notFound(gr(def), name);
      const o = this.out(def, cur.obj);
      o.metadata ??= {};
      const m = o.metadata;
      m.resourceVersion = String(cur.rev);
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
      const review: AdmissionAttributes = {
        def,
        subresource: '',
        operation: 'DELETE',
        namespace: ns,
        name,
        oldObject: o,
        user: ctx.user,
        dryRun: opts.dryRun,
        options: writeOptions('DeleteOptions', opts.dryRun),
        warnings: ctx.warnings,
      };
      await this.webhooks?.mutate(review);
      await this.webhooks?.validate(review);
      const plan = deletionPlan(def, o, opts);
      // Kubernetes answers 202 only for a delete that is not immediate and that asked,
      // with orphanDependents=false, for its dependents to go too.
      const pendingCode = opts.notOrphaning ? 202 : 200;
      if (plan === 'unchanged') return { code: pendingCode, body: o };
      if (opts.dryRun) return { code: plan === 'now' ? 200 : pendingCode, body: plan === 'now' ? o : plan };
      if (plan === 'now') {
        const w = await this.store.delete(key, cur.rev, def.claims?.held(cur.obj));
        if (w.ok) return { code: 200, body: o };
      } else {
        const w = await this.store.update(key, this.in(def, plan), cur.rev);
        if (w.ok) {
          plan.metadata!.resourceVersion = String(w.rev);
          // A kind whose admission reads the cache (NamespaceLifecycle) answers once this
          // apiserver's cache has the mark, so the client's next request sees it.
          if (def.deletion?.waitForCache) await this.cacheFor(def).waitForRevision(w.rev);
          return { code: pendingCode, body: plan };
        }
      }
      if (opts.rv !== undefined || attempt >= 5) throw conflict(gr(def), name);
    }
  }

  async deleteCollection(def: KindDef, ri: ResourceRequest, ctx: Ctx): Promise<Result> {
    const opts = deleteOptions(ctx.body, ctx.contentType, ctx.query);
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
        // Gone meanwhile: it is deleted either way.
        if (!(err instanceof StatusError && err.code === 404)) throw err;
      }
    }
    return { code: 200, body: this.listObject(def, deleted, meta) };
  }
}

/**
 * What a delete does to an object: remove it now, leave it as it is (already marked the
 * same way), or mark it (deletionTimestamp, the finalizers the propagation policy asks
 * for) and leave the rest to its kubelet, its finalizers or its controller.
 */
function deletionPlan(def: KindDef, o: KObject, opts: DeleteOpts): KObject | 'now' | 'unchanged' {
  const now = Date.now();
  if (def.deletion?.mark) return def.deletion.mark(o, now);
  const m = o.metadata ?? {};
  const marked = structuredClone(o);
  const mm = marked.metadata!;
  const fins = arr(mm.finalizers).map(str);
  if (opts.policy === 'Foreground' && !fins.includes('foregroundDeletion')) fins.push('foregroundDeletion');
  if (opts.policy === 'Orphan' && !fins.includes('orphan')) fins.push('orphan');
  if (fins.length > 0) mm.finalizers = fins;
  let grace = def.deletion?.gracePeriodSeconds?.(o, opts.grace) ?? 0;
  // A second delete may shorten the grace period, never lengthen it.
  const prevGrace =
    typeof m.deletionGracePeriodSeconds === 'number' ? m.deletionGracePeriodSeconds : undefined;
  if (prevGrace !== undefined && grace > prevGrace) grace = prevGrace;
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

/** What a write claims and releases: the claims it holds now that it did not, and the reverse. */
function sideKeys(heldBefore: string[], claims: Claim[]): SideKeys {
  const now = new Set(claims.map((c) => c.key));
  const before = new Set(heldBefore);
  return {
    claim: claims.filter((c) => !before.has(c.key)).map((c) => ({ key: c.key, value: c.value })),
    release: heldBefore.filter((k) => !now.has(k)),
  };
}

/** A write's claims were taken: the 422 of a requested one, else (within bounds) another try. */
function claimLost(claims: Claim[], taken: string[], attempt: number): void {
  for (const c of claims) if (c.takenError && taken.includes(c.key)) throw c.takenError;
  if (attempt + 1 >= MAX_CLAIM_ATTEMPTS) {
    throw internalError(
      new Error(`${taken.join(', ')} taken by other writes ${attempt + 1} times; try again`),
    );
  }
}

/** The force option of an apply: a boolean. */
function parseForce(v: string | undefined): boolean {
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  throw badRequest(`force must be true or false, not "${v}"`);
}

/** A PatchOptions error (422) Kubernetes words as one field error. */
function unprocessablePatchOptions(detail: string): Error {
  return invalid({ group: 'meta.k8s.io', kind: 'PatchOptions' }, '', [
    fieldErrors.forbidden('force', detail.replace(/^force: Forbidden: /, '')),
  ]);
}

/** Which options kind names a write's bad options in its 422 (PUT: UpdateOptions, PATCH: PatchOptions). */
function optionsKindOf(verb: string): OptionsKind {
  return verb === 'patch' ? 'PatchOptions' : 'UpdateOptions';
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
