// apps/v1 ReplicaSets and Deployments, and core/v1 ReplicationControllers (the
// ReplicaSet's predecessor, with a plain label map for a selector): the status
// strategy, the scale subresource and the columns of `kubectl get rs` /
// `kubectl get deploy` / `kubectl get rc`; DaemonSets, StatefulSets and
// ControllerRevisions (`kubectl get ds|sts|controllerrevisions`).
// Defaulting and validation (selector vs template labels, strategy rules,
// immutable selector) come from @kubit/api.
import {
  defaultDaemonSet,
  defaultDeployment,
  defaultReplicaSet,
  defaultReplicationController,
  defaultStatefulSet,
} from '@kubit/api';
import { schemas } from '../model/schema.js';
import { selectorText } from '../model/selectors.js';
import type { KObject } from '../storage.js';
import { scaleSubresource } from '../subresources/scale.js';
import { statusSubresource } from '../subresources/status.js';
import { age } from '../table.js';
import { arr, type Column, type KindDef, obj, str } from './types.js';

const AGE: Column = { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 };

/** The wide-only columns both kinds share: what the pod template runs and what the selector picks. */
const TEMPLATE_COLUMNS: Column[] = [
  {
    name: 'Containers',
    type: 'string',
    description: 'Names of each container in the template.',
    priority: 1,
  },
  {
    name: 'Images',
    type: 'string',
    description: 'Images referenced by each container in the template.',
    priority: 1,
  },
  { name: 'Selector', type: 'string', description: 'Label selector for pods.', priority: 1 },
];

function templateCells(o: KObject, mapSelector = false): string[] {
  const containers = arr(obj(obj(obj(o.spec).template).spec).containers).map(obj);
  return [
    containers.map((c) => str(c.name)).join(','),
    containers.map((c) => str(c.image)).join(','),
    selectorText(o, mapSelector) || '<none>',
  ];
}

const int = (v: unknown): number => (typeof v === 'number' ? v : 0);

/** A spec both kinds accept: one replica of busybox, selected by app=example. */
const replicatedExample = {
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'example' } },
    template: {
      metadata: { labels: { app: 'example' } },
      spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
    },
  },
};

/** What ReplicaSets and Deployments share: status kept apart from spec, generation, scale. */
const scalable = {
  group: 'apps',
  version: 'v1',
  namespaced: true,
  categories: ['all'],
  nameRule: 'subdomain' as const,
  subresources: [statusSubresource, scaleSubresource],
  generation: true,
  example: replicatedExample,
  prepareForUpdate(o: KObject, old: KObject) {
    o.status = old.status;
  },
  prepareForStatusUpdate(o: KObject, old: KObject) {
    o.spec = old.spec;
  },
};

/** `kubectl get rs` / `kubectl get rc`: DESIRED CURRENT READY AGE (+ CONTAINERS IMAGES SELECTOR). */
function replicatedTable(mapSelector = false): KindDef['table'] {
  return {
    columns: [
      { name: 'Desired', type: 'integer', description: 'Number of desired pods.', priority: 0 },
      { name: 'Current', type: 'integer', description: 'Number of actual pods.', priority: 0 },
      { name: 'Ready', type: 'integer', description: 'Number of pods ready.', priority: 0 },
      AGE,
      ...TEMPLATE_COLUMNS,
    ],
    cells(o, now) {
      const status = obj(o.status);
      return [
        int(obj(o.spec).replicas),
        int(status.replicas),
        int(status.readyReplicas),
        age(o, now),
        ...templateCells(o, mapSelector),
      ];
    },
  };
}

export const replicasets: KindDef = {
  ...scalable,
  kind: 'ReplicaSet',
  resource: 'replicasets',
  singular: 'replicaset',
  shortNames: ['rs'],
  schema: schemas.replicaSet,
  defaults: (rs) => void defaultReplicaSet(rs),
  prepareForCreate(rs) {
    // status.replicas is not omitempty in Kubernetes: a new ReplicaSet reports 0.
    rs.status = { replicas: 0 };
  },
  fields: (rs) => ({ 'status.replicas': String(int(obj(rs.status).replicas)) }),
  table: replicatedTable(),
};

export const deployments: KindDef = {
  ...scalable,
  kind: 'Deployment',
  resource: 'deployments',
  singular: 'deployment',
  shortNames: ['deploy'],
  schema: schemas.deployment,
  defaults: (d) => void defaultDeployment(d),
  prepareForCreate(d) {
    d.status = {};
  },
  table: {
    columns: [
      {
        name: 'Ready',
        type: 'string',
        description: 'Number of the pod with ready state',
        priority: 0,
      },
      {
        name: 'Up-to-date',
        type: 'integer',
        description:
          'Total number of non-terminated pods targeted by this deployment that have the desired template spec.',
        priority: 0,
      },
      {
        name: 'Available',
        type: 'integer',
        description:
          'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.',
        priority: 0,
      },
      AGE,
      ...TEMPLATE_COLUMNS,
    ],
    cells(d, now) {
      const status = obj(d.status);
      return [
        `${int(status.readyReplicas)}/${int(obj(d.spec).replicas)}`,
        int(status.updatedReplicas),
        int(status.availableReplicas),
        age(d, now),
        ...templateCells(d),
      ];
    },
  },
};

/** core/v1 ReplicationController: a ReplicaSet whose selector is a label map. */
export const replicationcontrollers: KindDef = {
  ...scalable,
  group: '',
  kind: 'ReplicationController',
  resource: 'replicationcontrollers',
  singular: 'replicationcontroller',
  shortNames: ['rc'],
  schema: schemas.replicationController,
  example: {
    spec: {
      replicas: 1,
      selector: { app: 'example' },
      template: replicatedExample.spec.template,
    },
  },
  defaults: (rc) => void defaultReplicationController(rc),
  prepareForCreate(rc) {
    // status.replicas is not omitempty in Kubernetes: a new ReplicationController reports 0.
    rc.status = { replicas: 0 };
  },
  fields: (rc) => ({ 'status.replicas': String(int(obj(rc.status).replicas)) }),
  table: replicatedTable(true),
};

/** The template of a DaemonSet or StatefulSet example: one busybox container labelled app=example. */
const workloadExampleSpec = {
  selector: replicatedExample.spec.selector,
  template: replicatedExample.spec.template,
};

/** `kubectl get ds`' NODE SELECTOR: the template's nodeSelector as k=v pairs, sorted. */
function nodeSelectorText(ds: KObject): string {
  const sel = obj(obj(obj(obj(ds.spec).template).spec).nodeSelector);
  const pairs = Object.keys(sel)
    .sort()
    .map((k) => `${k}=${str(sel[k])}`);
  return pairs.length > 0 ? pairs.join(',') : '<none>';
}

export const daemonsets: KindDef = {
  ...scalable,
  subresources: [statusSubresource],
  kind: 'DaemonSet',
  resource: 'daemonsets',
  singular: 'daemonset',
  shortNames: ['ds'],
  schema: schemas.daemonSet,
  example: { spec: workloadExampleSpec },
  defaults: (ds) => void defaultDaemonSet(ds),
  prepareForCreate(ds) {
    // The counts that are not omitempty in Kubernetes' DaemonSetStatus start at 0.
    ds.status = {
      currentNumberScheduled: 0,
      numberMisscheduled: 0,
      desiredNumberScheduled: 0,
      numberReady: 0,
    };
  },
  table: {
    columns: [
      {
        name: 'Desired',
        type: 'integer',
        description: 'The total number of nodes that should be running the daemon pod.',
        priority: 0,
      },
      {
        name: 'Current',
        type: 'integer',
        description: 'The number of nodes that are running at least 1 daemon pod.',
        priority: 0,
      },
      {
        name: 'Ready',
        type: 'integer',
        description: 'The number of nodes that should be running the daemon pod and have one ready.',
        priority: 0,
      },
      {
        name: 'Up-to-date',
        type: 'integer',
        description: 'The total number of nodes that are running updated daemon pod.',
        priority: 0,
      },
      {
        name: 'Available',
        type: 'integer',
        description: 'The number of nodes that should be running the daemon pod and have one available.',
        priority: 0,
      },
      {
        name: 'Node Selector',
        type: 'string',
        description: 'NodeSelector is a selector which must be true for the pod to fit on a node.',
        priority: 0,
      },
      AGE,
      ...TEMPLATE_COLUMNS,
    ],
    cells(ds, now) {
      const st = obj(ds.status);
      return [
        int(st.desiredNumberScheduled),
        int(st.currentNumberScheduled),
        int(st.numberReady),
        int(st.updatedNumberScheduled),
        int(st.numberAvailable),
        nodeSelectorText(ds),
        age(ds, now),
        ...templateCells(ds),
      ];
    },
  },
};

export const statefulsets: KindDef = {
  ...scalable,
  kind: 'StatefulSet',
  resource: 'statefulsets',
  singular: 'statefulset',
  shortNames: ['sts'],
  schema: schemas.statefulSet,
  example: { spec: { ...workloadExampleSpec, replicas: 1, serviceName: 'example' } },
  defaults: (sts) => void defaultStatefulSet(sts),
  prepareForCreate(sts) {
    // replicas and availableReplicas are not omitempty in Kubernetes' StatefulSetStatus.
    sts.status = { replicas: 0, availableReplicas: 0 };
  },
  table: {
    columns: [
      {
        name: 'Ready',
        type: 'string',
        description: 'Number of the pod with ready state',
        priority: 0,
      },
      AGE,
      ...TEMPLATE_COLUMNS.slice(0, 2),
    ],
    cells(sts, now) {
      const st = obj(sts.status);
      return [
        `${int(st.readyReplicas)}/${int(obj(sts.spec).replicas)}`,
        age(sts, now),
        ...templateCells(sts).slice(0, 2),
      ];
    },
  },
};

/** `kubectl get controllerrevisions`' CONTROLLER: `<kind>.<group>/<name>` of the controller owner. */
function controllerText(cr: KObject): string {
  const ref = arr(cr.metadata?.ownerReferences)
    .map(obj)
    .find((r) => r.controller === true);
  if (!ref) return '<none>';
  const apiVersion = str(ref.apiVersion);
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  return `${str(ref.kind).toLowerCase()}${group ? `.${group}` : ''}/${str(ref.name)}`;
}

export const controllerrevisions: KindDef = {
  group: 'apps',
  version: 'v1',
  namespaced: true,
  nameRule: 'subdomain',
  kind: 'ControllerRevision',
  resource: 'controllerrevisions',
  singular: 'controllerrevision',
  schema: schemas.controllerRevision,
  subresources: [],
  example: { data: { spec: { template: { $patch: 'replace' } } }, revision: 1 },
  table: {
    columns: [
      { name: 'Controller', type: 'string', description: 'Controller of the object', priority: 0 },
      { name: 'Revision', type: 'integer', description: 'Revision of the ControllerRevision', priority: 0 },
      AGE,
    ],
    cells: (cr, now) => [controllerText(cr), int(cr.revision), age(cr, now)],
  },
};
