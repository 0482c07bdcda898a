// policy/v1 PodDisruptionBudgets: Kubernetes' rules (pkg/apis/policy/validation) with
// its field paths and messages: minAvailable and maxUnavailable are exclusive, each a
// non-negative count or a percentage of at most 100%, the selector a valid
// LabelSelector, unhealthyPodEvictionPolicy one of two values; the status counts are
// never negative.
import { type FieldError, fieldErrors } from '../field-errors.js';
import { validateLabels } from './meta.js';
import { isQualifiedName, isValidLabelValue } from './names.js';
import { arrAt, isObj, nameErrors, nonNegative, type Obj, objAt, own, strAt } from './util.js';

export const UNHEALTHY_POD_EVICTION_POLICIES = ['AlwaysAllow', 'IfHealthyBudget'] as const;

const PERCENT = /^[0-9]+%$/;

/** apps' ValidatePositiveIntOrPercent and IsNotMoreThan100Percent, as the PDB uses them. */
function validateBudgetValue(v: unknown, path: string, errs: FieldError[]): void {
  if (typeof v === 'number' && Number.isSafeInteger(v)) {
    nonNegative(v, path, errs);
    return;
  }
  if (typeof v === 'string') {
    if (!PERCENT.test(v)) {
      errs.push(
        fieldErrors.invalid(
          path,
          v,
          "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        ),
      );
      return;
    }
    if (Number.parseInt(v, 10) > 100)
      errs.push(fieldErrors.invalid(path, v, 'must not be greater than 100%'));
    return;
  }
  errs.push(fieldErrors.typeInvalid(path, v, 'must be an integer or a percentage'));
}

/** metav1 validation's ValidateLabelSelector: matchLabels and each matchExpressions entry. */
export function validateLabelSelector(v: unknown, path: string, errs: FieldError[]): void {
  if (v === undefined || v === null) return;
  const sel = objAt(v, path, errs);
  if (!sel) return;
  validateLabels(own(sel, 'matchLabels'), `${path}.matchLabels`, errs);
  for (const [i, e] of arrAt(own(sel, 'matchExpressions'), `${path}.matchExpressions`, errs).entries()) {
    const p = `${path}.matchExpressions[${i}]`;
    if (!isObj(e)) {
      errs.push(fieldErrors.typeInvalid(p, e, 'must be an object'));
      continue;
    }
    const op = strAt(own(e, 'operator'), `${p}.operator`, errs);
    const values = arrAt(own(e, 'values'), `${p}.values`, errs);
    if (op === 'In' || op === 'NotIn') {
      if (values.length === 0)
        errs.push(
          fieldErrors.required(`${p}.values`, "must be specified when `operator` is 'In' or 'NotIn'"),
        );
    } else if (op === 'Exists' || op === 'DoesNotExist') {
      if (values.length > 0)
        errs.push(
          fieldErrors.forbidden(
            `${p}.values`,
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
          ),
        );
    } else {
      errs.push(fieldErrors.invalid(`${p}.operator`, op ?? null, 'not a valid selector operator'));
    }
    const key = strAt(own(e, 'key'), `${p}.key`, errs) ?? '';
    nameErrors(key, isQualifiedName(key), `${p}.key`, errs);
    for (const [j, val] of values.entries()) {
      if (typeof val !== 'string')
        errs.push(fieldErrors.typeInvalid(`${p}.values[${j}]`, val, 'must be a string'));
      else nameErrors(val, isValidLabelValue(val), `${p}.values[${j}]`, errs);
    }
  }
}

export function validatePodDisruptionBudget(pdb: Obj, errs: FieldError[]): void {
  const spec = objAt(own(pdb, 'spec'), 'spec', errs) ?? {};
  const min = own(spec, 'minAvailable');
  const max = own(spec, 'maxUnavailable');
  const set = (x: unknown) => x !== undefined && x !== null;
  if (set(min) && set(max)) {
    errs.push(fieldErrors.invalid('spec', spec, 'minAvailable and maxUnavailable cannot be both set'));
  }
  if (set(min)) validateBudgetValue(min, 'spec.minAvailable', errs);
  if (set(max)) validateBudgetValue(max, 'spec.maxUnavailable', errs);
  validateLabelSelector(own(spec, 'selector'), 'spec.selector', errs);
  const policy = own(spec, 'unhealthyPodEvictionPolicy');
  if (set(policy) && !(UNHEALTHY_POD_EVICTION_POLICIES as readonly unknown[]).includes(policy)) {
    errs.push(
      fieldErrors.notSupported('spec.unhealthyPodEvictionPolicy', policy, [
        ...UNHEALTHY_POD_EVICTION_POLICIES,
      ]),
    );
  }
  validatePodDisruptionBudgetStatus(own(pdb, 'status'), errs);
}

/** The status rules Kubernetes runs on a status write (policy/v1). */
export function validatePodDisruptionBudgetStatus(v: unknown, errs: FieldError[]): void {
  if (!isObj(v)) return;
  for (const f of ['disruptionsAllowed', 'currentHealthy', 'desiredHealthy', 'expectedPods']) {
    const n = own(v, f);
    if (typeof n === 'number') nonNegative(n, `status.${f}`, errs);
  }
}
