// A Gateway API controller, reduced to what a hook observes: for every HTTPRoute and TLSRoute, one entry per parent
// Gateway that exists, in status.parents[], with the Accepted and ResolvedRefs conditions a conformant implementation
// writes. It follows the standard channel's attachment rules (GEP-1364 conditions, reasons from the API's types):
//   - the listener: by sectionName when the parentRef names one, otherwise every listener of the Gateway;
//   - the route kind a listener takes: allowedRoutes.kinds, or by protocol (HTTP/HTTPS: HTTPRoute, TLS: TLSRoute);
//   - the namespaces it takes: allowedRoutes.namespaces.from Same (default), All, or Selector (on the route
//     namespace's `kubernetes.io/metadata.name` label: the cluster models no Namespace objects);
//   - hostnames: a listener's hostname (exact or `*.` wildcard) must match one of the route's;
//   - ResolvedRefs: every backendRef names a Service of the route's namespace that exists.
// A parentRef to a Gateway that does not exist gets no entry: no controller speaks for it. Traefik's routes and
// Ingresses report nothing and are left alone.
import type { Cluster } from './cluster.js'
import { deepEqual, isObject, type JsonObject } from './json.js'
import { labelMatcher, type KubeObject, type LabelSelector } from './objects.js'

export const GATEWAY_API = 'gateway.networking.k8s.io/v1'
/** The controllerName every entry carries (as in the API's own conformance tests). */
export const GATEWAY_CONTROLLER = 'example.net/gateway-controller'
const ROUTE_KINDS = ['HTTPRoute', 'TLSRoute']
const PROTOCOL_KINDS: Record<string, string[]> = { HTTP: ['HTTPRoute'], HTTPS: ['HTTPRoute'], TLS: ['TLSRoute'] }

export interface ParentRef {
  group?: string
  kind?: string
  namespace?: string
  name: string
  sectionName?: string
}

interface Listener {
  name: string
  protocol: string
  hostname?: string
  allowedRoutes?: {
    namespaces?: { from?: 'Same' | 'All' | 'Selector'; selector?: LabelSelector }
    kinds?: Array<{ kind: string }>
  }
}

export interface RouteConditionInput {
  /** Accepted: True, or the reason it is not (NotAllowedByListeners, NoMatchingParent, ...) */
  accepted: true | string
  /** ResolvedRefs: True, or the reason it is not (BackendNotFound, RefNotPermitted, ...) */
  resolvedRefs: true | string
  message?: string
}

/**
 * One status.parents[] entry, as a gateway controller writes it: what a test writes by hand to play one (in the
 * simulator, or against a real API server), and what this controller writes itself.
 */
export function routeParentStatus(
  route: KubeObject,
  parentRef: ParentRef,
  input: RouteConditionInput,
  now: string,
): JsonObject {
  const generation = route.metadata.generation ?? 1
  const condition = (type: string, value: true | string) => ({
    type,
    status: value === true ? 'True' : 'False',
    reason: value === true ? type : value,
    message:
      value === true ? `The route is ${type === 'Accepted' ? 'accepted' : 'resolved'}.` : (input.message ?? value),
    observedGeneration: generation,
    lastTransitionTime: now,
  })
  return {
    parentRef,
    controllerName: GATEWAY_CONTROLLER,
    conditions: [condition('Accepted', input.accepted), condition('ResolvedRefs', input.resolvedRefs)],
  }
}

/** One round of the controller: every Gateway API route gets the status its parents' listeners imply. */
export function reconcileRoutes(cluster: Cluster): void {
  for (const kind of ROUTE_KINDS) {
    for (const route of cluster.list(GATEWAY_API, kind)) {
      if (route.metadata.deletionTimestamp === undefined) reconcileRoute(cluster, route)
    }
  }
}

function reconcileRoute(cluster: Cluster, route: KubeObject): void {
  const namespace = route.metadata.namespace as string
  const spec = route.spec as {
    parentRefs?: ParentRef[]
    hostnames?: string[]
    rules?: Array<{ backendRefs?: Array<{ name: string; kind?: string }> }>
  }
  const previous = ((isObject(route.status) ? route.status.parents : undefined) ?? []) as JsonObject[]
  const parents: JsonObject[] = []
  for (const parentRef of spec.parentRefs ?? []) {
    const gateway = cluster.get({
      apiVersion: GATEWAY_API,
      kind: 'Gateway',
      namespace: parentRef.namespace ?? namespace,
      name: parentRef.name,
    })
    if (gateway === undefined) continue
    const accepted = attachment(route, parentRef, gateway)
    const backends = (spec.rules ?? []).flatMap((rule) => rule.backendRefs ?? [])
    const missing = backends.find(
      (ref) => cluster.get({ apiVersion: 'v1', kind: 'Service', namespace, name: ref.name }) === undefined,
    )
    const entry = routeParentStatus(
      route,
      parentRef,
      { accepted, resolvedRefs: missing === undefined ? true : 'BackendNotFound' },
      cluster.timestamp(),
    )
    parents.push(
      keepTransitionTimes(
        entry,
        previous.find((old) => deepEqual(old.parentRef, parentRef)),
      ),
    )
  }
  cluster.updateStatus({ ...route, status: { parents } }, 'gateway-controller')
}

/** Accepted, or why not: the first listener rule the route fails, in the order the API documents them. */
function attachment(route: KubeObject, parentRef: ParentRef, gateway: KubeObject): true | string {
  const listeners = ((gateway.spec as { listeners?: Listener[] }).listeners ?? []).filter(
    (listener) => parentRef.sectionName === undefined || listener.name === parentRef.sectionName,
  )
  if (listeners.length === 0) return 'NoMatchingParent'
  const namespace = route.metadata.namespace as string
  const namespaceLabels = { 'kubernetes.io/metadata.name': namespace }
  const allowed = listeners.filter((listener) => {
    const kinds = listener.allowedRoutes?.kinds?.map((each) => each.kind) ?? PROTOCOL_KINDS[listener.protocol] ?? []
    const from = listener.allowedRoutes?.namespaces?.from ?? 'Same'
    const namespaceAllowed =
      from === 'All' ||
      (from === 'Same' && gateway.metadata.namespace === namespace) ||
      (from === 'Selector' && labelMatcher(listener.allowedRoutes?.namespaces?.selector)(namespaceLabels))
    return kinds.includes(route.kind) && namespaceAllowed
  })
  if (allowed.length === 0) return 'NotAllowedByListeners'
  const hostnames = (route.spec as { hostnames?: string[] }).hostnames ?? []
  const matches = allowed.some(
    (listener) =>
      listener.hostname === undefined ||
      hostnames.length === 0 ||
      hostnames.some((host) => hostMatches(listener.hostname as string, host)),
  )
  return matches ? true : 'NoMatchingListenerHostname'
}

/** A listener hostname (exact, or `*.` and then at least one label) against a route hostname. */
function hostMatches(listener: string, host: string): boolean {
  if (!listener.startsWith('*.')) return listener === host
  const suffix = listener.slice(1)
  return host.endsWith(suffix) && host.length > suffix.length
}

/** A condition keeps its lastTransitionTime while its status holds, as every controller does. */
function keepTransitionTimes(entry: JsonObject, previous: JsonObject | undefined): JsonObject {
  const before = (previous?.conditions ?? []) as JsonObject[]
  const conditions = (entry.conditions as JsonObject[]).map((condition) => {
    const old = before.find((each) => each.type === condition.type)
    return old !== undefined && old.status === condition.status
      ? { ...condition, lastTransitionTime: old.lastTransitionTime }
      : condition
  })
  return { ...entry, conditions }
}
