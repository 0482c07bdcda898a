// core/v1 PodTemplate: a named pod template, stored for tools that keep one
// (still served by Kubernetes). Defaults and validation are @kubit/api's (a pod
// template at `template`); the columns are `kubectl get podtemplates`'.
import { defaultPodTemplate } from '@kubit/api';
import { objectMeta, S, schemas } from '../model/schema.js';
import { arr, type KindDef, obj, str } from './types.js';

/** Kubernetes' labels.FormatLabels: k=v pairs sorted by key, or <none>. */
function formatLabels(labels: unknown): string {
  const pairs = Object.entries(obj(labels))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${str(v)}`);
  return pairs.length > 0 ? pairs.join(',') : '<none>';
}

export const podtemplates: KindDef = {
  group: '',
  version: 'v1',
  kind: 'PodTemplate',
  resource: 'podtemplates',
  singular: 'podtemplate',
  namespaced: true,
  schema: S.obj({ apiVersion: S.str, kind: S.str, metadata: objectMeta, template: schemas.podTemplateSpec }),
  nameRule: 'subdomain',
  subresources: [],
  example: {
    template: {
      metadata: { labels: { app: 'example' } },
      spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
    },
  },
  defaults: (pt) => void defaultPodTemplate(pt),
  table: {
    columns: [
      {
        name: 'Containers',
        type: 'string',
        description: 'Names of each container in the template.',
        priority: 0,
      },
      {
        name: 'Images',
        type: 'string',
        description: 'Images referenced by each container in the template.',
        priority: 0,
      },
      { name: 'Pod Labels', type: 'string', description: 'The labels for the pod template.', priority: 0 },
    ],
    cells(pt) {
      const template = obj(pt.template);
      const containers = arr(obj(template.spec).containers).map(obj);
      return [
        containers.map((c) => str(c.name)).join(','),
        containers.map((c) => str(c.image)).join(','),
        formatLabels(obj(template.metadata).labels),
      ];
    },
  },
};
