// pods/<name>/eviction: the API-initiated delete `kubectl drain` uses. A
// policy/v1 Eviction carries the DeleteOptions; the pod is deleted as a DELETE
// with those options would (dry run included), once its PodDisruptionBudget
// allows it, with Kubernetes' rules (pkg/registry/core/pod/storage/eviction.go):
//
// - a pod that is Pending, Succeeded, Failed or already being deleted is deleted
//   without looking at budgets (it is disrupted already);
// - no budget selects it: deleted; more than one: a 500 Status;
// - a pod that is not Ready is deleted without using the budget when its policy
//   is AlwaysAllow, or (IfHealthyBudget, the default) when the budget is met
//   (currentHealthy >= desiredHealthy > 0), guarded on the pod's revision so it
//   cannot have turned Ready meanwhile (a lost race is a 429);
// - otherwise the budget must allow a disruption: status.observedGeneration
//   behind the spec or disruptionsAllowed 0 is a 429 with a DisruptionBudget
//   cause; else disruptionsAllowed is decremented and the pod recorded in
//   status.disruptedPods in a write of the budget guarded on its revision,
//   before the delete. Two evictions racing for the last disruption cannot both
//   win: the loser's guard fails, it reads the budget again and gets the 429.
//
// A dry run decides all of that and writes nothing.
import {
  badRequest,
  forbiddenWithMessage,
  isConflict,
  labelSelectorAsSelector,
  methodNotSupported,
  notFound,
  type StatusError,
  successStatus,
  timeout,
  tooManyRequests,
} from '@kubit/api';
import { emptyBudgetStatus } from '../kinds/policy.js';
import { arr, type KindDef, obj, type SubresourceDef, type SubresourceRequest, str } from '../kinds/types.js';
import { schemas } from '../model/schema.js';
import { decodeObject, nowRfc3339, parseFieldValidation } from '../objects.js';
import { checkDeleteOptions, type DeleteOpts, queryDryRun } from '../options.js';
import { BODY_MEDIA_TYPES, bodyFormat, parseBody, queryString } from '../request.js';
import { type Ctx, gr, type Rest, type Result } from '../rest.js';
import type { KObject } from '../storage.js';

const EVICTION_KIND = { group: 'policy', version: 'v1', kind: 'Eviction' };
const EVICTION_DEF: Pick<KindDef, 'group' | 'version' | 'kind' | 'schema'> = {
  ...EVICTION_KIND,
  schema: schemas.eviction,
};

/** Kubernetes' MaxDisruptedPodSize: evictions approved but not yet seen by the disruption controller. */
export const MAX_DISRUPTED_POD_SIZE = 2000;
/** Tries of the budget's guarded write (Kubernetes' EvictionsRetry has 20 steps). */
const BUDGET_WRITE_ATTEMPTS = 20;
/** Tries of the delete of a pod that needs no budget, when it changes under us. */
const DELETE_ATTEMPTS = 5;

const VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget.";

/** The 429 of a budget that allows no disruption now, with Kubernetes' DisruptionBudget cause. */
function budgetRefusal(retryAfterSeconds: number, cause: string): StatusError {
  const err = tooManyRequests(VIOLATION, retryAfterSeconds);
  err.status.details = { ...err.status.details, causes: [{ reason: 'DisruptionBudget', message: cause }] };
  return err;
}

/** The 429 of a budget its controller has not caught up with (or a pod that changed while we decided). */
export function budgetBeingProcessed(name: string): StatusError {
  return budgetRefusal(10, `The disruption budget ${name} is still being processed by the server.`);
}

const phase = (pod: KObject): string => str(obj(pod.status).phase);

export function isPodReady(pod: KObject): boolean {
  return arr(obj(pod.status).conditions).some((c) => obj(c).type === 'Ready' && obj(c).status === 'True');
}

/** A pod already disrupted (not running, or being deleted): its eviction needs no budget. */
export function canIgnoreBudget(pod: KObject): boolean {
  const p = phase(pod);
  return p === 'Succeeded' || p === 'Failed' || p === 'Pending' || !!pod.metadata?.deletionTimestamp;
}

/** Whether deleting it must be guarded on its revision (it could turn Ready meanwhile). */
function shouldEnforceResourceVersion(pod: KObject): boolean {
  const p = phase(pod);
  return !(p === 'Succeeded' || p === 'Failed' || pod.metadata?.deletionTimestamp);
}

/**
 * The budgets that select the pod: same namespace, a valid selector that is not empty
 * (for the eviction, as in Kubernetes, an empty or missing selector selects nothing).
 */
export function budgetsFor(pod: KObject, budgets: readonly KObject[]): KObject[] {
  const labels = (pod.metadata?.labels ?? {}) as Record<string, string>;
  return budgets.filter((b) => {
    if (b.metadata?.namespace !== pod.metadata?.namespace) return false;
    try {
      const sel = labelSelectorAsSelector(
        obj(b.spec).selector as Parameters<typeof labelSelectorAsSelector>[0],
      );
      return !sel.empty() && sel.matches(labels);
    } catch {
      return false;
    }
  });
}

const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

/**
 * Checks that the budget allows evicting `podName` now and returns the status that
 * records it (one disruption fewer, the pod in disruptedPods); throws the 429 (or 403)
 * otherwise. Pure: the caller writes the status, guarded on the budget's revision.
 */
export function useDisruption(pdb: KObject, podName: string, now: string): Record<string, unknown> {
  const name = str(pdb.metadata?.name);
  const status = { ...emptyBudgetStatus(), ...obj(pdb.status) };
  if (num(status.observedGeneration) < num(pdb.metadata?.generation)) throw budgetBeingProcessed(name);
  const allowed = num(status.disruptionsAllowed);
  const budget = { group: 'policy', resource: 'poddisruptionbudget' };
  if (allowed < 0) throw forbiddenWithMessage(budget, name, 'pdb disruptions allowed is negative');
  const disrupted = { ...obj(status.disruptedPods) };
  if (Object.keys(disrupted).length > MAX_DISRUPTED_POD_SIZE) {
    throw forbiddenWithMessage(
      budget,
      name,
      'DisruptedPods map too big - too many evictions not confirmed by PDB controller',
    );
  }
  if (allowed === 0) {
    throw budgetRefusal(
      0,
      `The disruption budget ${name} needs ${num(status.desiredHealthy)} healthy pods and has ${num(status.currentHealthy)} currently`,
    );
  }
  const next: Record<string, unknown> = { ...status, disruptionsAllowed: allowed - 1 };
  if (allowed - 1 === 0) next.conditions = disallowedConditions(arr(status.conditions), status, now);
  disrupted[podName] = now;
  next.disruptedPods = disrupted;
  return next;
}

/** The DisruptionAllowed condition turned False (InsufficientPods), its transition time kept if it already was. */
function disallowedConditions(
  conditions: unknown[],
  status: Record<string, unknown>,
  now: string,
): unknown[] {
  const old = conditions.map(obj).find((c) => c.type === 'DisruptionAllowed');
  const cond = {
    type: 'DisruptionAllowed',
    status: 'False',
    observedGeneration: num(status.observedGeneration),
    lastTransitionTime: old?.status === 'False' ? old.lastTransitionTime : now,
    reason: 'InsufficientPods',
    message: old?.message ?? '',
  };
  return old
    ? conditions.map((c) => (obj(c).type === 'DisruptionAllowed' ? cond : c))
    : [...conditions, cond];
}

async function deletePod(
  rest: Rest,
  def: KindDef,
  ns: string,
  name: string,
  opts: DeleteOpts,
  ctx: Ctx,
): Promise<Result> {
  await rest.deleteOne(def, ns, name, opts, ctx);
  return { code: 201, body: { ...successStatus(), code: 201 } };
}

async function readPod(rest: Rest, def: KindDef, ns: string, name: string) {
  const cur = await rest.store.get(rest.key(def, ns, name));
  if (!cur) throw notFound(gr(def), name);
  return { pod: rest.out(def, cur.obj), rev: cur.rev };
}

async function evict({ rest, def, ri, ctx }: SubresourceRequest): Promise<Result> {
  const queryDry = queryDryRun(ctx.query, 'CreateOptions');
  const fv = parseFieldValidation(queryString(ctx.query, 'fieldValidation'));
  const raw = parseBody(ctx.body, bodyFormat(ctx.contentType, BODY_MEDIA_TYPES), 'Eviction');
  // policy/v1beta1 Evictions have the same fields; older clients still send them.
  if (raw && typeof raw === 'object' && (raw as { apiVersion?: unknown }).apiVersion === 'policy/v1beta1') {
    (raw as { apiVersion?: unknown }).apiVersion = 'policy/v1';
  }
  const eviction = decodeObject(EVICTION_DEF, raw, fv, ctx.warnings);
  const name = eviction.metadata?.name;
  if (name !== undefined && name !== ri.name) {
    throw badRequest('name in URL does not match name in Eviction object');
  }
  const opts = checkDeleteOptions((eviction.deleteOptions ?? {}) as Record<string, unknown>);
  // dryRun may come with the request (CreateOptions) or inside the DeleteOptions.
  opts.dryRun ||= queryDry;
  const ns = ri.namespace;
  const clientRv = opts.rv !== undefined;

  // A pod already disrupted is deleted without its budgets (retried if it changes meanwhile).
  let read = await readPod(rest, def, ns, ri.name);
  for (let attempt = 0; canIgnoreBudget(read.pod); attempt++) {
    const guarded =
      shouldEnforceResourceVersion(read.pod) && !clientRv ? { ...opts, rv: String(read.rev) } : opts;
    try {
      return await deletePod(rest, def, ns, ri.name, guarded, ctx);
    } catch (err) {
      if (!isConflict(err) || clientRv || attempt >= DELETE_ATTEMPTS) throw err;
    }
    read = await readPod(rest, def, ns, ri.name);
  }
  const { pod, rev: podRev } = read;

  const pdbDef = rest.kinds.lookup('policy', 'v1', 'poddisruptionbudgets');
  if (!pdbDef) return deletePod(rest, def, ns, ri.name, opts, ctx);
  const prefix = rest.prefix(pdbDef, ns);
  const listed = (await rest.store.range(prefix)).items.map((s) => ({ ...s, obj: rest.out(pdbDef, s.obj) }));
  const matching = budgetsFor(
    pod,
    listed.map((s) => s.obj),
  );
  if (matching.length > 1) {
    return {
      code: 500,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message:
          'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
        code: 500,
      },
    };
  }
  if (matching.length === 0) return deletePod(rest, def, ns, ri.name, opts, ctx);

  const pdb = matching[0];
  const pdbName = str(pdb.metadata?.name);
  const spec = obj(pdb.spec);
  const st = obj(pdb.status);
  const ready = isPodReady(pod);
  // An unready pod does not count as healthy: its eviction uses no disruption when its
  // budget's policy says so, guarded on the pod's revision (it must still be unready).
  const unreadyFree =
    !ready &&
    (spec.unhealthyPodEvictionPolicy === 'AlwaysAllow' ||
      (num(st.currentHealthy) >= num(st.desiredHealthy) && num(st.desiredHealthy) > 0));
  if (unreadyFree) {
    const guarded = clientRv ? opts : { ...opts, rv: String(podRev) };
    try {
      return await deletePod(rest, def, ns, ri.name, guarded, ctx);
    } catch (err) {
      if (isConflict(err) && !clientRv) throw budgetBeingProcessed(pdbName);
      throw err;
    }
  }

  // Use one disruption: a write of the budget's status guarded on its revision, retried
  // on a lost race from a fresh read (which may now allow none: the 429).
  const pdbKey = rest.key(pdbDef, ns, pdbName);
  let cur: { obj: KObject; rev: number } | null = listed.find((s) => s.obj === pdb) ?? null;
  for (let attempt = 0; ; attempt++) {
    if (!cur) throw budgetBeingProcessed(pdbName);
    const status = useDisruption(cur.obj, ri.name, nowRfc3339());
    if (opts.dryRun) break;
    const next = { ...cur.obj, status };
    const w = await rest.store.update(pdbKey, rest.in(pdbDef, next), cur.rev);
    if (w.ok) break;
    if (attempt + 1 >= BUDGET_WRITE_ATTEMPTS) {
      throw timeout(`couldn't update PodDisruptionBudget "${pdbName}" due to conflicts`, 10);
    }
    const fresh = await rest.store.get(pdbKey);
    cur = fresh ? { obj: rest.out(pdbDef, fresh.obj), rev: fresh.rev } : null;
  }
  return deletePod(rest, def, ns, ri.name, opts, ctx);
}

export const evictionSubresource: SubresourceDef = {
  name: 'eviction',
  verbs: ['create'],
  kind: EVICTION_KIND,
  serve(verb, req) {
    if (verb === 'create') return evict(req);
    throw methodNotSupported({ group: '', resource: 'pods/eviction' }, verb);
  },
  exampleBody(verb, parent) {
    if (verb !== 'create') return undefined;
    return {
      body: {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: parent.metadata?.name, namespace: parent.metadata?.namespace },
      },
    };
  },
};
