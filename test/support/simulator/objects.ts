// Kubernetes object shapes, the resource table, owner references, label selectors and the grouping of objects in
// a hook request.
import type { HookVersion } from './related.js'

export interface OwnerReference {
  apiVersion: string
  kind: string
  name: string
  uid: string
  controller?: boolean
  blockOwnerDeletion?: boolean
}

export interface ManagedFieldsEntry {
  manager: string
  operation: 'Update'
  apiVersion: string
  time: string
  fieldsType: 'FieldsV1'
  fieldsV1: Record<string, unknown>
  subresource?: 'status'
}

export interface ObjectMeta {
  name: string
  generateName?: string
  namespace?: string
  uid?: string
  resourceVersion?: string
  generation?: number
  creationTimestamp?: string
  deletionTimestamp?: string
  deletionGracePeriodSeconds?: number
  labels?: Record<string, string>
  annotations?: Record<string, string>
  finalizers?: string[]
  ownerReferences?: OwnerReference[]
  managedFields?: ManagedFieldsEntry[]
}

/** An unstructured object: what the API server stores and what hooks see. */
export interface KubeObject {
  apiVersion: string
  kind: string
  metadata: ObjectMeta
  [field: string]: unknown
}

/** Identifies one object; `namespace` is '' for a cluster-scoped one (a Namespace). */
export interface ObjectRef {
  apiVersion: string
  kind: string
  namespace: string
  name: string
}

export interface ResourceType {
  apiVersion: string
  /** lowercase plural, as CompositeController rules and customize rules name it */
  resource: string
  kind: string
  /** has a status subresource: plain updates keep the stored status */
  statusSubresource: boolean
  /** false for a cluster-scoped resource; namespaced otherwise */
  namespaced?: false
}

/** The kinds this project uses (Metacontroller learns these from API discovery). */
export const RESOURCES: readonly ResourceType[] = [
  { apiVersion: 'v1', resource: 'secrets', kind: 'Secret', statusSubresource: false },
  { apiVersion: 'v1', resource: 'configmaps', kind: 'ConfigMap', statusSubresource: false },
  { apiVersion: 'v1', resource: 'services', kind: 'Service', statusSubresource: true },
  { apiVersion: 'v1', resource: 'pods', kind: 'Pod', statusSubresource: true },
  { apiVersion: 'v1', resource: 'namespaces', kind: 'Namespace', statusSubresource: true, namespaced: false },
  { apiVersion: 'v1', resource: 'limitranges', kind: 'LimitRange', statusSubresource: false },
  { apiVersion: 'apps/v1', resource: 'deployments', kind: 'Deployment', statusSubresource: true },
  // The pre-pull of a definition's images (manifests/pool-controller.yaml).
  { apiVersion: 'apps/v1', resource: 'daemonsets', kind: 'DaemonSet', statusSubresource: true },
  { apiVersion: 'networking.k8s.io/v1', resource: 'networkpolicies', kind: 'NetworkPolicy', statusSubresource: false },
  { apiVersion: 'networking.k8s.io/v1', resource: 'ingresses', kind: 'Ingress', statusSubresource: true },
  // Gateway API (standard channel) and Traefik: CRDs a cluster may or may not have; Traefik's report no status.
  { apiVersion: 'gateway.networking.k8s.io/v1', resource: 'gateways', kind: 'Gateway', statusSubresource: true },
  { apiVersion: 'gateway.networking.k8s.io/v1', resource: 'httproutes', kind: 'HTTPRoute', statusSubresource: true },
  { apiVersion: 'gateway.networking.k8s.io/v1', resource: 'tlsroutes', kind: 'TLSRoute', statusSubresource: true },
  { apiVersion: 'traefik.io/v1alpha1', resource: 'ingressroutes', kind: 'IngressRoute', statusSubresource: false },
  {
    apiVersion: 'traefik.io/v1alpha1',
    resource: 'ingressroutetcps',
    kind: 'IngressRouteTCP',
    statusSubresource: false,
  },
  { apiVersion: 'challenge-hooks.dev/v1alpha1', resource: 'challenges', kind: 'Challenge', statusSubresource: true },
  {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    resource: 'challengedefinitions',
    kind: 'ChallengeDefinition',
    statusSubresource: true,
  },
]

export function resourceByName(apiVersion: string, resource: string): ResourceType | undefined {
  return RESOURCES.find((r) => r.apiVersion === apiVersion && r.resource === resource)
}

export function resourceByKind(apiVersion: string, kind: string): ResourceType | undefined {
  return RESOURCES.find((r) => r.apiVersion === apiVersion && r.kind === kind)
}

/** The name of a children/related group in a hook request: `<Kind>.<apiVersion>` (e.g. `Deployment.apps/v1`). */
export function groupName(apiVersion: string, kind: string): string {
  return `${kind}.${apiVersion}`
}

export function refOf(obj: KubeObject): ObjectRef {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name,
  }
}

export function describe(ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace}/${ref.name}`
}

export function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((ref) => ref.controller === true)
}

export function controllerRefTo(parent: KubeObject): OwnerReference {
  return {
    apiVersion: parent.apiVersion,
    kind: parent.kind,
    name: parent.metadata.name,
    uid: String(parent.metadata.uid),
    controller: true,
    blockOwnerDeletion: true,
  }
}

// ---- label selectors (metav1.LabelSelector semantics) ----

export interface LabelSelectorRequirement {
  key: string
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'
  values?: string[]
}

export interface LabelSelector {
  matchLabels?: Record<string, string>
  matchExpressions?: LabelSelectorRequirement[]
}

export type LabelMatcher = (labels: Record<string, string> | undefined) => boolean

/** Compiles a selector; null/undefined and `{}` select everything. Throws on an invalid requirement. */
export function labelMatcher(selector: LabelSelector | null | undefined): LabelMatcher {
  const requirements: Array<(labels: Record<string, string>) => boolean> = []
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) {
    requirements.push((labels) => labels[key] === value)
  }
  for (const expression of selector?.matchExpressions ?? []) requirements.push(requirement(expression))
  return (labels) => requirements.every((matches) => matches(labels ?? {}))
}

function requirement({
  key,
  operator,
  values = [],
}: LabelSelectorRequirement): (labels: Record<string, string>) => boolean {
  switch (operator) {
    case 'In':
    case 'NotIn': {
      if (values.length === 0)
        throw new Error(`label selector: values must be non-empty for operator ${operator} (key ${key})`)
      const wanted = operator === 'In'
      return (labels) => (key in labels && values.includes(labels[key] as string)) === wanted
    }
    case 'Exists':
    case 'DoesNotExist': {
      if (values.length > 0)
        throw new Error(`label selector: values must be empty for operator ${operator} (key ${key})`)
      const wanted = operator === 'Exists'
      return (labels) => key in labels === wanted
    }
    default:
      throw new Error(`label selector: ${String(operator)} is not a valid operator (key ${key})`)
  }
}

/** `namespace/name`: the key of an object in a work queue and in a v2 hook request's groups. */
export function keyOf(obj: KubeObject): string {
  return `${obj.metadata.namespace}/${obj.metadata.name}`
}

/** `{"<Kind>.<apiVersion>": {key: object}}`: a group per rule even when empty; keys `name` (v1) or `namespace/name` (v2). */
export function groupObjects(
  groups: Array<[ResourceType, KubeObject[]]>,
  version: HookVersion,
): Record<string, Record<string, KubeObject>> {
  const result: Record<string, Record<string, KubeObject>> = {}
  for (const [resource, objects] of groups) {
    const group = (result[groupName(resource.apiVersion, resource.kind)] ??= {})
    for (const obj of objects) group[version === 'v1' ? obj.metadata.name : keyOf(obj)] = obj
  }
  return result
}
