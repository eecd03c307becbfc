/**
 * Author preview: what a Challenge would get from a ChallengeDefinition, without a cluster. It runs the same
 * pure sync as the server as Metacontroller would: the first sync, the one after its children were created (every
 * child, the Pod included: Pending), and one as if the cluster had made the pod ready long enough ago for its
 * endpoint to have settled (Running, with the endpoint players would see).
 *
 *   npm run render -- manifests/examples/web-login.yaml manifests/examples/web-login.yaml
 */
import type { ErrorObject } from 'ajv'
import { CHILD_GROUPS } from './contract/api.js'
import { sync } from './challenge/hooks.js'
import { ROUTE_KINDS, routeGroup } from './challenge/traffic-routes.js'
import type { Config } from './config/config.js'
import { INTERNET_WITHOUT_CLUSTER_CIDRS } from './config/config-warnings.js'
import { ChallengeObjectSchema, type KubeObject, type SyncRequest, type SyncResponse } from './contract/protocol.js'
import { schemaError } from './challenge/schema-errors.js'
import { compileSchema, DESCRIBED_OPTIONS } from './contract/validator.js'

export interface PreviewOptions {
  config: Config
  now: Date
}

export interface Preview {
  /**
   * The instance as created: every child Metacontroller would create (the Pod comes at the second sync, once the
   * flag Secret and the NetworkPolicies exist), and the status (Pending, or an Error).
   */
  first: SyncResponse
  /**
   * The sync after the pod became ready (ENDPOINT_SETTLE_MS ago), the Service got its address (NodePort 30000, LB
   * 192.0.2.1) and a Gateway accepted the route.
   */
  running: SyncResponse
  /** What the author or operator should know before running it (e.g. Internet egress without CLUSTER_CIDRS). */
  warnings: string[]
}

type Json = Record<string, unknown>

function grouped(objects: readonly Json[], always: readonly string[]): Record<string, Record<string, KubeObject>> {
  const groups: Record<string, Record<string, KubeObject>> = {}
  for (const key of always) groups[key] = {}
  for (const object of objects) {
    const key = `${String(object.kind)}.${String(object.apiVersion)}`
    const metadata = object.metadata as { name: string }
    ;(groups[key] ??= {})[metadata.name] = object as KubeObject
  }
  return groups
}

/** A cluster with every routing component installed: the preview shows the route of whatever routing is configured. */
const PREVIEW_CHILD_GROUPS = [...CHILD_GROUPS, ...ROUTE_KINDS.map(routeGroup)]

/** A child as Metacontroller creates it: in the namespace, owned by the Challenge (the hook counts no other). */
function asCreated(child: Json, parent: Json): Json & { metadata: Json; spec?: Json } {
  const created = structuredClone(child) as Json & { metadata: Json; spec?: Json }
  const { name, namespace, uid } = parent.metadata as { name: string; namespace: string; uid: string }
  const owner = {
    apiVersion: parent.apiVersion,
    kind: 'Challenge',
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  }
  created.metadata = { ...created.metadata, namespace, generation: 1, ownerReferences: [owner] }
  return created
}

/** A pod's status once its containers run and its readiness probe passes, since `since`. */
function readyPodStatus(pod: Json, since: string): Json {
  const containers = (pod.spec as { containers: { name: string }[] }).containers.map(({ name }) => ({
    name,
    ready: true,
    started: true,
    restartCount: 0,
    state: { running: { startedAt: since } },
  }))
  const conditions = ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
    type,
    status: 'True',
    lastTransitionTime: since,
  }))
  return { phase: 'Running', conditions, containerStatuses: containers }
}

/**
 * The cluster's side, roughly: the pod ready since `readySince`, ports and load-balancer address allocated, the
 * route accepted.
 */
function asObservedReady(child: Json, parent: Json, readySince: string): Json {
  const observed = asCreated(child, parent)
  if (child.kind === 'Pod') observed.status = readyPodStatus(observed, readySince)
  if (child.kind === 'Service') {
    const spec = observed.spec as { type: string; ports: Json[] }
    if (spec.type !== 'ClusterIP') spec.ports = spec.ports.map((port) => ({ ...port, nodePort: 30000 }))
    if (spec.type === 'LoadBalancer') observed.status = { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } }
  }
  if (child.kind === 'HTTPRoute' || child.kind === 'TLSRoute') {
    const { parentRefs } = observed.spec as { parentRefs: Json[] }
    const accepted = (type: string) => ({ type, status: 'True', reason: type, message: '', observedGeneration: 1 })
    observed.status = {
      parents: parentRefs.map((parentRef) => ({
        parentRef,
        controllerName: 'preview',
        conditions: [accepted('Accepted'), accepted('ResolvedRefs')],
      })),
    }
  }
  return observed
}

export class PreviewError extends Error {}

/** Fills in what the API server would (namespace, uid, labels, CRD defaults) so a bare example works. */
function asStored(challenge: Json, definition: Json, now: Date): Json {
  const metadata = { ...(challenge.metadata as Json) }
  const spec = { ...(challenge.spec as Json) }
  const owner = spec.owner as { id?: unknown } | undefined
  const definitionRef = spec.definitionRef as { name?: unknown } | undefined
  metadata.namespace ??= (definition.metadata as Json | undefined)?.namespace ?? 'default'
  metadata.uid ??= '00000000-0000-0000-0000-000000000000'
  metadata.creationTimestamp ??= now.toISOString()
  metadata.labels ??= {
    'challenge-hooks.dev/owner': String(owner?.id),
    'challenge-hooks.dev/definition': String(definitionRef?.name),
  }
  return { ...challenge, metadata, spec }
}

export function preview(definition: Json, challenge: Json, options: PreviewOptions): Preview {
  const parent = asStored(challenge, definition, options.now)
  const check = compileSchema(ChallengeObjectSchema, DESCRIBED_OPTIONS)
  if (!check(parent)) {
    const error = schemaError(check.errors as ErrorObject[])
    throw new PreviewError(`the Challenge is invalid: ${error.path} ${error.message}`)
  }
  const namespace = (parent.metadata as { namespace: string }).namespace
  const related = grouped([{ ...definition, metadata: { ...(definition.metadata as Json), namespace } }], [])
  const request = (children: Json[], status?: unknown): SyncRequest => ({
    parent: { ...parent, ...(status ? { status } : {}) } as SyncRequest['parent'],
    children: grouped(children, PREVIEW_CHILD_GROUPS),
    related,
    finalizing: false,
  })
  // The first sync asks for the flag Secret and the policies; the Pod comes once they are the instance's own.
  const created = sync(request([]), options.config, options.now)
  const first = sync(
    request(
      created.children.map((child) => asCreated(child, parent)),
      created.status,
    ),
    options.config,
    options.now,
  )
  const readySince = new Date(options.now.getTime() - options.config.endpointSettleMs).toISOString()
  const observed = first.children.map((child) => asObservedReady(child, parent, readySince))
  const running = sync(request(observed, first.status), options.config, options.now)
  const egress = ((definition.spec as Json | undefined)?.network as Json | undefined)?.egress
  const warnings =
    egress === 'Internet' && options.config.clusterCidrs.length === 0 ? [INTERNET_WITHOUT_CLUSTER_CIDRS] : []
  return { first, running, warnings }
}
