/**
 * What the instance's namespace would refuse, known before the pod is asked for. A bare Pod that admission refuses
 * is never created, so no object would carry the refusal back to the hook (Metacontroller only records an Event);
 * the namespace's Pod Security level and its LimitRanges change rarely, so the hook reads them (related objects)
 * and tells the player and the author why, instead of a StartupTimeout two minutes later.
 *
 * Checked here: the `pod-security.kubernetes.io/enforce` label against the definition's profile (the pods the hook
 * renders meet their profile's level), and each LimitRange's Container and Pod bounds on cpu, memory and
 * ephemeral-storage against the effective requests and limits (every standard resource has both, so no LimitRange
 * default applies). A cluster-wide default level and ResourceQuotas are not visible here: a pod they refuse ends in
 * StartupTimeout, whose message points at the Challenge's events.
 */
import type { KubeObject } from '../contract/protocol.js'
import type { ResolvedDefinition } from './definition.js'
import { findObject, objectsOfKind, type ObservedIndex } from './observed.js'
import { field, list, quote, text } from './untrusted.js'
import { effectiveResources, quantityValue } from './resources.js'

const ENFORCE_LABEL = 'pod-security.kubernetes.io/enforce'
const LEVELS = ['privileged', 'baseline', 'restricted'] as const
/** The level each profile's pods meet (children.ts renders them so; the real API server's variants test proves it). */
const PROFILE_LEVEL = { Restricted: 'restricted', Baseline: 'baseline' } as const
const BOUNDED = ['cpu', 'memory', 'ephemeral-storage']

/** The level a namespace enforces: Pod Security reads a value it does not know as the strictest level. */
function enforcedLevel(namespace: KubeObject | undefined): (typeof LEVELS)[number] {
  const value = text(field(field(namespace?.metadata, 'labels'), ENFORCE_LABEL))
  if (value === undefined) return 'privileged'
  return (LEVELS as readonly string[]).includes(value) ? (value as (typeof LEVELS)[number]) : 'restricted'
}

function podSecurityRefusal(
  definition: ResolvedDefinition,
  namespace: KubeObject | undefined,
  name: string,
): string | undefined {
  const enforced = enforcedLevel(namespace)
  const level = PROFILE_LEVEL[definition.profile]
  if (LEVELS.indexOf(level) >= LEVELS.indexOf(enforced)) return undefined
  return `The namespace ${name} enforces Pod Security "${enforced}", which the definition's ${definition.profile} profile does not meet: use security.profile Restricted, or label the namespace ${ENFORCE_LABEL}=${level}.`
}

type Amounts = Record<string, number>

function amounts(values: Record<string, string | number>): Amounts {
  const result: Amounts = {}
  // Every bounded resource has a request and a limit: the author's, or the default (effectiveResources).
  for (const name of BOUNDED) result[name] = quantityValue(values[name] as string | number) as number
  return result
}

/** Within rounding: two ways of writing one quantity are equal. */
const above = (value: number, bound: number) => value > bound * (1 + 1e-12)

/** One bound of a LimitRange item (`max.memory`), as written and as a value; undefined when absent or unreadable. */
function bound(item: unknown, key: string, name: string): { written: string; value: number } | undefined {
  const written = field(field(item, key), name)
  if (typeof written !== 'string' && typeof written !== 'number') return undefined
  const value = quantityValue(written)
  return value === undefined ? undefined : { written: String(written), value }
}

/** The first bound of one LimitRange item that `requests` and `limits` break, in the words of the refusal. */
function boundBroken(item: unknown, requests: Amounts, limits: Amounts, what: string): string | undefined {
  for (const name of BOUNDED) {
    const [request, limit] = [requests[name] as number, limits[name] as number]
    const max = bound(item, 'max', name)
    if (max !== undefined && above(limit, max.value))
      return `${what}'s ${name} limit is above the maximum ${max.written}`
    const min = bound(item, 'min', name)
    if (min !== undefined && above(min.value, request))
      return `${what}'s ${name} request is below the minimum ${min.written}`
    const ratio = bound(item, 'maxLimitRequestRatio', name)
    // Multiplied, not divided: a request of 0 breaks every ratio, as the API server wants both non-zero.
    if (ratio !== undefined && above(limit, request * ratio.value))
      return `${what}'s ${name} limit is more than ${ratio.written} times its request`
  }
  return undefined
}

function sum(each: Amounts[]): Amounts {
  const total: Amounts = {}
  for (const name of BOUNDED) total[name] = each.reduce((acc, amounts) => acc + (amounts[name] as number), 0)
  return total
}

function limitRangeRefusal(definition: ResolvedDefinition, limitRanges: KubeObject[]): string | undefined {
  const containers = definition.containers.map((container) => {
    const { requests, limits } = effectiveResources(container)
    return { name: container.name, requests: amounts(requests), limits: amounts(limits) }
  })
  for (const range of limitRanges) {
    for (const item of list(field(range.spec, 'limits'))) {
      const type = field(item, 'type')
      const broken =
        type === 'Container'
          ? containers
              .map((c) => boundBroken(item, c.requests, c.limits, `container ${c.name}`))
              .find((problem) => problem !== undefined)
          : type === 'Pod'
            ? boundBroken(item, sum(containers.map((c) => c.requests)), sum(containers.map((c) => c.limits)), 'the pod')
            : undefined
      if (broken !== undefined)
        return `The namespace's LimitRange ${quote(range.metadata.name)} refuses the pod: ${broken}.`
    }
  }
  return undefined
}

/** Why the namespace would refuse the instance's pod, or undefined. */
export function namespaceRefusal(
  definition: ResolvedDefinition,
  related: ObservedIndex,
  namespace: string,
): string | undefined {
  return (
    podSecurityRefusal(definition, findObject(related, 'Namespace', namespace), namespace) ??
    limitRangeRefusal(definition, objectsOfKind(related, 'LimitRange'))
  )
}
