/**
 * The lifecycle decision of one sync: from the observed world, the previous status, the configuration and
 * `now`, which phase the instance is in, whether it holds a workload, and which sticky times and counters it
 * carries forward. Pure: no I/O, no clock but the `now` it is given.
 *
 * Order of the rules (first match wins):
 *   finished run (sticky Deleted / Error) → stopped → labels → definition → the Challenge's own fields → flag
 *   source → hard deadline → release gate → admission (budget queue) → expiry → pod failures → startup timeout →
 *   Running / Pending.
 * The pod runs only once its flag Secret and its NetworkPolicies are observed as this Challenge's own children:
 * the Deployment is answered only from then on, so the pod never mounts a Secret someone else made under its
 * name, nor starts before its isolation exists.
 * A run ends in Deleted or in a sticky Error; only `spec.restarts` starts a new run.
 */
import type { Config } from '../config.js'
import type { ChallengeObject } from '../protocol.js'
import { ConditionType, Label, Phase, Reason } from './api.js'
import { budgetCheck } from './budget.js'
import { lookupDefinition, type ResolvedDefinition } from './definition.js'
import { flagData, parametersProblem } from './flag.js'
import type { ChildNames } from './names.js'
import { objectsOfKind, type ObservedIndex } from './observed.js'
import { routingProblem, type RouteProblem } from './routes.js'
import type { OwnerKey } from './secrets.js'
import type { Endpoint, PreviousStatus } from './status.js'
import { quote } from './read.js'
import { earliest, formatTime, readTime } from './time.js'
import { currentPods, missingGuards, observeEndpoint, podProblem, podRefusal, workloadReady } from './workload.js'

/** Errors that end the run: the workload is gone and stays gone until a restart. */
const RUN_ENDING_ERRORS = new Set<string>([
  Reason.StartupTimeout,
  Reason.CrashLoopBackOff,
  Reason.InvalidImage,
  Reason.ConfigError,
  Reason.PodRefused,
])

export interface World {
  challenge: ChallengeObject
  namespace: string
  names: ChildNames
  /** The labels that select this Challenge's pods (names.ts, podLabels). */
  podLabels: Record<string, string>
  ownerKey: OwnerKey
  instanceId: string
  previous: PreviousStatus
  children: ObservedIndex
  /** The request's child groups: one per child rule of the CompositeController. */
  childGroups: ReadonlySet<string>
  related: ObservedIndex
}

export interface RenewalOutcome {
  accepted: boolean
  reason: string
  message: string
}

export interface Decision {
  phase: Phase
  reason: string
  message: string
  run: number
  /** The run starts fresh: previous conditions no longer describe it. */
  newRun: boolean
  admitted: boolean
  /** Render the workload (flag Secret, policies, Service, route, and the Deployment when `deployment`); otherwise tear down. */
  workload: boolean
  /** The Deployment too: its flag Secret and NetworkPolicies are observed as this Challenge's own. */
  deployment: boolean
  definition: ResolvedDefinition | undefined
  /** base64 of the flag, present exactly when `workload` is. */
  flagData: string | undefined
  workloadReady: boolean
  endpoint: Endpoint | undefined
  /** Why the route carries no traffic yet, as its Gateway says (while the workload is rendered). */
  routeProblem: RouteProblem | undefined
  admittedAt: string | undefined
  startedAt: string | undefined
  lastRenewedAt: string | undefined
  expiresAt: string | undefined
  finishedAt: string | undefined
  renewalsSeen: number
  renewalsApplied: number
  renewal: RenewalOutcome | undefined
  /** Earliest future instant at which the decision changes by itself (ms since epoch). */
  nextDeadline: number | undefined
}

/** The sticky part of the status for the current run, plus whether this sync starts it. */
type RunState = Pick<
  PreviousStatus,
  'run' | 'admittedAt' | 'startedAt' | 'lastRenewedAt' | 'finishedAt' | 'renewalsSeen' | 'renewalsApplied'
> & { newRun: boolean }

/** `spec.restarts > status.run` starts a new run (unless stopped): timers and renewals reset. */
function runState(world: World): RunState {
  const { spec } = world.challenge
  const previous = world.previous
  const restarts = spec.restarts ?? 0
  if (spec.desiredState !== 'Stopped' && restarts > previous.run) {
    return {
      run: restarts,
      newRun: true,
      admittedAt: undefined,
      startedAt: undefined,
      lastRenewedAt: undefined,
      finishedAt: undefined,
      // Renewals asked for before the restart belong to the old run.
      renewalsSeen: Math.max(previous.renewalsSeen, spec.renewals ?? 0),
      renewalsApplied: 0,
    }
  }
  return {
    run: previous.run,
    newRun: false,
    admittedAt: previous.admittedAt,
    startedAt: previous.startedAt,
    lastRenewedAt: previous.lastRenewedAt,
    finishedAt: previous.finishedAt,
    renewalsSeen: previous.renewalsSeen,
    renewalsApplied: previous.renewalsApplied,
  }
}

interface Outcome {
  phase: Phase
  reason: string
  message: string
}

class DecisionBuilder {
  readonly state: RunState
  definition: ResolvedDefinition | undefined
  admitted = false
  workload = false
  flagData: string | undefined
  ready = false
  guarded = false
  endpoint: Endpoint | undefined
  routeProblem: RouteProblem | undefined
  expiresAt: number | undefined
  deadlines: (number | undefined)[] = []

  constructor(
    readonly world: World,
    readonly now: number,
  ) {
    this.state = runState(world)
  }

  /** Ends the run: the finish time is recorded once and the workload is torn down. */
  finish(outcome: Outcome): Decision {
    this.state.finishedAt ??= formatTime(this.now)
    this.workload = false
    return this.build(outcome)
  }

  /**
   * A condition of the world (not of the run): re-checked on every sync, so fixing it recovers. The instance
   * gives up its budget slot meanwhile (its siblings see it as not admitted) and is admitted again later.
   */
  hold(outcome: Outcome): Decision {
    this.workload = false
    this.state.admittedAt = undefined
    return this.build(outcome)
  }

  build(outcome: Outcome): Decision {
    const state = this.state
    const future = this.deadlines.filter((instant): instant is number => instant !== undefined && instant > this.now)
    // The outcome's fields are copied one by one: V8 builds `{ ...outcome, <20 more> }` in a slow path that
    // cost half of a whole sync (bench/RESULTS.md).
    return {
      phase: outcome.phase,
      reason: outcome.reason,
      message: outcome.message,
      run: state.run,
      newRun: state.newRun,
      admitted: this.admitted && this.workload,
      workload: this.workload,
      deployment: this.workload && this.guarded,
      definition: this.definition,
      flagData: this.workload ? this.flagData : undefined,
      workloadReady: this.ready && this.workload && this.guarded,
      endpoint: this.workload && outcome.phase === Phase.Running ? this.endpoint : undefined,
      routeProblem: this.workload ? this.routeProblem : undefined,
      admittedAt: state.admittedAt,
      startedAt: state.startedAt,
      lastRenewedAt: state.lastRenewedAt,
      expiresAt: this.expiresAt === undefined ? undefined : formatTime(this.expiresAt),
      finishedAt: state.finishedAt,
      renewalsSeen: state.renewalsSeen,
      renewalsApplied: state.renewalsApplied,
      renewal: undefined,
      nextDeadline: outcome.phase === Phase.Pending || outcome.phase === Phase.Running ? earliest(...future) : undefined,
    }
  }
}

export function decide(world: World, config: Config, now: number): Decision {
  const decision = decidePhase(world, config, now)
  return applyRenewal(world, decision, now)
}

function decidePhase(world: World, config: Config, now: number): Decision {
  const builder = new DecisionBuilder(world, now)
  const { spec } = world.challenge
  const previous = world.previous
  const state = builder.state

  // A finished run stays finished: its workload is gone, and only a restart (a new run) brings it back.
  if (!state.newRun && previous.phase === Phase.Deleted) {
    return builder.finish({ phase: Phase.Deleted, reason: previous.reason ?? Reason.Expired, message: previous.message })
  }
  // finishedAt tells a run-ending Error from a ConfigError of the world (a missing static flag Secret), which
  // recovers once fixed.
  if (!state.newRun && previous.phase === Phase.Error && previous.finishedAt !== undefined && RUN_ENDING_ERRORS.has(String(previous.reason))) {
    return builder.finish({ phase: Phase.Error, reason: previous.reason as string, message: previous.message })
  }

  if (spec.desiredState === 'Stopped') {
    const reason = spec.stopReason ?? Reason.Stopped
    const message = spec.stopReason === undefined ? 'The instance was stopped.' : `The instance was stopped: ${quote(spec.stopReason)}.`
    return builder.finish({ phase: Phase.Deleted, reason, message })
  }

  const labelProblem = ownerLabelProblem(world.challenge)
  if (labelProblem) return builder.hold({ phase: Phase.Error, reason: Reason.OwnerLabelMismatch, message: labelProblem })

  const policy = { extendedResources: config.allowedExtendedResources, runtimeClasses: config.allowedRuntimeClasses }
  const lookup = lookupDefinition(world.related, spec.definitionRef.name, policy)
  if (!lookup.found) return builder.hold({ phase: Phase.Error, reason: lookup.reason, message: lookup.message })
  const definition = lookup.definition
  builder.definition = definition

  const parameterProblem = parametersProblem(spec.parameters ?? {}, definition.flag.env)
  if (parameterProblem) return builder.hold({ phase: Phase.Error, reason: Reason.ConfigError, message: parameterProblem })
  // The schema lets through what the API server stores; a date it could not have stored has no meaning.
  const deadline = readTime(spec.deadline)
  if (spec.deadline !== undefined && deadline === undefined) {
    return builder.hold({ phase: Phase.Error, reason: Reason.ConfigError, message: `spec.deadline: ${quote(spec.deadline)} is not a date-time.` })
  }
  const { type } = definition.expose
  const unroutable = type === 'HTTP' || type === 'TLS' ? routingProblem(type, config, world.childGroups) : undefined
  if (unroutable) return builder.hold({ phase: Phase.Error, reason: Reason.ConfigError, message: unroutable })

  const flag = flagData({ ownerKey: world.ownerKey, uid: world.challenge.metadata.uid, related: world.related }, definition, config.flagSecret)
  if (!flag.ok) return builder.hold({ phase: Phase.Error, reason: Reason.ConfigError, message: flag.message })
  builder.flagData = flag.data

  // Hard deadlines: the Challenge's own and the definition's availableUntil cap everything.
  const hardEnd = earliest(deadline, definition.availableUntil)
  if (hardEnd !== undefined && now >= hardEnd) {
    return builder.finish({ phase: Phase.Deleted, reason: Reason.PastDeadline, message: 'The challenge is past its deadline.' })
  }
  builder.deadlines.push(hardEnd)

  if (definition.availableFrom !== undefined && now < definition.availableFrom) {
    builder.deadlines.push(definition.availableFrom)
    return builder.hold({
      phase: Phase.Pending,
      reason: Reason.NotYetAvailable,
      message: `The challenge opens at ${formatTime(definition.availableFrom)}.`,
    })
  }

  const lifetimeMs = (spec.lifetimeSeconds ?? definition.lifetimeSeconds) * 1000

  // Admission is decided, and re-checked until the instance has started: with Metacontroller's caches, two
  // instances of one owner may each be admitted before seeing the other; once both are visible, every instance
  // computes the same order and the later one goes back to the queue before anyone played on it.
  if (state.admittedAt === undefined || state.startedAt === undefined) {
    if (definition.cost > config.ownerBudget) {
      return builder.hold({
        phase: Phase.Error,
        reason: Reason.OwnerBudgetExceeded,
        message: `This challenge costs ${definition.cost} units, more than the ${config.ownerBudget} units one owner may hold.`,
      })
    }
    const owner = { challenge: world.challenge, ownerKey: world.ownerKey, siblings: objectsOfKind(world.related, 'Challenge') }
    const budget = budgetCheck(owner, definition.cost, config.ownerBudget, readTime(state.admittedAt))
    if (!budget.admitted) {
      const queuedSince = queueStart(world, state, now)
      if (now >= queuedSince + lifetimeMs) {
        return builder.finish({
          phase: Phase.Deleted,
          reason: Reason.Expired,
          message: 'The instance waited for a free slot longer than its lifetime.',
        })
      }
      builder.deadlines.push(queuedSince + lifetimeMs)
      return builder.hold({
        phase: Phase.Pending,
        reason: Reason.Queued,
        message:
          budget.held === undefined
            ? 'Waiting for your other instances to report their cost.'
            : `Waiting for another of your instances to end: ${budget.held} of your ${units(config.ownerBudget)} ${budget.held === 1 ? 'is' : 'are'} in use, and this challenge needs ${definition.cost}.`,
      })
    }
    state.admittedAt ??= formatTime(now)
  }
  builder.admitted = true
  builder.workload = true

  // Expiry, once the instance has started.
  const startedAt = readTime(state.startedAt)
  if (startedAt !== undefined) {
    const softEnd = Math.max(startedAt, readTime(state.lastRenewedAt) ?? startedAt) + lifetimeMs
    builder.expiresAt = earliest(softEnd, hardEnd)
    // A passed hard deadline already ended the run above, so reaching expiresAt here is the lifetime's end.
    if (now >= (builder.expiresAt as number)) {
      builder.expiresAt = undefined
      return builder.finish({ phase: Phase.Deleted, reason: Reason.Expired, message: 'The instance reached the end of its lifetime.' })
    }
  } else {
    builder.expiresAt = hardEnd
  }
  builder.deadlines.push(builder.expiresAt)

  const pods = currentPods(world.related, world.podLabels, state.run)
  // What the pods say first; without a pod, why Kubernetes would not create one.
  const problem = podProblem(pods) ?? podRefusal(world.children, world.names, state.run)
  if (problem?.fatal) {
    builder.expiresAt = undefined
    return builder.finish({ phase: Phase.Error, reason: problem.reason, message: problem.message })
  }

  const missing = missingGuards(world.children, world.names, definition.egress)
  builder.guarded = missing.length === 0
  builder.ready = builder.guarded && workloadReady(world.children, world.names, state.run)
  const observed = observeEndpoint(world.children, world.names, definition, world.namespace, world.instanceId, config)
  builder.endpoint = observed.endpoint
  builder.routeProblem = observed.routeProblem
  // Shown while the workload is ready but its Gateway has not taken the route (a player may read it).
  const routeWait = observed.routeProblem && `the gateway has not accepted its route yet (${observed.routeProblem.reason})`

  if (startedAt === undefined) {
    const startupDeadline = (readTime(state.admittedAt) as number) + definition.startupTimeoutSeconds * 1000
    const running = builder.ready && builder.endpoint !== undefined
    if (!running && now >= startupDeadline) {
      builder.expiresAt = undefined
      const cause = problem
        ? ` ${problem.message}`
        : !builder.guarded
          ? ` ${neverCreated(missing)}`
          : builder.ready && routeWait
            ? ` The instance was ready, but ${routeWait}.`
            : ''
      return builder.finish({
        phase: Phase.Error,
        reason: Reason.StartupTimeout,
        message: `The instance did not become ready within ${definition.startupTimeoutSeconds} seconds.${cause}`,
      })
    }
    if (running) {
      state.startedAt = formatTime(now)
      builder.expiresAt = earliest(now + lifetimeMs, hardEnd)
      builder.deadlines.push(builder.expiresAt)
    } else {
      builder.deadlines.push(startupDeadline)
    }
  }

  if (builder.ready && builder.endpoint !== undefined) {
    return builder.build({
      phase: Phase.Running,
      reason: Reason.Ready,
      message: `The instance is running until ${formatTime(builder.expiresAt as number)}.`,
    })
  }
  if (problem) return builder.build({ phase: Phase.Pending, reason: problem.reason, message: problem.message })
  if (!builder.guarded) {
    return builder.build({ phase: Phase.Pending, reason: Reason.Starting, message: 'The instance is starting: its flag and network policies are being set up.' })
  }
  if (builder.ready) {
    const message = routeWait ? `The instance is ready; ${routeWait}.` : 'The instance is ready; waiting for its address.'
    return builder.build({ phase: Phase.Pending, reason: Reason.WaitingForEndpoint, message })
  }
  return builder.build({ phase: Phase.Pending, reason: Reason.Starting, message: 'The instance is starting.' })
}

function units(count: number): string {
  return count === 1 ? '1 unit' : `${count} units`
}

/** Why a run never got its pod: the guard children that were never observed as its own. */
function neverCreated(missing: readonly string[]): string {
  return missing.length === 1
    ? `Its ${missing[0]} never appeared as its own: the API server refused it, or an object of that name that this Challenge does not own is in the way.`
    : `Its ${missing.join(', ')} never appeared as its own: the API server refused them, or objects of those names that this Challenge does not own are in the way.`
}

function ownerLabelProblem(challenge: ChallengeObject): string | undefined {
  const labels = challenge.metadata.labels ?? {}
  const expected: [string, string, string][] = [
    [Label.owner, challenge.spec.owner.id, 'spec.owner.id'],
    [Label.definition, challenge.spec.definitionRef.name, 'spec.definitionRef.name'],
  ]
  for (const [label, value, field] of expected) {
    if (labels[label] !== value) {
      const actual = labels[label] === undefined ? 'missing' : quote(labels[label])
      return `Label ${label} is ${actual} but ${field} is ${quote(value)}.`
    }
  }
  return undefined
}

/**
 * When the current run started waiting: its creation for the first run; for a relaunch, the moment the run
 * began (the Admitted condition is new with each run, so its transition time is the start of the wait).
 */
function queueStart(world: World, state: RunState, now: number): number {
  if (state.newRun) return now
  const admitted = world.previous.conditions.find((condition) => condition.type === ConditionType.Admitted)
  const since = state.run > 0 ? admitted?.lastTransitionTime : world.challenge.metadata.creationTimestamp
  return readTime(since) ?? now
}

/**
 * A renewal request (`spec.renewals > status.renewalsSeen`) is acted on exactly once: accepted only while
 * Running, below maxRenewals and when it can still extend the instance before any hard deadline.
 */
function applyRenewal(world: World, decision: Decision, now: number): Decision {
  const requested = world.challenge.spec.renewals ?? 0
  if (requested <= decision.renewalsSeen) return decision
  const seen = { ...decision, renewalsSeen: requested }
  const reject = (reason: string, message: string): Decision => ({ ...seen, renewal: { accepted: false, reason, message } })
  const definition = decision.definition
  if (decision.phase !== Phase.Running || definition === undefined) {
    return reject('NotRunning', 'Only a running instance can be renewed.')
  }
  if (decision.renewalsApplied >= definition.maxRenewals) {
    return reject('MaxRenewalsReached', `The instance was already renewed ${definition.maxRenewals} times.`)
  }
  const hardEnd = earliest(readTime(world.challenge.spec.deadline), definition.availableUntil)
  const lifetimeMs = (world.challenge.spec.lifetimeSeconds ?? definition.lifetimeSeconds) * 1000
  const expiresAt = readTime(decision.expiresAt) as number
  if (hardEnd !== undefined && expiresAt >= hardEnd) {
    return reject('PastDeadline', 'The instance already runs until the challenge deadline.')
  }
  const newExpiry = earliest(now + lifetimeMs, hardEnd) as number
  const renewals = decision.renewalsApplied + 1
  return {
    ...seen,
    lastRenewedAt: formatTime(now),
    renewalsApplied: renewals,
    expiresAt: formatTime(newExpiry),
    message: `The instance is running until ${formatTime(newExpiry)}.`,
    nextDeadline: newExpiry,
    renewal: {
      accepted: true,
      reason: 'Renewed',
      message: `Renewal ${renewals} of ${definition.maxRenewals} accepted.`,
    },
  }
}
