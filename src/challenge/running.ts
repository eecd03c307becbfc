/**
 * The rules of an admitted run and its timers, after every gate of lifecycle.ts has let it through: the end of its
 * lifetime, what its pod says, the startup timeout, and Running only ENDPOINT_SETTLE_MS after the pod became ready
 * and its Service and route came into place (kube-proxy and the proxies program a new path only after that). Until
 * then it is Pending, saying why.
 */
import { Phase, Reason, ServedBy } from '../contract/api.js'
import type { AdmittedContext, Decision, ObservedContext, Outcome, PodContext } from './decision-types.js'
import { observeEndpoint } from './endpoint.js'
import { base, finish, nextDeadline, type Rule, type Step } from './rule.js'
import { earliest, formatTime } from './time.js'
import { currentPod, missingGuards, podEnded, podInstants, podProblem, readySince } from './workload.js'
import { DEFINITION_KIND } from './definition.js'
import { findObject } from './observed.js'
import { servedBy, type Serving } from './pool-serving.js'
import { field, text } from './untrusted.js'

/** The end of the lifetime, once the instance has started (a passed hard deadline ended the run above). */
export const lifetimeOver: Rule<AdmittedContext> = (context) => {
  const { startedAt, lastRenewedAt } = context.state
  if (startedAt === undefined) return undefined
  const softEnd = Math.max(startedAt, lastRenewedAt ?? startedAt) + context.lifetimeMs
  if (context.now < softEnd) return undefined
  return finish(context, {
    phase: Phase.Deleted,
    reason: Reason.Expired,
    message: 'The instance reached the end of its lifetime.',
  })
}

/**
 * How the run is served (pool-serving.ts): by the pod its definition's pool handed it, by none yet while it waits
 * for one, or by its own pod, which runs only on guard children that are its own. A pooled pod's guards are the
 * pool's (its flag Secret and policies, made before the pod), and it is the pool's to watch: the instance sees its
 * claim, not the pod.
 */
function serving(context: AdmittedContext, coldPod: boolean): Serving | undefined {
  const { world, state, definition } = context
  const object = findObject(world.related, DEFINITION_KIND, definition.name)
  return servedBy({
    challengeUid: world.challenge.metadata.uid,
    definitionName: definition.name,
    definitionUid: text(object?.metadata.uid),
    poolState: field(field(field(object, 'status'), 'pool'), 'state'),
    pooled: definition.pool !== undefined,
    parameters: Object.keys(world.challenge.spec.parameters ?? {}).length > 0,
    run: state.run,
    previous: world.previous.pool,
    coldPod,
    admittedAt: context.admittedAt,
    recordedClaim: context.recorded.claim,
    recordedColdSince: context.recorded.coldSince,
    related: world.related,
    now: context.now,
    timeoutMs: context.config.poolClaimTimeoutSeconds * 1000,
  })
}

/** What the pod says first; a fatal problem ends the run at once (it frees the budget instead of holding it). */
export const podFailure: Step<AdmittedContext, PodContext> = (context) => {
  const { world, state } = context
  const own = currentPod(world.children, world.names, state.run)
  const served = serving(context, own !== undefined)
  const pooled = served !== undefined && served.state !== ServedBy.Cold
  const missing = pooled ? [] : missingGuards(world.children, world.names, context.definition.egress)
  const pod = !pooled && missing.length === 0 ? own : undefined
  const problem = podProblem(pod)
  if (problem?.fatal) return finish(context, { phase: Phase.Error, reason: problem.reason, message: problem.message })
  if (served?.waitUntil !== undefined) context.deadlines.push(served.waitUntil)
  return { ...context, pod, missing, problem, served }
}

/** Pending longer than startupTimeoutSeconds since admission, never Running: an Error that says what was last seen. */
export const startupTimeout: Step<PodContext, ObservedContext> = (context) => {
  const { state, definition, now } = context
  const observed = observeEndpoint(
    context.world.children,
    context.world.names,
    definition,
    context.world.namespace,
    context.world.instanceId,
    context.config,
  )
  if (state.startedAt !== undefined) return { ...context, observed, startupDeadline: undefined }
  const startupDeadline = context.admittedAt + definition.startupTimeoutSeconds * 1000
  const next = { ...context, observed, startupDeadline }
  if (now < startupDeadline || reachableAt(next) <= now) return next
  const cause = startupTimeoutCause(next)
  return finish(context, {
    phase: Phase.Error,
    reason: Reason.StartupTimeout,
    message: `The instance did not become ready within ${definition.startupTimeoutSeconds} seconds.${cause}`,
  })
}

/** What the StartupTimeout message adds: what was seen last of the run's pod, its guards or its path. */
function startupTimeoutCause(context: ObservedContext): string {
  if (context.problem !== undefined) return ` ${context.problem.message}`
  if (context.missing.length > 0) return ` ${neverCreated(context.missing)}`
  if (context.served?.state === ServedBy.Waiting)
    return ' The warm pool has not handed it a pod (a run waits up to POOL_CLAIM_TIMEOUT_SECONDS before it starts a pod of its own).'
  // A claimed pooled pod is the pool's, not among the instance's children: it was ready from its claim.
  if (readyAt(context) !== undefined) {
    const routeWait = routeWaitWords(context)
    return routeWait === undefined ? '' : ` The instance was ready, but ${routeWait}.`
  }
  return context.pod === undefined
    ? " Its pod was never created: the API server refused it (a quota, Pod Security, a LimitRange; the Challenge's events say which) or it is still being replaced."
    : ''
}

/** The last rule, which always decides: Running once traffic can reach the instance, else Pending saying why. */
export function runningOrStarting(context: ObservedContext): Decision {
  const { state, now } = context
  const ready = readyAt(context)
  const reachable = reachableAt(context)
  const running = reachable <= now
  if (running && state.startedAt === undefined) state.startedAt = now
  const expiresAt =
    state.startedAt === undefined
      ? context.hardEnd
      : earliest(
          Math.max(state.startedAt, state.lastRenewedAt ?? state.startedAt) + context.lifetimeMs,
          context.hardEnd,
        )
  const claimedAt = claimTime(context)
  const instants = claimedAt === undefined ? podInstants(context.pod) : { scheduled: claimedAt, started: claimedAt }
  const decision: Decision = {
    ...base(context, running ? runningOutcome(expiresAt as number) : pendingOutcome(context, ready)),
    workload: true,
    // A pooled pod is the pool's child: the instance answers a Pod only when it runs its own.
    pod: ownPod(context.served) && context.missing.length === 0 && !podEnded(context.pod),
    admitted: true,
    flagData: context.flagData,
    endpoint: running ? context.observed.endpoint : undefined,
    routeProblem: context.observed.routeProblem,
    expiresAt,
    progress: { scheduledAt: instants.scheduled, containersStartedAt: instants.started, readyAt: ready },
    pool: context.served,
  }
  decision.nextDeadline = nextDeadline(context, expiresAt, ...(running ? [] : [reachable, context.startupDeadline]))
  return decision
}

/**
 * When the run's claim of a pooled pod was first seen. The pool claims only a ready pod, so the instance counts it
 * scheduled, started and ready from then on; and its path to the player exists only from then on.
 */
function claimTime(context: PodContext): number | undefined {
  return context.served?.state === ServedBy.Claimed ? context.served.since : undefined
}

function readyAt(context: PodContext): number | undefined {
  return claimTime(context) ?? readySince(context.pod)
}

/** The run is served by a pod of its own: no pool, or it went cold. */
function ownPod(served: Serving | undefined): boolean {
  return served === undefined || served.state === ServedBy.Cold
}

// ---- helpers of the rules --------------------------------------------------------------------------------------

/**
 * A recorded instant this far ahead of the hook's clock is a wrong clock (a node's), not an event to wait for:
 * waiting on it could hold an instance Pending for as long as the clocks disagree.
 */
const MAX_CLOCK_SKEW_MS = 60_000

/**
 * When traffic can reach the instance: ENDPOINT_SETTLE_MS after its pod became ready and its endpoint came into
 * place (the Service, the route, a Gateway's acceptance), which kube-proxy (its minimum sync period is a second)
 * and the proxies need to program the new path. The kubelet and the API server record whole seconds, so the
 * default 2.5 s means at least 1.5 s after the event. Infinity while either is missing.
 */
function reachableAt(context: ObservedContext): number {
  const ready = readyAt(context)
  if (ready === undefined || context.observed.endpoint === undefined) return Infinity
  const since = Math.max(ready, context.observed.since)
  return since > context.now + MAX_CLOCK_SKEW_MS ? context.now : since + context.config.endpointSettleMs
}

function runningOutcome(expiresAt: number): Outcome {
  return {
    phase: Phase.Running,
    reason: Reason.Ready,
    message: `The instance is running until ${formatTime(expiresAt)}.`,
  }
}

/**
 * Why the instance is not Running yet. While it starts and while its new path settles the words do not change,
 * so the status is written once on the way to Running, not at every step of the pod.
 */
function pendingOutcome(context: ObservedContext, ready: number | undefined): Outcome {
  if (context.problem !== undefined)
    return { phase: Phase.Pending, reason: context.problem.reason, message: context.problem.message }
  if (ready !== undefined && context.observed.endpoint === undefined) {
    const routeWait = routeWaitWords(context)
    const message =
      routeWait !== undefined
        ? `The instance is ready; ${routeWait}.`
        : 'The instance is ready; waiting for its address.'
    return { phase: Phase.Pending, reason: Reason.WaitingForEndpoint, message }
  }
  return { phase: Phase.Pending, reason: Reason.Starting, message: 'The instance is starting.' }
}

/** Shown while the workload is ready but its Gateway has not taken the route (a player may read it). */
function routeWaitWords(context: ObservedContext): string | undefined {
  const problem = context.observed.routeProblem
  return problem === undefined ? undefined : `the gateway has not accepted its route yet (${problem.reason})`
}

/** Why a run never got its pod: the guard children that were never observed as its own. */
function neverCreated(missing: readonly string[]): string {
  return missing.length === 1
    ? `Its ${missing[0]} never appeared as its own: the API server refused it, or an object of that name that this Challenge does not own is in the way.`
    : `Its ${missing.join(', ')} never appeared as its own: the API server refused them, or objects of those names that this Challenge does not own are in the way.`
}
