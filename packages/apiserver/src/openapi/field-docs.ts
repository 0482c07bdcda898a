// What the OpenAPI documents say about each definition and its fields, in
// Kubit's own words: one table, next to the schemas of model/schema.ts, read
// by `kubectl explain`. Keys are definition names; inside an entry, fields are
// named by their path within the definition ("strategy.rollingUpdate" for a
// field of an inline object), and `required` lists, per path ('' for the
// definition itself), the fields a valid object must have.

export interface DefinitionDocs {
  about: string;
  fields?: Record<string, string>;
  required?: Record<string, string[]>;
}

/** Fields every kind has, described once. */
export const commonFieldDocs: Record<string, string> = {
  apiVersion:
    'The versioned schema of this object, as group/version (just the version for the core group). The server answers in the version the client asked for.',
  kind: 'The kind of this object, in CamelCase; together with apiVersion it names the schema of the body.',
  metadata: 'Identity and bookkeeping of the object: name, namespace, labels, annotations, owners.',
  spec: 'What the user wants this object to be; controllers work to make the status match it.',
  status:
    'What the system last observed about this object. Written by controllers and the kubelet, not by users.',
};

const probeOrAny = 'Kept as given; Kubit does not type this field.';

export const definitionDocs: Record<string, DefinitionDocs> = {
  'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': {
    about: 'The metadata every persisted object carries.',
    fields: {
      name: "The object's name, unique among objects of its kind in its namespace. Mostly fixed once created.",
      generateName:
        'A prefix the server completes with a random suffix to make a unique name, used when name is empty.',
      namespace: 'The namespace that scopes the name. Empty for cluster-scoped kinds.',
      selfLink: 'Not set by this server (deprecated).',
      uid: 'A unique identifier the server assigns on create; it never repeats for another object.',
      resourceVersion:
        'An opaque version of the object, changed by every write. Send it back to make an update conditional.',
      generation: 'A counter of changes to the desired state (spec), set by the server.',
      creationTimestamp: 'When the server created the object (RFC 3339, UTC).',
      deletionTimestamp:
        'When deletion was asked for; the object goes once its finalizers are gone. Set by the server.',
      deletionGracePeriodSeconds: 'Seconds the object is given to end gracefully once deletion began.',
      labels: 'Key-value pairs that selectors match on (services, controllers, kubectl -l).',
      annotations: 'Key-value pairs for tools and people; not used by selectors.',
      ownerReferences:
        'The objects this one belongs to. When every owner is gone the garbage collector removes it.',
      finalizers: 'Names of what must finish before the object is removed from storage.',
      managedFields: 'Which manager set which fields, for server-side apply.',
    },
  },
  'io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector': {
    about: 'Chooses objects by their labels; an empty selector matches everything, a missing one nothing.',
    fields: {
      matchLabels: 'Labels an object must have with exactly these values.',
      matchExpressions: 'Requirements on labels (In, NotIn, Exists, DoesNotExist), all of which must hold.',
    },
  },
  'io.k8s.api.core.v1.Pod': {
    about: 'One or more containers run together on one node, sharing a network namespace and volumes.',
  },
  'io.k8s.api.core.v1.PodSpec': {
    about: 'What a pod runs and how.',
    required: { '': ['containers'] },
    fields: {
      volumes: 'Volumes the containers of the pod can mount.',
      initContainers:
        'Containers run one after another, each to completion, before the main containers start.',
      containers: 'The containers of the pod. At least one; they cannot be added or removed later.',
      ephemeralContainers: 'Containers added to a running pod for debugging.',
      restartPolicy: 'When the kubelet restarts exited containers: Always (default), OnFailure or Never.',
      terminationGracePeriodSeconds:
        'Seconds between the stop signal and the kill on deletion. Defaults to 30.',
      activeDeadlineSeconds: 'Seconds the pod may be active before the system fails it.',
      dnsPolicy:
        "How the pod's resolv.conf is made: ClusterFirst (default), Default, None, ClusterFirstWithHostNet.",
      nodeSelector: 'Labels a node must have for the pod to be scheduled there.',
      serviceAccountName: 'The ServiceAccount the pod runs as; its token is mounted into the containers.',
      serviceAccount: 'Deprecated alias of serviceAccountName.',
      automountServiceAccountToken: 'Whether the ServiceAccount token is mounted.',
      nodeName: 'The node the pod is bound to. Set by the scheduler; setting it yourself skips scheduling.',
      hostNetwork: "Run in the node's network namespace instead of the pod's own.",
      hostname: "The pod's hostname; defaults to its name.",
      subdomain: 'With a headless Service of this name, gives the pod a DNS name under it.',
      affinity: 'Scheduling constraints: node affinity and pod (anti-)affinity.',
      schedulerName: 'The scheduler that places this pod.',
      tolerations: 'The node taints the pod tolerates.',
      priorityClassName: 'The PriorityClass that gives the pod its priority.',
      securityContext: 'Security settings for all containers of the pod.',
      imagePullSecrets: 'Secrets holding registry credentials for pulling the images.',
    },
  },
  'io.k8s.api.core.v1.Container': {
    about: 'One container of a pod: an image and how to run it.',
    required: { '': ['name'] },
    fields: {
      name: "The container's name, a DNS label unique in the pod.",
      image: 'The image to run, as a registry reference.',
      command: "The entrypoint, replacing the image's ENTRYPOINT. Not run in a shell.",
      args: "Arguments to the entrypoint, replacing the image's CMD.",
      workingDir: "The working directory; the image's by default.",
      ports: 'Ports the container listens on, for information and for naming them.',
      env: 'Environment variables set in the container.',
      envFrom: 'ConfigMaps and Secrets whose keys become environment variables.',
      resources: 'The compute resources (cpu, memory) requested and the limits.',
      volumeMounts: "Where the pod's volumes appear in the container's filesystem.",
      livenessProbe: `A check that restarts the container when it fails. ${probeOrAny}`,
      readinessProbe: `A check that takes the pod out of service endpoints while it fails. ${probeOrAny}`,
      imagePullPolicy: 'When to pull the image: Always, IfNotPresent or Never.',
      securityContext: 'Security settings of this container.',
      stdin: 'Keep a stdin open for the container (kubectl attach).',
      tty: 'Give the container a terminal.',
    },
  },
  'io.k8s.api.core.v1.PodTemplateSpec': {
    about: 'The pods a workload controller makes: their metadata and spec.',
    fields: {
      metadata: 'Labels and annotations given to every pod made from this template.',
      spec: 'The spec of every pod made from this template.',
    },
  },
  'io.k8s.api.core.v1.ResourceRequirements': {
    about: 'Compute resources a container asks for and may not exceed.',
    fields: {
      limits: 'The most of each resource the container may use.',
      requests: 'The resources the scheduler reserves for the container.',
    },
  },
  'io.k8s.api.apps.v1.Deployment': {
    about:
      'Keeps a number of identical pods running through ReplicaSets, and rolls out changes to their template.',
  },
  'io.k8s.api.apps.v1.DeploymentSpec': {
    about: 'The desired state of a Deployment.',
    required: { '': ['selector', 'template'] },
    fields: {
      replicas: 'How many pods to run. Defaults to 1.',
      selector: "Which pods belong to this Deployment; must match the template's labels and never changes.",
      template: 'The pods to run.',
      strategy: 'How a new template replaces the old pods.',
      'strategy.type':
        'RollingUpdate (default) replaces pods gradually; Recreate removes all old pods first.',
      'strategy.rollingUpdate': 'The pace of a RollingUpdate.',
      'strategy.rollingUpdate.maxUnavailable':
        'How many pods (a number or a percentage of replicas) may be unavailable during the update. Defaults to 25%.',
      'strategy.rollingUpdate.maxSurge':
        'How many pods (a number or a percentage of replicas) may exist above replicas during the update. Defaults to 25%.',
      minReadySeconds: 'Seconds a new pod must be ready before it counts as available.',
      revisionHistoryLimit: 'How many old ReplicaSets to keep for rollbacks. Defaults to 10.',
      paused: 'Stops the rollout of template changes while true.',
      progressDeadlineSeconds: 'Seconds without progress after which the rollout is reported as failed.',
    },
  },
  'io.k8s.api.apps.v1.ReplicaSet': {
    about: 'Keeps a number of pods matching a selector running.',
  },
  'io.k8s.api.apps.v1.ReplicaSetSpec': {
    about: 'The desired state of a ReplicaSet.',
    required: { '': ['selector'] },
    fields: {
      replicas: 'How many pods to run. Defaults to 1.',
      selector: "Which pods count towards replicas; must match the template's labels.",
      template: 'The pods made when there are too few.',
      minReadySeconds: 'Seconds a new pod must be ready before it counts as available.',
    },
  },
  'io.k8s.api.apps.v1.DaemonSet': { about: 'Runs one pod on every eligible node.' },
  'io.k8s.api.apps.v1.DaemonSetSpec': {
    about: 'The desired state of a DaemonSet.',
    required: { '': ['selector', 'template'] },
    fields: {
      selector: "Which pods belong to this DaemonSet; must match the template's labels.",
      template: 'The pod run on each node.',
      updateStrategy: 'How a new template replaces the pods: RollingUpdate (default) or OnDelete.',
    },
  },
  'io.k8s.api.apps.v1.StatefulSet': {
    about: 'Runs pods with stable names (name-0, name-1, …) and their own persistent volume claims.',
  },
  'io.k8s.api.apps.v1.StatefulSetSpec': {
    about: 'The desired state of a StatefulSet.',
    required: { '': ['selector', 'template'] },
    fields: {
      replicas: 'How many ordinal pods to run. Defaults to 1.',
      selector: "Which pods belong to this StatefulSet; must match the template's labels.",
      template: 'The pods to run; each gets its ordinal in its name.',
      volumeClaimTemplates: 'Claims made for each pod, named after the template and the pod.',
      serviceName: 'The headless Service that gives the pods their DNS names.',
      podManagementPolicy: 'OrderedReady (default) starts pods one at a time in order; Parallel all at once.',
    },
  },
  'io.k8s.api.batch.v1.Job': { about: 'Runs pods until a number of them succeed.' },
  'io.k8s.api.batch.v1.JobSpec': {
    about: 'The desired state of a Job.',
    required: { '': ['template'] },
    fields: {
      parallelism: 'How many pods may run at once.',
      completions: 'How many pods must succeed for the Job to be complete.',
      backoffLimit: 'How many failed pods are retried before the Job fails. Defaults to 6.',
      template: 'The pods to run; their restartPolicy must be Never or OnFailure.',
      completionMode: 'NonIndexed (default) or Indexed, where each pod gets its own completion index.',
      suspend: 'While true no pods are started, and running ones are stopped.',
    },
  },
  'io.k8s.api.batch.v1.CronJob': { about: 'Creates Jobs on a schedule.' },
  'io.k8s.api.batch.v1.CronJobSpec': {
    about: 'The desired state of a CronJob.',
    required: { '': ['schedule', 'jobTemplate'] },
    fields: {
      schedule: 'When to create Jobs, in cron format.',
      jobTemplate: 'The Jobs to create.',
      concurrencyPolicy: 'What to do when a run is due while the last still runs: Allow, Forbid or Replace.',
    },
  },
  'io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler': {
    about: "Scales a workload's replicas to keep its pods' metrics (CPU, memory) near their targets.",
  },
  'io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec': {
    about: 'The desired state of a HorizontalPodAutoscaler.',
    required: { '': ['scaleTargetRef', 'maxReplicas'] },
    fields: {
      scaleTargetRef:
        'The object to scale, through its scale subresource (a Deployment, a StatefulSet, ...).',
      minReplicas: 'The fewest replicas it scales down to (at least 1). Defaults to 1.',
      maxReplicas: 'The most replicas it scales up to; not below minReplicas.',
      metrics:
        "What to measure and the target for each; the replicas follow the most demanding. Defaults to 80% of the pods' CPU requests.",
      behavior: 'How fast it scales up and down: stabilization windows and scaling policies.',
    },
  },
  'io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler': {
    about: 'A HorizontalPodAutoscaler in its v1 form: a CPU utilization target only.',
  },
  'io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerSpec': {
    about: 'The desired state of a HorizontalPodAutoscaler (v1).',
    required: { '': ['scaleTargetRef', 'maxReplicas'] },
    fields: {
      targetCPUUtilizationPercentage:
        "The pods' average CPU use to keep, as a percentage of their requests. Defaults to 80.",
    },
  },
  'io.k8s.api.core.v1.Service': {
    about: 'A stable virtual address and DNS name in front of the pods a selector matches.',
  },
  'io.k8s.api.core.v1.ServiceSpec': {
    about: 'The desired state of a Service.',
    required: { 'ports[]': ['port'] },
    fields: {
      ports: 'The ports the Service exposes.',
      'ports[].port': 'The port the Service listens on.',
      'ports[].targetPort': "The pods' port (a number or a container port's name). Defaults to port.",
      selector: 'The labels of the pods traffic goes to.',
      type: 'ClusterIP (default), NodePort, LoadBalancer or ExternalName.',
      clusterIP: 'The virtual address; assigned by the server unless given, "None" for a headless Service.',
    },
  },
  'io.k8s.api.core.v1.ConfigMap': {
    about: 'Configuration as key-value pairs, for pods to read as files or environment variables.',
    fields: {
      data: 'UTF-8 values by key.',
      binaryData: 'Base64-encoded binary values by key.',
      immutable: 'When true, data can no longer change.',
    },
  },
  'io.k8s.api.core.v1.Secret': {
    about: 'Sensitive data (passwords, tokens, keys) for pods to read.',
    fields: {
      data: 'Base64-encoded values by key.',
      stringData: 'Plain values by key, merged into data on write.',
    },
  },
  'io.k8s.api.core.v1.Namespace': { about: 'A scope for names, and a unit of policy and deletion.' },
  'io.k8s.api.core.v1.Node': { about: 'A machine that runs pods, registered by its kubelet.' },
  'io.k8s.api.core.v1.ServiceAccount': { about: 'An identity for the processes of pods.' },
  'io.k8s.api.rbac.v1.RoleBinding': {
    about: "Grants a role's permissions to subjects in a namespace.",
    required: { '': ['roleRef'] },
  },
  'io.k8s.api.rbac.v1.ClusterRoleBinding': {
    about: "Grants a cluster role's permissions to subjects in every namespace.",
    required: { '': ['roleRef'] },
  },
  'io.k8s.api.storage.v1.StorageClass': {
    about: 'A kind of storage that claims can ask for, and how it is provisioned.',
    required: { '': ['provisioner'] },
  },
  'io.k8s.api.core.v1.PodTemplate': {
    about: 'A named pod template, kept for tools that create pods from it.',
    fields: { template: 'The pod template: the metadata and spec of the pods made from it.' },
  },
  'io.k8s.api.scheduling.v1.PriorityClass': {
    about: 'A name for a pod priority: pods that name the class get its value as their priority.',
    fields: {
      value: 'The priority pods of this class get; at most 1000000000 for classes users define.',
      globalDefault: 'Whether pods that name no class get this one. At most one class is the default.',
      description: 'When this class should be used, in words.',
      preemptionPolicy:
        'PreemptLowerPriority (the default) or Never: whether its pods may preempt lower-priority pods.',
    },
    required: { '': ['value'] },
  },
  'io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy': {
    about:
      'CEL validations the apiserver runs in admission on the requests its matchConstraints select, for each binding of it.',
  },
  'io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec': {
    about: 'What the policy checks, on which requests, and what an evaluation error means.',
    fields: {
      paramKind: 'The kind (apiVersion and kind) of the objects bindings name as params; absent: no params.',
      matchConstraints:
        'The requests the policy applies to: resourceRules (required), excludeResourceRules, namespace and object selectors, matchPolicy.',
      validations:
        'CEL expressions that must evaluate to true; a false one refuses (or warns, or audits) with its message, messageExpression or the expression itself.',
      failurePolicy:
        'Fail (the default) or Ignore: what an expression that errors, or a configuration error, does.',
      auditAnnotations: 'Keys and CEL valueExpressions for the audit log.',
      matchConditions:
        'CEL expressions that must all be true for the policy to apply (any false skips it); at most 64.',
      variables: 'Named CEL expressions evaluated before the validations, which name them as variables.NAME.',
    },
    required: { '': ['matchConstraints'] },
  },
  'io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding': {
    about:
      'Binds a ValidatingAdmissionPolicy to requests and params, and says what a failed validation does.',
  },
  'io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec': {
    about: 'Which policy, with which params, on which requests, acted on how.',
    fields: {
      policyName: 'The ValidatingAdmissionPolicy bound.',
      paramRef:
        "The params: one object by name, or those a selector picks (namespace: the request's when unset), and parameterNotFoundAction Allow or Deny.",
      matchResources: 'Narrows the requests of the policy further; absent: all it matches.',
      validationActions:
        'Deny (refuse the request), Warn (a Warning header) and/or Audit (logged); Deny and Warn exclude each other.',
    },
    required: { '': ['policyName', 'validationActions'] },
  },
  'io.k8s.api.discovery.v1.EndpointSlice': {
    about: 'A share of the endpoints of a Service.',
    required: { '': ['addressType', 'endpoints'] },
  },
  'io.k8s.api.networking.v1.NetworkPolicy': {
    about:
      'Which traffic the selected pods may receive and send. Each node enforces it for its own pods; what no policy selects is not filtered.',
    fields: {
      'spec.podSelector':
        'The pods of this namespace the policy applies to; the empty selector selects all of them.',
      'spec.ingress':
        'Traffic the selected pods may receive: a connection is allowed when any rule of any policy that selects the pod allows it.',
      'spec.egress': 'Traffic the selected pods may send, allowed by the same union of rules.',
      'spec.policyTypes':
        'Ingress, Egress or both: the directions in which the selected pods are isolated. Defaults to Ingress, plus Egress when egress rules are given.',
    },
  },
};
