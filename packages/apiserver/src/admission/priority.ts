// Priority, as Kubernetes' plugin/pkg/admission/priority: a new pod's
// spec.priorityClassName (or the global default class when it names none) gives
// it spec.priority and spec.preemptionPolicy; a class that does not exist, or a
// priority or policy the pod set itself that differs from its class's, is refused
// (403). For PriorityClasses it keeps one global default.
import { forbiddenWithMessage } from '@kubit/api';
import { DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS, SYSTEM_PRIORITY_CLASSES } from '../kinds/scheduling.js';
import { type KindDef, meta, obj, str } from '../kinds/types.js';
import type { CreateAdmission } from '../rest.js';
import type { KObject } from '../storage.js';
import type { WatchCache } from '../watchcache.js';
import type { AdmissionAttributes } from './webhooks.js';

const isPods = (def: KindDef) => def.group === '' && def.resource === 'pods';
const isPriorityClasses = (def: KindDef) =>
  def.group === 'scheduling.k8s.io' && def.resource === 'priorityclasses';

/**
 * The global default class. Should a race have left several, the lowest value wins,
 * as in Kubernetes (the admission check below keeps there from being more than one).
 */
export function defaultPriorityClass(classes: Iterable<KObject>): KObject | undefined {
  let best: KObject | undefined;
  for (const pc of classes) {
    if (pc.globalDefault !== true) continue;
    if (!best || Number(pc.value) < Number(best.value)) best = pc;
  }
  return best;
}

export class PriorityAdmission {
  constructor(private readonly classes: WatchCache) {}

  private lookup(name: string): KObject | undefined {
    return this.classes.objects.get(`/registry/priorityclasses/${name}`);
  }

  /** The mutating half: the pod's priority and preemption policy from its class. */
  readonly admitCreate: CreateAdmission = async (def, pod) => {
    if (!isPods(def)) return;
    const spec = obj(pod.spec);
    pod.spec = spec;
    const deny = (why: string) =>
      forbiddenWithMessage({ group: '', resource: 'pods' }, str(meta(pod).name), why);
    let priority = DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS;
    let policy = 'PreemptLowerPriority';
    const className = str(spec.priorityClassName);
    if (!className) {
      const dpc = defaultPriorityClass(this.classes.objects.values());
      if (dpc) {
        priority = Number(dpc.value);
        policy = str(dpc.preemptionPolicy) || policy;
        spec.priorityClassName = str(meta(dpc).name);
      }
    } else {
      // The built-in classes resolve even before the bootstrap's objects reach the cache.
      const system = SYSTEM_PRIORITY_CLASSES.find((c) => c.name === className);
      const pc = this.lookup(className);
      if (pc) {
        priority = Number(pc.value);
        policy = str(pc.preemptionPolicy) || policy;
      } else if (system) priority = system.value;
      else throw deny(`no PriorityClass with name ${className} was found`);
    }
    if (spec.priority !== undefined && spec.priority !== priority) {
      throw deny(
        `the integer value of priority (${String(spec.priority)}) must not be provided in pod spec; priority admission controller computed ${priority} from the given PriorityClass name`,
      );
    }
    spec.priority = priority;
    if (spec.preemptionPolicy !== undefined && spec.preemptionPolicy !== policy) {
      throw deny(
        `the string value of PreemptionPolicy (${String(spec.preemptionPolicy)}) must not be provided in pod spec; priority admission controller computed ${policy} from the given PriorityClass name`,
      );
    }
    spec.preemptionPolicy = policy;
  };

  /** The validating half: at most one PriorityClass is the global default. */
  async validate(a: AdmissionAttributes): Promise<void> {
    if (!isPriorityClasses(a.def) || a.subresource) return;
    if (a.operation !== 'CREATE' && a.operation !== 'UPDATE') return;
    const pc = a.object;
    if (pc?.globalDefault !== true) return;
    const dpc = defaultPriorityClass(this.classes.objects.values());
    if (!dpc) return;
    const name = str(meta(pc).name);
    const other = str(meta(dpc).name);
    if (a.operation === 'CREATE' || other !== name) {
      throw forbiddenWithMessage(
        { group: 'scheduling.k8s.io', resource: 'priorityclasses' },
        name,
        `PriorityClass ${other} is already marked as default. Only one default can exist`,
      );
    }
  }
}
