/**
 * What a Gateway says about a route: a Gateway API route carries traffic only once its parent reports it Accepted,
 * with its references resolved, in the route's status.parents[], for the route's current generation. Ingress and
 * Traefik's routes report nothing.
 */
import type { Config, GatewayRef } from '../config/config.js'
import type { KubeObject } from '../contract/protocol.js'
import { list as anyList, record as anyRecord, text, type Loose } from './untrusted.js'
import { GATEWAY_GROUP } from './traffic-routes.js'
import { readTime } from './time.js'

/** Why a route does not carry traffic yet; `reason` is the Gateway's, or `Pending` while it has said nothing. */
export interface RouteProblem {
  reason: string
  message: string
}

/** The Gateway's verdict: a problem, or the instant from which it has taken the route (its conditions' latest). */
export type RouteVerdict =
  { problem: RouteProblem; acceptedSince?: undefined } | { problem?: undefined; acceptedSince: number }

function record(value: unknown): Loose {
  return anyRecord(value) ?? {}
}

function list(value: unknown): Loose[] {
  return anyList(value).map(record)
}

/** A status entry for our parent: group and kind default as in the spec, the namespace to the route's. */
function isOurParent(
  ref: Loose,
  gateway: GatewayRef,
  listener: string | undefined,
  routeNamespace: string | undefined,
): boolean {
  return (
    (ref.group ?? GATEWAY_GROUP) === GATEWAY_GROUP &&
    (ref.kind ?? 'Gateway') === 'Gateway' &&
    (ref.namespace ?? routeNamespace) === gateway.namespace &&
    ref.name === gateway.name &&
    ref.sectionName === listener
  )
}

const CONDITIONS = ['Accepted', 'ResolvedRefs'] as const

/**
 * The first of Accepted and ResolvedRefs that is not True for the current generation (a condition written for an
 * older spec no longer counts), or, when both are, the later of their transition times.
 */
function judge(conditions: Loose[], generation: number): { type: string; reason: string } | { since: number } {
  let since = 0
  for (const type of CONDITIONS) {
    const found = conditions.find((each) => each.type === type)
    const observed = typeof found?.observedGeneration === 'number' ? found.observedGeneration : generation
    if (found?.status !== 'True' || observed < generation) {
      const reason = found === undefined || observed < generation ? 'Pending' : (text(found.reason) ?? 'Unknown')
      return { type, reason }
    }
    since = Math.max(since, readTime(found.lastTransitionTime) ?? 0)
  }
  return { since }
}

/** The Gateway's verdict on the route: accepted (since when), or why not. */
export function routeVerdict(route: KubeObject, kind: 'HTTPRoute' | 'TLSRoute', config: Config): RouteVerdict {
  const gateway = config.gateway as GatewayRef
  const listener = kind === 'TLSRoute' ? config.gatewayTlsListener : config.gatewayHttpListener
  const where = `Gateway ${gateway.namespace}/${gateway.name}${listener === undefined ? '' : ` (listener ${listener})`}`
  const generation = route.metadata.generation ?? 0
  const entries = list(record(route.status).parents).filter((entry) =>
    isOurParent(record(entry.parentRef), gateway, listener, route.metadata.namespace),
  )
  if (entries.length === 0)
    return { problem: { reason: 'Pending', message: `${where} has not reported on the ${kind} yet.` } }
  const verdicts = entries.map((entry) => judge(list(entry.conditions), generation))
  const accepted = verdicts.filter((verdict): verdict is { since: number } => 'since' in verdict)
  if (accepted.length > 0) return { acceptedSince: Math.min(...accepted.map((verdict) => verdict.since)) }
  const first = verdicts[0] as { type: string; reason: string }
  return {
    problem: {
      reason: first.reason,
      message: `${where} has not accepted the ${kind}: ${first.type} is not True (${first.reason}).`,
    },
  }
}
