/**
 * The rules of an admitted run and its timers, after every gate of lifecycle.ts has let it through: the end of its
 * lifetime, what its pod says, the startup timeout, and Running only ENDPOINT_SETTLE_MS after the pod became ready
 * and its Service and route came into place (kube-proxy and the proxies program a new path only after that). Until
 * then it is Pending, saying why.
 */
import { Phase, Reason } from '../contract/api.js'
import type { Context, Decision, Outcome } from './decision-types.js'
import { observeEndpoint } from './endpoint.js'
import { base, finish, nextDeadline, type Rule } from './rule.js'
import { earliest, formatTime } from './time.js'
import { currentPod, missingGuards, podEnded, podInstants, podProblem, readySince } from './workload.js'

/** The end of the lifetime, once the instance has started (a passed hard deadline ended the run above). */
export const lifetimeOver: Rule = (c) => {
  const { startedAt, lastRenewedAt } = c.state
  if (startedAt === undefined) return undefined
  const softEnd = Math.max(startedAt, lastRenewedAt ?? startedAt) + c.lifetimeMs
  if (c.now < softEnd) return undefined
  return finish(c, {
    phase: Phase.Deleted,
    reason: Reason.Expired,
    message: 'The instance reached the end of its lifetime.',
  })
}

/** What the pod says first; a fatal problem ends the run at once (it frees the budget instead of holding it). */
export const podFailure: Rule = (c) => {
  const { world, state } = c
  c.missing = missingGuards(world.children, world.names, c.definition.egress)
  c.pod = c.missing.length === 0 ? currentPod(world.children, world.names, state.run) : undefined
  c.problem = podProblem(c.pod)
  return c.problem?.fatal
    ? finish(c, { phase: Phase.Error, reason: c.problem.reason, message: c.problem.message })
    : undefined
}

/** Pending longer than startupTimeoutSeconds since admission, never Running: an Error that says what was last seen. */
export const startupTimeout: Rule = (c) => {
  const { state, definition, now } = c
  c.observed = observeEndpoint(
    c.world.children,
    c.world.names,
    definition,
    c.world.namespace,
    c.world.instanceId,
    c.config,
  )
  if (state.startedAt !== undefined) return undefined
  const startupDeadline = (state.admittedAt as number) + definition.startupTimeoutSeconds * 1000
  c.startupDeadline = startupDeadline
  if (now < startupDeadline || reachableAt(c) <= now) return undefined
  const routeWait = routeWaitWords(c)
  const cause =
    c.problem !== undefined
      ? ` ${c.problem.message}`
      : c.missing.length > 0
        ? ` ${neverCreated(c.missing)}`
        : c.pod === undefined
          ? " Its pod was never created: the API server refused it (a quota, Pod Security, a LimitRange; the Challenge's events say which) or it is still being replaced."
          : readySince(c.pod) !== undefined && routeWait !== undefined
            ? ` The instance was ready, but ${routeWait}.`
            : ''
  return finish(c, {
    phase: Phase.Error,
    reason: Reason.StartupTimeout,
    message: `The instance did not become ready within ${definition.startupTimeoutSeconds} seconds.${cause}`,
  })
}

/** The last rule, which always decides: Running once traffic can reach the instance, else Pending saying why. */
export function runningOrStarting(c: Context): Decision {
  const { state, now } = c
  const ready = readySince(c.pod)
  const reachable = reachableAt(c)
  const running = reachable <= now
  if (running && state.startedAt === undefined) state.startedAt = now
  const expiresAt =
    state.startedAt === undefined
      ? c.hardEnd
      : earliest(Math.max(state.startedAt, state.lastRenewedAt ?? state.startedAt) + c.lifetimeMs, c.hardEnd)
  const instants = podInstants(c.pod)
  const decision: Decision = {
    ...base(c, running ? runningOutcome(expiresAt as number) : pendingOutcome(c, ready)),
    workload: true,
    pod: c.missing.length === 0 && !podEnded(c.pod),
    admitted: true,
    flagData: c.flagData,
    endpoint: running ? c.observed.endpoint : undefined,
    routeProblem: c.observed.routeProblem,
    expiresAt,
    progress: { scheduledAt: instants.scheduled, containersStartedAt: instants.started, readyAt: ready },
  }
  decision.nextDeadline = nextDeadline(c, expiresAt, ...(running ? [] : [reachable, c.startupDeadline]))
  return decision
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
function reachableAt(c: Context): number {
  const ready = readySince(c.pod)
  if (ready === undefined || c.observed.endpoint === undefined) return Infinity
  const since = Math.max(ready, c.observed.since)
  return since > c.now + MAX_CLOCK_SKEW_MS ? c.now : since + c.config.endpointSettleMs
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
function pendingOutcome(c: Context, ready: number | undefined): Outcome {
  if (c.problem !== undefined) return { phase: Phase.Pending, reason: c.problem.reason, message: c.problem.message }
  if (ready !== undefined && c.observed.endpoint === undefined) {
    const routeWait = routeWaitWords(c)
    const message =
      routeWait !== undefined
        ? `The instance is ready; ${routeWait}.`
        : 'The instance is ready; waiting for its address.'
    return { phase: Phase.Pending, reason: Reason.WaitingForEndpoint, message }
  }
  return { phase: Phase.Pending, reason: Reason.Starting, message: 'The instance is starting.' }
}

/** Shown while the workload is ready but its Gateway has not taken the route (a player may read it). */
function routeWaitWords(c: Context): string | undefined {
  const problem = c.observed.routeProblem
  return problem === undefined ? undefined : `the gateway has not accepted its route yet (${problem.reason})`
}

/** Why a run never got its pod: the guard children that were never observed as its own. */
function neverCreated(missing: readonly string[]): string {
  return missing.length === 1
    ? `Its ${missing[0]} never appeared as its own: the API server refused it, or an object of that name that this Challenge does not own is in the way.`
    : `Its ${missing.join(', ')} never appeared as its own: the API server refused them, or objects of those names that this Challenge does not own are in the way.`
}
