// scheduling.k8s.io/v1 PriorityClass: a name for a pod priority. Validation after
// Kubernetes' ValidatePriorityClass/ValidatePriorityClassUpdate (user classes at most
// 1e9, the `system-` prefix reserved for the built-in classes, value and
// preemptionPolicy immutable); the one-global-default rule and the pods' side are the
// Priority admission plugin (admission/priority.ts); the built-in classes are bootstrapped.
import { type FieldError, fieldErrors, forbiddenWithMessage } from '@kubit/api';
import { objectMeta, S } from '../model/schema.js';
import type { KObject } from '../storage.js';
import { age } from '../table.js';
import { type KindDef, meta, str } from './types.js';

/** The highest value a user-defined class may have (Kubernetes' HighestUserDefinablePriority). */
export const HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000;
export const SYSTEM_PRIORITY_CLASS_PREFIX = 'system-';
export const PREEMPTION_POLICIES = ['Never', 'PreemptLowerPriority'] as const;
/** A pod's priority when it names no class and no class is the global default. */
export const DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS = 0;

export interface SystemPriorityClass {
  name: string;
  value: number;
  description: string;
}

/** The classes every cluster has (Kubernetes' SystemPriorityClasses), never a global default. */
export const SYSTEM_PRIORITY_CLASSES: readonly SystemPriorityClass[] = [
  {
    name: 'system-node-critical',
    value: 2_000_001_000,
    description: 'Used for system critical pods that must not be moved from their current node.',
  },
  {
    name: 'system-cluster-critical',
    value: 2_000_000_000,
    description:
      'Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.',
  },
];

/** Why a `system-` class is not one of the built-in ones, or undefined when it is. */
function notKnownSystemClass(pc: KObject): string | undefined {
  const name = str(meta(pc).name);
  const known = SYSTEM_PRIORITY_CLASSES.find((c) => c.name === name);
  if (!known) return `${name} is not a known system priority class`;
  if (pc.value !== known.value) return `value of ${name} PriorityClass must be ${known.value}`;
  if ((pc.globalDefault ?? false) !== false) return `globalDefault of ${name} PriorityClass must be false`;
  return undefined;
}

export function validatePriorityClass(pc: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const name = str(meta(pc).name);
  if (typeof pc.value !== 'number') {
    // The schema types it; a missing value is Go's zero there, Kubit asks for it.
    errs.push(fieldErrors.required('value', ''));
  } else if (name.startsWith(SYSTEM_PRIORITY_CLASS_PREFIX)) {
    const why = notKnownSystemClass(pc);
    if (why) {
      errs.push(
        fieldErrors.forbidden(
          'metadata.name',
          `priority class names with '${SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use only. error: ${why}`,
        ),
      );
    }
  } else if (pc.value > HIGHEST_USER_DEFINABLE_PRIORITY) {
    errs.push(
      fieldErrors.forbidden(
        'value',
        `maximum allowed value of a user defined priority is ${HIGHEST_USER_DEFINABLE_PRIORITY}`,
      ),
    );
  }
  if (pc.preemptionPolicy !== undefined && !PREEMPTION_POLICIES.includes(pc.preemptionPolicy as never)) {
    errs.push(fieldErrors.notSupported('preemptionPolicy', pc.preemptionPolicy, PREEMPTION_POLICIES));
  }
  return errs;
}

export function validatePriorityClassUpdate(pc: KObject, old: KObject): FieldError[] {
  const errs: FieldError[] = [];
  if (pc.value !== old.value) errs.push(fieldErrors.forbidden('value', 'may not be changed in an update.'));
  if (pc.preemptionPolicy !== old.preemptionPolicy) {
    errs.push(fieldErrors.invalid('preemptionPolicy', pc.preemptionPolicy, 'field is immutable'));
  }
  return errs;
}

/** The built-in classes as stored objects, for the bootstrap. */
export function systemPriorityClassObjects(): KObject[] {
  return SYSTEM_PRIORITY_CLASSES.map((c) => ({
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: c.name },
    value: c.value,
    description: c.description,
    preemptionPolicy: 'PreemptLowerPriority',
  }));
}

export const priorityclasses: KindDef = {
  group: 'scheduling.k8s.io',
  version: 'v1',
  kind: 'PriorityClass',
  resource: 'priorityclasses',
  singular: 'priorityclass',
  namespaced: false,
  shortNames: ['pc'],
  schema: S.obj({
    apiVersion: S.str,
    kind: S.str,
    metadata: objectMeta,
    value: S.int,
    globalDefault: S.bool,
    description: S.str,
    preemptionPolicy: S.str,
  }),
  nameRule: 'subdomain',
  subresources: [],
  example: { value: 1000, description: 'An example class.' },
  defaults(pc) {
    pc.preemptionPolicy ??= 'PreemptLowerPriority';
  },
  validate: validatePriorityClass,
  validateUpdate: validatePriorityClassUpdate,
  deletion: {
    // Kubernetes' PriorityClass storage refuses to delete the built-in classes.
    admit(name) {
      if (SYSTEM_PRIORITY_CLASSES.some((c) => c.name === name)) {
        throw forbiddenWithMessage(
          { group: 'scheduling.k8s.io', resource: 'priorityclasses' },
          name,
          'this is a system priority class and cannot be deleted',
        );
      }
    },
  },
  table: {
    columns: [
      { name: 'Value', type: 'integer', description: 'The value of this priority class.', priority: 0 },
      {
        name: 'Global-Default',
        type: 'boolean',
        description: 'Whether this class is the default for pods that name none.',
        priority: 0,
      },
      { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 },
      {
        name: 'PreemptionPolicy',
        type: 'string',
        description: 'Whether pods of this class may preempt lower-priority pods.',
        priority: 0,
      },
    ],
    cells(pc, now) {
      return [pc.value ?? 0, pc.globalDefault === true, age(pc, now), str(pc.preemptionPolicy)];
    },
  },
};
