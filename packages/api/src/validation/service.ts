// Services, Endpoints and EndpointSlices: the shape rules Kubernetes' validation
// applies to each (pkg/apis/core/validation, pkg/apis/discovery/validation).

import { type FieldError, fieldErrors } from '../field-errors.js';
import { arrAt, intAt, type Obj, objAt, own, strAt } from './util.js';

export const SERVICE_TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'] as const;
export const SERVICE_PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const;

function portNumber(v: unknown, path: string, errs: FieldError[]): void {
  const n = intAt(v, path, errs);
  if (n !== undefined && (n < 1 || n > 65535)) {
    errs.push(fieldErrors.invalid(path, n, 'must be between 1 and 65535, inclusive'));
  }
}

function protocol(v: unknown, path: string, errs: FieldError[]): void {
  const p = strAt(v, path, errs);
  if (p !== undefined && !(SERVICE_PROTOCOLS as readonly string[]).includes(p)) {
    errs.push(fieldErrors.notSupported(path, p, SERVICE_PROTOCOLS));
  }
}

export function validateService(svc: Obj, errs: FieldError[]): void {
  const spec = objAt(own(svc, 'spec'), 'spec', errs);
  if (!spec) {
    errs.push(fieldErrors.required('spec'));
    return;
  }
  const type = strAt(own(spec, 'type'), 'spec.type', errs);
  if (type !== undefined && !(SERVICE_TYPES as readonly string[]).includes(type)) {
    errs.push(fieldErrors.notSupported('spec.type', type, SERVICE_TYPES));
  }
  arrAt(own(spec, 'ports'), 'spec.ports', errs).forEach((raw, i) => {
    const path = `spec.ports[${i}]`;
    const p = objAt(raw, path, errs);
    if (!p) return;
    portNumber(own(p, 'port'), `${path}.port`, errs);
    protocol(own(p, 'protocol'), `${path}.protocol`, errs);
  });
}

export function validateEndpoints(ep: Obj, errs: FieldError[]): void {
  arrAt(own(ep, 'subsets'), 'subsets', errs).forEach((raw, i) => {
    const path = `subsets[${i}]`;
    const subset = objAt(raw, path, errs);
    if (!subset) return;
    arrAt(own(subset, 'ports'), `${path}.ports`, errs).forEach((rp, j) => {
      const p = objAt(rp, `${path}.ports[${j}]`, errs);
      if (!p) return;
      portNumber(own(p, 'port'), `${path}.ports[${j}].port`, errs);
      protocol(own(p, 'protocol'), `${path}.ports[${j}].protocol`, errs);
    });
  });
}

export const ADDRESS_TYPES = ['IPv4', 'IPv6', 'FQDN'] as const;

export function validateEndpointSlice(slice: Obj, errs: FieldError[]): void {
  const addressType = strAt(own(slice, 'addressType'), 'addressType', errs);
  if (addressType === undefined) errs.push(fieldErrors.required('addressType'));
  else if (!(ADDRESS_TYPES as readonly string[]).includes(addressType)) {
    errs.push(fieldErrors.notSupported('addressType', addressType, ADDRESS_TYPES));
  }
  arrAt(own(slice, 'ports'), 'ports', errs).forEach((rp, j) => {
    const p = objAt(rp, `ports[${j}]`, errs);
    if (!p) return;
    if (own(p, 'port') !== undefined) portNumber(own(p, 'port'), `ports[${j}].port`, errs);
    protocol(own(p, 'protocol'), `ports[${j}].protocol`, errs);
  });
}
