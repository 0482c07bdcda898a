// Profiles: which plugins run at which extension point, with what score weights,
// built from Kubernetes' defaults and an optional KubeSchedulerConfiguration file.
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { InterPodAffinity, type InterPodAffinityArgs } from '../plugins/inter-pod-affinity.js';
import { NodeAffinity } from '../plugins/node-affinity.js';
import { NodeName } from '../plugins/node-name.js';
import { NodePorts } from '../plugins/node-ports.js';
import {
  BalancedAllocation,
  NodeResourcesFit,
  type NodeResourcesFitArgs,
} from '../plugins/node-resources.js';
import { NodeUnschedulable } from '../plugins/node-unschedulable.js';
import { PodTopologySpread } from '../plugins/pod-topology-spread.js';
import { TaintToleration } from '../plugins/taint-toleration.js';
import { VolumeBinding } from '../plugins/volume-binding.js';
import { Framework, type FrameworkPlugins } from './framework.js';
import type { Plugin, PreBindPlugin } from './types.js';

export const defaultSchedulerName = 'default-scheduler';

type Factory = (args: Record<string, unknown>) => Plugin;

const registry: Record<string, Factory> = {
  NodeUnschedulable: () => new NodeUnschedulable(),
  NodeName: () => new NodeName(),
  TaintToleration: () => new TaintToleration(),
  NodeAffinity: () => new NodeAffinity(),
  NodePorts: () => new NodePorts(),
  NodeResourcesFit: (a) => new NodeResourcesFit(a as NodeResourcesFitArgs),
  PodTopologySpread: () => new PodTopologySpread(),
  InterPodAffinity: (a) => new InterPodAffinity(a as InterPodAffinityArgs),
  NodeResourcesBalancedAllocation: () => new BalancedAllocation(),
  VolumeBinding: (a) => new VolumeBinding(a as { bindTimeoutSeconds?: number }),
};

/** Kubernetes' default plugin order (filters run in this order) and default score weights. */
const defaultPlugins: { name: string; weight: number }[] = [
  { name: 'NodeUnschedulable', weight: 0 },
  { name: 'NodeName', weight: 0 },
  { name: 'TaintToleration', weight: 3 },
  { name: 'NodeAffinity', weight: 2 },
  { name: 'NodePorts', weight: 0 },
  { name: 'NodeResourcesFit', weight: 1 },
  { name: 'VolumeBinding', weight: 0 },
  { name: 'PodTopologySpread', weight: 2 },
  { name: 'InterPodAffinity', weight: 2 },
  { name: 'NodeResourcesBalancedAllocation', weight: 1 },
];

interface PluginRef {
  name: string;
  weight?: number;
}
interface PluginSet {
  enabled?: PluginRef[];
  disabled?: PluginRef[];
}
export interface ProfileConfig {
  schedulerName?: string;
  percentageOfNodesToScore?: number;
  plugins?: Partial<
    Record<'multiPoint' | 'preFilter' | 'filter' | 'preScore' | 'score' | 'preBind', PluginSet>
  >;
  pluginConfig?: { name: string; args?: Record<string, unknown> }[];
}

export interface SchedulerConfig {
  percentageOfNodesToScore: number;
  podInitialBackoffSeconds: number;
  podMaxBackoffSeconds: number;
  profiles: ProfileConfig[];
}

export function defaultConfig(): SchedulerConfig {
  return {
    percentageOfNodesToScore: 0,
    podInitialBackoffSeconds: 1,
    podMaxBackoffSeconds: 10,
    profiles: [{}],
  };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) document. */
export function parseSchedulerConfig(text: string, source = 'config'): SchedulerConfig {
  let doc: unknown;
  try {
    doc = load(text);
  } catch (err) {
    throw new Error(`${source}: not valid YAML: ${(err as Error).message}`);
  }
  if (!isRecord(doc)) throw new Error(`${source}: expected a KubeSchedulerConfiguration object`);
  if (doc.kind !== undefined && doc.kind !== 'KubeSchedulerConfiguration') {
    throw new Error(`${source}: kind is "${String(doc.kind)}", expected KubeSchedulerConfiguration`);
  }
  const cfg = defaultConfig();
  const num = (key: string, min: number, max: number): number | undefined => {
    const v = doc[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
      throw new Error(`${source}: ${key} must be a number in [${min}, ${max}], got ${JSON.stringify(v)}`);
    }
    return v;
  };
  cfg.percentageOfNodesToScore = num('percentageOfNodesToScore', 0, 100) ?? 0;
  cfg.podInitialBackoffSeconds = num('podInitialBackoffSeconds', 0.001, 3600) ?? 1;
  cfg.podMaxBackoffSeconds = num('podMaxBackoffSeconds', 0.001, 3600) ?? 10;
  if (doc.profiles !== undefined) {
    if (!Array.isArray(doc.profiles) || doc.profiles.length === 0) {
      throw new Error(`${source}: profiles must be a non-empty list`);
    }
    cfg.profiles = doc.profiles as ProfileConfig[];
  }
  // Build every profile now so a bad plugin name fails at startup with a clear message.
  for (const p of cfg.profiles) buildFramework(p, cfg.percentageOfNodesToScore);
  return cfg;
}

export function loadSchedulerConfig(path: string): SchedulerConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read --config ${path}: ${(err as Error).message}`);
  }
  return parseSchedulerConfig(text, path);
}

function isDisabled(set: PluginSet | undefined, name: string): boolean {
  return (set?.disabled ?? []).some((d) => d.name === '*' || d.name === name);
}

/** Builds one profile's Framework: defaults, then the profile's enabled/disabled lists and weights. */
export function buildFramework(profile: ProfileConfig = {}, globalPercentage = 0): Framework {
  const name = profile.schedulerName ?? defaultSchedulerName;
  const plugins = profile.plugins ?? {};
  const args = new Map((profile.pluginConfig ?? []).map((c) => [c.name, c.args ?? {}]));
  const instances = new Map<string, Plugin>();
  const get = (n: string): Plugin => {
    let p = instances.get(n);
    if (!p) {
      const f = registry[n];
      if (!f)
        throw new Error(
          `profile ${name}: unknown plugin "${n}" (known: ${Object.keys(registry).join(', ')})`,
        );
      p = f(args.get(n) ?? {});
      instances.set(n, p);
    }
    return p;
  };

  // Start from the defaults (unless multiPoint disables them), then add multiPoint-enabled plugins.
  const base: { name: string; weight: number }[] = defaultPlugins.filter(
    (d) => !isDisabled(plugins.multiPoint, d.name),
  );
  for (const e of plugins.multiPoint?.enabled ?? []) {
    const i = base.findIndex((b) => b.name === e.name);
    if (i >= 0) base[i] = { name: e.name, weight: e.weight ?? base[i].weight };
    else base.push({ name: e.name, weight: e.weight ?? 1 });
  }
  const point = (
    key: 'preFilter' | 'filter' | 'preScore' | 'score' | 'preBind',
  ): { name: string; weight: number }[] => {
    const set = plugins[key];
    const list = base.filter((b) => !isDisabled(set, b.name));
    for (const e of set?.enabled ?? []) {
      const i = list.findIndex((b) => b.name === e.name);
      if (i >= 0) list[i] = { name: e.name, weight: e.weight ?? list[i].weight };
      else list.push({ name: e.name, weight: e.weight ?? 1 });
    }
    return list;
  };
  const has = <K extends string>(p: Plugin, method: K): boolean =>
    typeof (p as unknown as Record<K, unknown>)[method] === 'function';
  const fp: Required<FrameworkPlugins> = { preFilter: [], filter: [], preScore: [], score: [], preBind: [] };
  for (const { name: n } of point('preFilter')) {
    const p = get(n);
    if (has(p, 'preFilter')) fp.preFilter.push(p as FrameworkPlugins['preFilter'][number]);
  }
  for (const { name: n } of point('filter')) {
    const p = get(n);
    if (has(p, 'filter')) fp.filter.push(p as FrameworkPlugins['filter'][number]);
  }
  for (const { name: n } of point('preScore')) {
    const p = get(n);
    if (has(p, 'preScore')) fp.preScore.push(p as FrameworkPlugins['preScore'][number]);
  }
  for (const { name: n } of point('preBind')) {
    const p = get(n);
    if (has(p, 'preBind')) fp.preBind.push(p as PreBindPlugin);
  }
  for (const { name: n, weight } of point('score')) {
    const p = get(n);
    if (!has(p, 'score') || weight <= 0) continue;
    if (!Number.isInteger(weight) || weight > 100)
      throw new Error(`profile ${name}: score weight of ${n} must be an integer in [1, 100]`);
    fp.score.push({ plugin: p as FrameworkPlugins['score'][number]['plugin'], weight });
  }
  return new Framework(name, fp, profile.percentageOfNodesToScore ?? globalPercentage);
}
