// The kubelet's errors to the apiserver are Kubernetes Statuses, as the apiserver
// passes them on to kubectl.

export interface FailureStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  code: number;
}

export function failureStatus(code: number, reason: string, message: string): FailureStatus {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}
