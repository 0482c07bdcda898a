// apps/v1 ReplicaSets and Deployments, and core/v1 ReplicationControllers (the
// ReplicaSet's predecessor, with a plain label map for a selector): the status
// strategy, the scale subresource and the columns of `kubectl get rs` /
// `kubectl get deploy` / `kubectl get rc`.
// Defaulting and validation (selector vs template labels, strategy rules,
// immutable selector) come from @kubit/api.
import { defaultDeployment, defaultReplicaSet, defaultReplicationController } from '@kubit/api';
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
