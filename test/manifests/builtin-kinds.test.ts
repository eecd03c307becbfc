// Every built-in object under manifests/ is valid for its kind (kubernetes-models),
// and the hook server, the challenge namespace, Metacontroller's RBAC and the
// admission policy say what they must.
import t, { type Test } from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { SHUTDOWN_BACKSTOP_MS } from '../../src/main.js'
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1'
import {
  MutatingAdmissionPolicy,
  MutatingAdmissionPolicyBinding,
  ValidatingAdmissionPolicy,
  ValidatingAdmissionPolicyBinding,
} from 'kubernetes-models/admissionregistration.k8s.io/v1'
import { Deployment } from 'kubernetes-models/apps/v1'
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2'
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1'
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1'
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1'
import { LimitRange, Namespace, ResourceQuota, Service, ServiceAccount } from 'kubernetes-models/v1'
import {
  PodMonitor,
  PrometheusRule,
  ServiceMonitor,
} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1'
import { loadManifests, type ManifestObject } from '../helpers/manifests.js'

const models: Record<string, new (data: never) => { validate(): void }> = {
  'apiextensions.k8s.io/v1/CustomResourceDefinition': CustomResourceDefinition,
  'admissionregistration.k8s.io/v1/MutatingAdmissionPolicy': MutatingAdmissionPolicy,
  'admissionregistration.k8s.io/v1/MutatingAdmissionPolicyBinding': MutatingAdmissionPolicyBinding,
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy': ValidatingAdmissionPolicy,
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding': ValidatingAdmissionPolicyBinding,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  // The monitoring component's objects, against the Prometheus Operator's own schemas.
  'monitoring.coreos.com/v1/PodMonitor': PodMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
  'v1/LimitRange': LimitRange,
  'v1/Namespace': Namespace,
  'v1/ResourceQuota': ResourceQuota,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
}
// Validated elsewhere: against Metacontroller's CRD (compositecontroller.test.ts) and ours (crds.test.ts); the
// Prometheus Operator's kinds of the monitoring component by what they select (kustomization.test.ts) and by
// promtool (test/monitoring/).
const customKinds = new Set([
  'metacontroller.k8s.io/v1alpha1/CompositeController',
  'challenge-hooks.dev/v1alpha1/ChallengeDefinition',
  'challenge-hooks.dev/v1alpha1/Challenge',
  'monitoring.coreos.com/v1/ServiceMonitor',
  'monitoring.coreos.com/v1/PodMonitor',
  'monitoring.coreos.com/v1/PrometheusRule',
])

const manifests = loadManifests()
const objects = manifests.map((m) => m.object)
function find<T>(kind: string, name: string, namespace?: string): T {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name && o.metadata.namespace === namespace)
  if (found === undefined) throw new Error(`no ${kind} ${namespace ?? ''}/${name} under manifests/`)
  return found as T
}

t.test('every built-in object validates with kubernetes-models; no other kind is present', async (t) => {
  for (const { file, object } of manifests) {
    const key = `${object.apiVersion}/${object.kind}`
    const label = `${key} ${object.metadata.name} (${file})`
    const Model = models[key]
    if (Model === undefined) {
      t.ok(customKinds.has(key), `${label} is a known kind`)
      continue
    }
    t.doesNotThrow(() => new Model(object as never).validate(), label)
  }
})

t.test('hook server Deployment', async (t) => {
  const deployment = new Deployment(find('Deployment', 'challenge-hooks', 'challenge-hooks'))
  const spec = deployment.spec!
  const pod = spec.template.spec!
  const [container] = pod.containers
  t.equal(pod.containers.length, 1)
  t.equal(spec.replicas, undefined, 'replicas are left to the HorizontalPodAutoscaler')
  t.match(
    spec.template.metadata?.labels,
    spec.selector.matchLabels ?? { missing: true },
    'selector matches the pod template',
  )
  t.equal(pod.serviceAccountName, 'challenge-hooks')
  t.equal(pod.automountServiceAccountToken, false)
  t.equal(pod.terminationGracePeriodSeconds, 30)
  t.strictSame(pod.securityContext, {
    runAsNonRoot: true,
    runAsUser: 10001,
    runAsGroup: 10001,
    seccompProfile: { type: 'RuntimeDefault' },
  })
  t.strictSame(
    pod.topologySpreadConstraints?.map((c) => [c.topologyKey, c.whenUnsatisfiable, c.labelSelector?.matchLabels]),
    ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'].map((key) => [
      key,
      'ScheduleAnyway',
      spec.selector.matchLabels,
    ]),
  )
  t.match(container, {
    image: 'ghcr.io/challenge-hooks/challenge-hooks:0.1.0',
    ports: [
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { name: 'ops', containerPort: 8081, protocol: 'TCP' },
    ],
    // Probes on the operations listener, apart from the hook calls.
    livenessProbe: { httpGet: { path: '/healthz', port: 'ops' } },
    readinessProbe: { httpGet: { path: '/readyz', port: 'ops' } },
    securityContext: {
      runAsNonRoot: true,
      runAsUser: 10001,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
  })
  t.equal(container?.lifecycle?.preStop, undefined, 'no preStop: the server fails readiness on SIGTERM and drains')
  for (const kind of ['requests', 'limits'] as const) {
    t.match(container?.resources?.[kind], { cpu: /./, memory: /./ }, `resources.${kind}`)
  }
  t.strictSame(
    container?.env?.map((e) => [e.name, e.value ?? e.valueFrom?.secretKeyRef]),
    [
      ['NODE_ENV', 'production'],
      ['PORT', '8080'],
      ['OPS_PORT', '8081'],
      ['LOG_LEVEL', 'info'],
      ['FLAG_SECRET', { name: 'challenge-hooks-secrets', key: 'FLAG_SECRET' }],
      ['HOOK_TOKEN', { name: 'challenge-hooks-secrets', key: 'HOOK_TOKEN' }],
      // Optional: present only while a token rotation is under way.
      ['HOOK_TOKEN_PREVIOUS', { name: 'challenge-hooks-secrets', key: 'HOOK_TOKEN_PREVIOUS', optional: true }],
    ],
  )
  t.strictSame(container?.envFrom, [{ configMapRef: { name: 'challenge-hooks-config' } }])

  // The server as this Deployment configures it: its ports are the probes' and its shutdown ends before SIGKILL.
  const plain = (container?.env ?? []).filter((e) => e.value !== undefined && e.name !== 'NODE_ENV')
  const config = loadConfig(Object.fromEntries(plain.map((e) => [e.name, e.value])))
  const portNamed = (name: string) => container?.ports?.find((port) => port.name === name)?.containerPort
  t.strictSame(
    [portNamed('http'), portNamed('ops')],
    [config.port, config.opsPort],
    'PORT and OPS_PORT are the named container ports',
  )
  const grace = (pod.terminationGracePeriodSeconds as number) * 1000
  t.ok(
    config.shutdownTimeoutMs <= grace / 2,
    `calls are cut at ${config.shutdownTimeoutMs} ms, well inside the ${grace} ms grace period`,
  )
  t.ok(
    config.shutdownTimeoutMs + SHUTDOWN_BACKSTOP_MS < grace,
    'even the backstop (close-with-grace) exits before the kubelet kills',
  )
  t.strictSame(container?.volumeMounts, [{ name: 'tmp', mountPath: '/tmp' }])
  t.match(pod.volumes, [{ name: 'tmp', emptyDir: { sizeLimit: /./ } }])
})

t.test(
  'Service, ServiceAccount, PodDisruptionBudget, HorizontalPodAutoscaler, NetworkPolicy of the hook server',
  async (t) => {
    const podLabels = new Deployment(find('Deployment', 'challenge-hooks', 'challenge-hooks')).spec!.template.metadata!
      .labels!
    const service = new Service(find('Service', 'challenge-hooks', 'challenge-hooks'))
    t.match(podLabels, service.spec!.selector!, 'Service selects the hook pods')
    t.strictSame(service.spec?.ports, [
      { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' },
      { name: 'ops', port: 8081, targetPort: 'ops', protocol: 'TCP' },
    ])

    t.equal(
      new ServiceAccount(find('ServiceAccount', 'challenge-hooks', 'challenge-hooks')).automountServiceAccountToken,
      false,
    )

    const pdb = new PodDisruptionBudget(find('PodDisruptionBudget', 'challenge-hooks', 'challenge-hooks'))
    t.equal(pdb.spec?.minAvailable, 1)
    t.match(
      podLabels,
      pdb.spec?.selector?.matchLabels ?? { missing: true },
      'PodDisruptionBudget selects the hook pods',
    )

    const hpa = new HorizontalPodAutoscaler(find('HorizontalPodAutoscaler', 'challenge-hooks', 'challenge-hooks'))
    t.match(hpa.spec, {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'challenge-hooks' },
      minReplicas: 2,
      maxReplicas: 10,
      metrics: [
        { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } },
      ],
    })

    const policy = new NetworkPolicy(find('NetworkPolicy', 'challenge-hooks', 'challenge-hooks'))
    t.match(
      podLabels,
      policy.spec?.podSelector?.matchLabels ?? { missing: true },
      'NetworkPolicy selects the hook pods',
    )
    t.strictSame(policy.spec?.policyTypes, ['Ingress', 'Egress'])
    t.strictSame(policy.spec?.ingress, [
      {
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'metacontroller' } } }],
        ports: [{ protocol: 'TCP', port: 8080 }],
      },
    ])
    t.equal(policy.spec?.egress, undefined, 'no egress at all')
  },
)

t.test('namespaces: challenge-hooks and challenges enforce the Restricted profile', async (t) => {
  for (const name of ['challenge-hooks', 'challenges']) {
    t.match(find<ManifestObject>('Namespace', name).metadata.labels, {
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
      'pod-security.kubernetes.io/warn': 'restricted',
    })
  }
})

t.test('challenges namespace baseline: default deny, quota, limits', async (t) => {
  const deny = new NetworkPolicy(find('NetworkPolicy', 'default-deny', 'challenges'))
  t.strictSame(deny.spec, { podSelector: {}, policyTypes: ['Ingress', 'Egress'] })
  const quota = new ResourceQuota(find('ResourceQuota', 'challenges', 'challenges'))
  t.strictSame(Object.keys(quota.spec?.hard ?? {}).sort(), [
    'count/challengedefinitions.challenge-hooks.dev',
    'count/challenges.challenge-hooks.dev',
    'count/secrets',
    'limits.cpu',
    'limits.ephemeral-storage',
    'limits.memory',
    'pods',
    'requests.cpu',
    'requests.ephemeral-storage',
    'requests.memory',
    'services.loadbalancers',
    'services.nodeports',
  ])
  const limits = new LimitRange(find('LimitRange', 'challenges', 'challenges'))
  const [container] = limits.spec?.limits ?? []
  t.equal(container?.type, 'Container')
  for (const kind of ['default', 'defaultRequest'] as const) {
    t.strictSame(Object.keys(container?.[kind] ?? {}).sort(), ['cpu', 'ephemeral-storage', 'memory'], kind)
  }
})

/** `<group>/<resource>` to its verbs, sorted; a wildcard or a resource granted twice fails. */
function grantsOf(
  t: Test,
  rules: readonly { apiGroups?: string[]; resources?: string[]; verbs: string[] }[],
): Record<string, string> {
  const grants = new Map<string, string>()
  for (const rule of rules) {
    t.notOk(rule.apiGroups?.includes('*') || rule.resources?.includes('*') || rule.verbs.includes('*'), 'no wildcard')
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        const key = `${group === '' ? 'core' : group}/${resource}`
        t.notOk(grants.has(key), `${key} is granted once`)
        grants.set(key, [...rule.verbs].sort().join(','))
      }
    }
  }
  return Object.fromEntries([...grants].sort())
}

t.test(
  "Metacontroller's RBAC is exactly what it needs for this controller: reads everywhere, writes where bound",
  async (t) => {
    const read = 'get,list,watch'
    const write = 'create,delete,patch,update'
    t.strictSame(
      grantsOf(t, new ClusterRole(find('ClusterRole', 'challenge-hooks-metacontroller')).rules ?? []),
      {
        'apiextensions.k8s.io/customresourcedefinitions': read,
        'apps/daemonsets': read,
        'apps/deployments': read,
        'challenge-hooks.dev/challengedefinitions': read,
        // The pools' parent: its status.pool, and blockOwnerDeletion on the pool's children; never the spec.
        'challenge-hooks.dev/challengedefinitions/finalizers': 'update',
        'challenge-hooks.dev/challengedefinitions/status': 'get,patch,update',
        // The parent's status and finalizer, also while its namespace (and the namespace's RoleBindings) is deleted.
        'challenge-hooks.dev/challenges': 'get,list,patch,update,watch',
        'challenge-hooks.dev/challenges/status': 'get,patch,update',
        // blockOwnerDeletion on every child needs it under OwnerReferencesPermissionEnforcement (OpenShift).
        'challenge-hooks.dev/challenges/finalizers': 'update',
        'core/events': 'create,patch',
        'core/limitranges': read,
        'core/namespaces': read,
        'core/pods': read,
        'core/secrets': read,
        'core/services': read,
        'metacontroller.k8s.io/compositecontrollers': read,
        'metacontroller.k8s.io/controllerrevisions': read,
        'metacontroller.k8s.io/decoratorcontrollers': read,
        'networking.k8s.io/ingresses': read,
        'networking.k8s.io/networkpolicies': read,
      },
      'cluster-wide: reading (its informers watch every namespace), events, and the parent',
    )
    t.strictSame(
      grantsOf(t, new ClusterRole(find('ClusterRole', 'challenge-hooks-metacontroller-write')).rules ?? []),
      {
        // Only to delete the Deployment an earlier release made the workload: Metacontroller removes it on upgrade.
        // A definition's pre-pull of its images (pool-controller.yaml).
        'apps/daemonsets': write,
        'apps/deployments': 'delete',
        'core/pods': write,
        'core/secrets': write,
        'core/services': write,
        'networking.k8s.io/ingresses': write,
        'networking.k8s.io/networkpolicies': write,
      },
      'writing the children, granted only where bound',
    )
    const subject = [{ kind: 'ServiceAccount', name: 'metacontroller', namespace: 'metacontroller' }]
    t.match(new ClusterRoleBinding(find('ClusterRoleBinding', 'challenge-hooks-metacontroller')), {
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'challenge-hooks-metacontroller' },
      subjects: subject,
    })
    const writeBindings = manifests
      .filter(
        (m) => m.object.metadata.name === 'challenge-hooks-metacontroller-write' && m.object.kind.endsWith('Binding'),
      )
      .map((m) => m.object)
    t.strictSame(
      writeBindings.map((b) => [b.kind, b.metadata.namespace]),
      [['RoleBinding', 'challenges']],
      'the writes are bound in the challenges namespace only, never cluster-wide',
    )
    t.match(new RoleBinding(find('RoleBinding', 'challenge-hooks-metacontroller-write', 'challenges')), {
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'challenge-hooks-metacontroller-write',
      },
      subjects: subject,
    })
    const leases = new Role(find('Role', 'challenge-hooks-metacontroller-leader-election', 'metacontroller'))
    t.strictSame(leases.rules, [
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'],
      },
    ])
    t.match(new RoleBinding(find('RoleBinding', 'challenge-hooks-metacontroller-leader-election', 'metacontroller')), {
      roleRef: { kind: 'Role', name: 'challenge-hooks-metacontroller-leader-election' },
      subjects: subject,
    })
  },
)

t.test('admission policy: Challenge labels must match spec.owner.id and spec.definitionRef.name', async (t) => {
  const policy = new ValidatingAdmissionPolicy(find('ValidatingAdmissionPolicy', 'challenge-hooks-challenge-labels'))
  t.equal(policy.spec?.failurePolicy, 'Fail')
  t.strictSame(policy.spec?.matchConstraints?.resourceRules, [
    {
      apiGroups: ['challenge-hooks.dev'],
      apiVersions: ['v1alpha1'],
      operations: ['CREATE', 'UPDATE'],
      resources: ['challenges'],
    },
  ])
  const validations = policy.spec?.validations ?? []
  t.equal(validations.length, 2)
  for (const [validation, label, field] of [
    [validations[0], 'challenge-hooks.dev/owner', 'object.spec.owner.id'],
    [validations[1], 'challenge-hooks.dev/definition', 'object.spec.definitionRef.name'],
  ] as const) {
    t.equal(
      validation?.expression,
      `has(object.metadata.labels) && '${label}' in object.metadata.labels && object.metadata.labels['${label}'] == ${field}`,
      'a missing label is rejected too',
    )
    t.match(validation?.message, new RegExp(`label ${label} must be set and equal to ${field.replace('object.', '')}`))
    t.match(validation?.messageExpression, field)
  }
  t.match(
    new ValidatingAdmissionPolicyBinding(find('ValidatingAdmissionPolicyBinding', 'challenge-hooks-challenge-labels'))
      .spec,
    {
      policyName: 'challenge-hooks-challenge-labels',
      validationActions: ['Deny'],
    },
  )
})
