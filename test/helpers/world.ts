/**
 * Builders for hook requests shaped as Metacontroller sends them: the parent Challenge, its children grouped
 * by `<Kind>.<apiVersion>` (one group per child rule, `{}` when empty) and the related objects of the
 * customize rules. Tests describe a world in a few lines and get a whole request.
 */
import { CHILD_GROUPS } from '../../src/contract/api.js'
import { ROUTE_KINDS, routeGroup } from '../../src/challenge/traffic-routes.js'
import type { KubeObject, ObjectGroups, SyncRequest } from '../../src/contract/protocol.js'

export const NAMESPACE = 'challenges'
export const UID = '5b1f0c2e-8f7d-4c53-9a59-0d7b3a1e2f10'

/** The child rules of the CompositeController: one group each, in every request. */
export { CHILD_GROUPS }
/** The base's child rules and every routing component's: what requests carry unless a test says otherwise. */
export const ALL_CHILD_GROUPS: readonly string[] = [...new Set([...CHILD_GROUPS, ...ROUTE_KINDS.map(routeGroup)])]

const API_VERSION_OF: Record<string, string> = {
  Secret: 'v1',
  Service: 'v1',
  Pod: 'v1',
  NetworkPolicy: 'networking.k8s.io/v1',
  Ingress: 'networking.k8s.io/v1',
  HTTPRoute: 'gateway.networking.k8s.io/v1',
  TLSRoute: 'gateway.networking.k8s.io/v1',
  IngressRoute: 'traefik.io/v1alpha1',
  IngressRouteTCP: 'traefik.io/v1alpha1',
  Deployment: 'apps/v1',
  Challenge: 'challenge-hooks.dev/v1alpha1',
  ChallengeDefinition: 'challenge-hooks.dev/v1alpha1',
}

export type Json = Record<string, unknown>

/** The condition of a type in a status, or undefined. */
export function conditionOf(status: Json, type: string): Json | undefined {
  return ((status.conditions ?? []) as Json[]).find((condition) => condition.type === type)
}

export interface ChallengeOptions {
  name?: string
  namespace?: string
  uid?: string
  owner?: string
  ownerKind?: 'User' | 'Team'
  definition?: string
  createdAt?: string
  spec?: Json
  status?: Json
  labels?: Record<string, string>
  deletionTimestamp?: string
  /**
   * `stored` (the default): as the API server stores it and Metacontroller sends it to the hooks (a uid, generation
   * and creation time, the spec's defaults filled in). `created`: as the CTF platform creates it, for a cluster
   * (the simulator's, or a real one) to store: none of these.
   */
  as?: 'stored' | 'created'
}

/** The one builder of Challenges for tests: the deterministic name, the two labels, the owner and the definition. */
export function challenge(options: ChallengeOptions = {}): KubeObject & { spec: Json } {
  const owner = options.owner ?? 'alice'
  const definition = options.definition ?? 'web-login'
  const stored = options.as !== 'created'
  const object: KubeObject & { spec: Json } = {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'Challenge',
    metadata: {
      name: options.name ?? `${definition}-u-${owner}`,
      namespace: options.namespace ?? NAMESPACE,
      ...(stored
        ? { uid: options.uid ?? UID, generation: 1, creationTimestamp: options.createdAt ?? '2026-11-22T11:59:00Z' }
        : {}),
      labels: options.labels ?? { 'challenge-hooks.dev/owner': owner, 'challenge-hooks.dev/definition': definition },
    },
    spec: {
      definitionRef: { name: definition },
      owner: { kind: options.ownerKind ?? 'User', id: owner },
      ...(stored ? { desiredState: 'Running', renewals: 0, restarts: 0 } : {}),
      ...options.spec,
    },
  }
  if (options.deletionTimestamp) object.metadata.deletionTimestamp = options.deletionTimestamp
  if (options.status) object.status = options.status
  return object
}

export function webDefinition(spec: Json = {}, name = 'web-login'): KubeObject {
  return {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    metadata: { name, namespace: NAMESPACE },
    spec: {
      displayName: 'Web login',
      pod: { containers: [{ name: 'web', image: 'ghcr.io/example/web-login:1.0', ports: [{ containerPort: 8080 }] }] },
      expose: { type: 'HTTP', port: 8080 },
      ...spec,
    },
  }
}

/** A netcat challenge behind TLS, routed by SNI. */
export function tlsDefinition(spec: Json = {}, name = 'pwn-tls'): KubeObject {
  return netcatDefinition({ displayName: 'Echo over TLS', expose: { type: 'TLS', port: 1337 }, ...spec }, name)
}

export function netcatDefinition(spec: Json = {}, name = 'pwn-echo'): KubeObject {
  return webDefinition(
    {
      displayName: 'Echo',
      pod: { containers: [{ name: 'echo', image: 'ghcr.io/example/pwn-echo:1.0' }] },
      expose: { type: 'NodePort', port: 1337 },
      network: { egress: 'None' },
      ...spec,
    },
    name,
  )
}

/** Groups objects as Metacontroller does; `version` picks the inner keys (v1: name, v2: namespace/name). */
export function groups(
  objects: KubeObject[],
  version: 'v1' | 'v2' = 'v1',
  always: readonly string[] = [],
): ObjectGroups {
  const result: ObjectGroups = {}
  for (const key of always) result[key] = {}
  for (const object of objects) {
    const kind = object.kind as string
    const key = `${kind}.${object.apiVersion ?? API_VERSION_OF[kind]}`
    const inner =
      version === 'v1' ? object.metadata.name : `${object.metadata.namespace ?? NAMESPACE}/${object.metadata.name}`
    ;(result[key] ??= {})[inner] = object
  }
  return result
}

export interface RequestOptions {
  children?: KubeObject[]
  /** the CompositeController's child rules (default: ALL_CHILD_GROUPS) */
  groups?: readonly string[]
  related?: KubeObject[]
  version?: 'v1' | 'v2'
  finalizing?: boolean
}

export function syncRequest(parent: KubeObject, options: RequestOptions = {}): SyncRequest {
  const version = options.version ?? 'v1'
  return {
    controller: {
      apiVersion: 'metacontroller.k8s.io/v1alpha1',
      kind: 'CompositeController',
      metadata: { name: 'challenge-hooks' },
    },
    parent: parent as SyncRequest['parent'],
    children: groups(options.children ?? [], version, options.groups ?? ALL_CHILD_GROUPS),
    related: groups(options.related ?? [], version),
    finalizing: options.finalizing ?? false,
  }
}

/**
 * The controller reference Metacontroller puts on every child it creates for the Challenge of `uid` (the hook
 * counts only children that carry it as the instance's own).
 */
export function controllerRef(uid: string, name = 'web-login-u-alice'): Json {
  return {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'Challenge',
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  }
}

/**
 * Observed copies of desired children, as the API server would return them after Metacontroller created them:
 * owned by the Challenge whose uid their `challenge-hooks.dev/uid` label names.
 */
export function observedChildren(desired: readonly Json[], extra: (child: Json) => Json = () => ({})): KubeObject[] {
  return desired.map((child) => {
    const copy = structuredClone(child) as KubeObject
    const owner = copy.metadata.labels?.['challenge-hooks.dev/uid'] ?? UID
    copy.metadata = {
      ...copy.metadata,
      namespace: NAMESPACE,
      uid: `uid-${copy.metadata.name}`,
      generation: 1,
      ownerReferences: [controllerRef(owner)],
    } as KubeObject['metadata']
    return { ...copy, ...extra(copy) }
  })
}

/** When readyWorld's pod became ready (and was scheduled and started just before): ten seconds before drive.ts's T0. */
export const READY_AT = '2026-11-22T11:59:50Z'
export const STARTED_AT = '2026-11-22T11:59:49Z'
export const SCHEDULED_AT = '2026-11-22T11:59:48Z'

/** The status a kubelet writes for a pod that runs and passes its readiness probe, since the times above. */
export function readyPodStatus(
  containers: Json[] = [{ name: 'web' }],
  times = { scheduled: SCHEDULED_AT, started: STARTED_AT, ready: READY_AT },
): Json {
  return {
    phase: 'Running',
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: times.scheduled },
      { type: 'Initialized', status: 'True', lastTransitionTime: times.scheduled },
      { type: 'ContainersReady', status: 'True', lastTransitionTime: times.ready },
      { type: 'Ready', status: 'True', lastTransitionTime: times.ready },
    ],
    containerStatuses: containers.map((container) => ({
      name: container.name,
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: times.started } },
    })),
  }
}

/** Makes the observed Pod ready (since READY_AT) and the Service allocated, as the cluster would. */
export function readyWorld(
  desired: readonly Json[],
  options: { nodePort?: number; lbAddress?: string } = {},
): KubeObject[] {
  return observedChildren(desired, (child) => {
    if (child.kind === 'Pod') return { status: readyPodStatus(((child.spec as Json).containers ?? []) as Json[]) }
    if (child.kind === 'Service') {
      const spec = structuredClone(child.spec) as { ports: Json[]; type: string; clusterIP?: string }
      spec.clusterIP = '10.96.0.10'
      if (spec.type !== 'ClusterIP') for (const port of spec.ports) port.nodePort = options.nodePort ?? 31337
      const status = options.lbAddress
        ? { loadBalancer: { ingress: [{ ip: options.lbAddress }] } }
        : { loadBalancer: {} }
      return { spec, status }
    }
    return {}
  })
}

/** The instance's Pod as Metacontroller made it (owned by the Challenge of `uid`), of `run`, with `status`. */
export function pod(instance: string, run: number, status: Json, name = instance, uid = UID): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: NAMESPACE,
      labels: {
        'app.kubernetes.io/managed-by': 'challenge-hooks',
        'challenge-hooks.dev/instance': instance,
        'challenge-hooks.dev/uid': uid,
      },
      annotations: { 'challenge-hooks.dev/run': String(run) },
      ownerReferences: [controllerRef(uid)],
    } as KubeObject['metadata'],
    spec: {},
    status,
  }
}

export function waitingPod(instance: string, run: number, reason: string, restartCount = 0, name?: string): KubeObject {
  return pod(
    instance,
    run,
    {
      phase: 'Pending',
      containerStatuses: [{ name: 'web', ready: false, restartCount, state: { waiting: { reason } } }],
    },
    name,
  )
}

/** Observed children with the Pod replaced by `replacement` (or removed when undefined). */
export function withPod(children: readonly KubeObject[], replacement: KubeObject | undefined): KubeObject[] {
  const others = children.filter((child) => child.kind !== 'Pod')
  return replacement === undefined ? others : [...others, replacement]
}
