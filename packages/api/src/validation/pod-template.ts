// core/v1 PodTemplate, as Kubernetes' ValidatePodTemplate: its template is a pod
// template (labels and annotations of its metadata, a valid pod spec, any restart
// policy) at the path `template`; a template may change in an update.
import type { FieldError } from '../field-errors.js';
import { validateAnnotations, validateLabels } from './meta.js';
import { validatePodSpec } from './pod.js';
import { type Obj, objAt, own } from './util.js';

export function validatePodTemplate(pt: Obj, errs: FieldError[]): void {
  const template = objAt(own(pt, 'template'), 'template', errs) ?? {};
  const meta = objAt(own(template, 'metadata'), 'template.metadata', errs);
  if (meta) {
    validateLabels(own(meta, 'labels'), 'template.metadata.labels', errs);
    validateAnnotations(own(meta, 'annotations'), 'template.metadata.annotations', errs);
  }
  validatePodSpec(own(template, 'spec'), 'template.spec', errs);
}
