/**
 * The lifecycle decision of one sync: from the observed world, the previous status, the configuration and
 * `now`, which phase the instance is in, whether it holds a workload, and which sticky times and counters it
 * carries forward. Pure: no I/O, no clock but the `now` it is given.
 *
 * Order of the rules (first match wins):
 *   finished run (sticky Deleted / Error) → stopped → labels → definition → flag source → hard deadline →
 *   release gate → admission (budget queue) → expiry → pod failures → startup timeout → Running / Pending.
 * A run ends in Deleted or in a sticky Error; only `spec.restarts` starts a new run.
 */
import type { Config } from '../config.js'
import type { ChallengeObject, KubeObject } from '../protocol.js'
import { Bounds, ConditionType, Label, Phase, Reason } from './api.js'
import { characters, lookupDefinition, type ResolvedDefinition } from './definition.js'
import type { ChildNames } from './names.js'
import { isBeingDeleted, objectsOfKind, type ObservedIndex } from './observed.js'
import { routingProblem, type RouteProblem } from './routes.js'
import { ownerMessage, flagSecretPart, type OwnerKey } from './secrets.js'
import type { Endpoint, PreviousStatus } from './status.js'
import { earliest, formatTime, parseTime } from './time.js'
import { currentPods, observeEndpoint, podProblem, podRefusal, workloadReady } from './workload.js'

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
  /** Render the workload (flag Secret, policies, Deployment, Service, Ingress); otherwise tear down. */
  workload: boolean
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
    return {
      ...outcome,
      run: state.run,
      newRun: state.newRun,
      admitted: this.admitted && this.workload,
      workload: this.workload,
      definition: this.definition,
      flagData: this.workload ? this.flagData : undefined,
      workloadReady: this.ready && this.workload,
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
    const message = spec.stopReason === undefined ? 'The instance was stopped.' : `The instance was stopped: ${spec.stopReason}.`
    return builder.finish({ phase: Phase.Deleted, reason, message })
  }

  const labelProblem = ownerLabelProblem(world.challenge)
  if (labelProblem) return builder.hold({ phase: Phase.Error, reason: Reason.OwnerLabelMismatch, message: labelProblem })

  const lookup = lookupDefinition(world.related, spec.definitionRef.name, config.allowedExtendedResources)
  if (!lookup.found) return builder.hold({ phase: Phase.Error, reason: lookup.reason, message: lookup.message })
  const definition = lookup.definition
  builder.definition = definition

  const parameterProblem = parametersProblem(spec.parameters ?? {}, definition.flag.env)
  if (parameterProblem) return builder.hold({ phase: Phase.Error, reason: Reason.ConfigError, message: parameterProblem })
  const { type } = definition.expose
  const unroutable = type === 'HTTP' || type === 'TLS' ? routingProblem(type, config, world.childGroups) : undefined
  if (unroutable) return builder.hold({ phase: Phase.Error, reason: Reason.ConfigError, message: unroutable })

  const flag = flagData(world, definition, config)
  if (!flag.ok) return builder.hold({ phase: Phase.Error, reason: Reason.ConfigError, message: flag.message })
  builder.flagData = flag.data

  // Hard deadlines: the Challenge's own and the definition's availableUntil cap everything.
  const hardEnd = earliest(parseTime(spec.deadline), definition.availableUntil)
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
    if (!admittedByBudget(world, definition, config.ownerBudget, parseTime(state.admittedAt))) {
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
        message: `Waiting for another of your instances to end: ${config.ownerBudget} units are in use.`,
      })
    }
    state.admittedAt ??= formatTime(now)
  }
  builder.admitted = true
  builder.workload = true

  // Expiry, once the instance has started.
  const startedAt = parseTime(state.startedAt)
  if (startedAt !== undefined) {
    const softEnd = Math.max(startedAt, parseTime(state.lastRenewedAt) ?? startedAt) + lifetimeMs
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

  builder.ready = workloadReady(world.children, world.names, state.run)
  const observed = observeEndpoint(world.children, world.names, definition, world.namespace, world.instanceId, config)
  builder.endpoint = observed.endpoint
  builder.routeProblem = observed.routeProblem
  // Shown while the workload is ready but its Gateway has not taken the route (a player may read it).
  const routeWait = observed.routeProblem && `the gateway has not accepted its route yet (${observed.routeProblem.reason})`

  if (startedAt === undefined) {
    const startupDeadline = (parseTime(state.admittedAt) as number) + definition.startupTimeoutSeconds * 1000
    const running = builder.ready && builder.endpoint !== undefined
    if (!running && now >= startupDeadline) {
      builder.expiresAt = undefined
      const cause = problem ? ` ${problem.message}` : builder.ready && routeWait ? ` The instance was ready, but ${routeWait}.` : ''
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
  if (builder.ready) {
    const message = routeWait ? `The instance is ready; ${routeWait}.` : 'The instance is ready; waiting for its address.'
    return builder.build({ phase: Phase.Pending, reason: Reason.WaitingForEndpoint, message })
  }
  return builder.build({ phase: Phase.Pending, reason: Reason.Starting, message: 'The instance is starting.' })
}

function ownerLabelProblem(challenge: ChallengeObject): string | undefined {
  const labels = challenge.metadata.labels ?? {}
  const expected: [string, string, string][] = [
    [Label.owner, challenge.spec.owner.id, 'spec.owner.id'],
    [Label.definition, challenge.spec.definitionRef.name, 'spec.definitionRef.name'],
  ]
  for (const [label, value, field] of expected) {
    if (labels[label] !== value) {
      const actual = labels[label] === undefined ? 'missing' : `"${labels[label]}"`
      return `Label ${label} is ${actual} but ${field} is "${value}".`
    }
  }
  return undefined
}

type FlagResult = { ok: true; data: string } | { ok: false; message: string }

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64')
}

/** The flag's bytes, base64 as a Secret's `data` holds them. The value itself never leaves this function's caller. */
/** Names that would read an object's prototype wherever a parameter is looked up by name: refused, as the CRD does. */
const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'prototype']

function parametersProblem(parameters: Record<string, string>, flagEnv: string): string | undefined {
  const names = Object.keys(parameters)
  const hostile = names.find((name) => PROTOTYPE_NAMES.includes(name))
  if (hostile !== undefined) return `spec.parameters: the name ${hostile} is refused (it names an object prototype).`
  if (names.includes(flagEnv)) return `spec.parameters: ${flagEnv} is reserved for the flag.`
  const text = characters(Object.entries(parameters).flat())
  return text > Bounds.parametersText
    ? `spec.parameters: the names and values together must be at most ${Bounds.parametersText} characters, got ${text}.`
    : undefined
}

function flagData(world: World, definition: ResolvedDefinition, config: Config): FlagResult {
  const { prefix, suffix, mode, staticSecretRef } = definition.flag
  switch (mode) {
    case 'PerOwner':
      return { ok: true, data: base64(prefix + flagSecretPart(config.flagSecret, ownerMessage(world.ownerKey)) + suffix) }
    case 'PerInstance':
      return { ok: true, data: base64(prefix + flagSecretPart(config.flagSecret, world.challenge.metadata.uid) + suffix) }
    case 'Static': {
      const ref = staticSecretRef as { name: string; key: string }
      const secret = objectsOfKind(world.related, 'Secret').find((candidate) => candidate.metadata.name === ref.name)
      const data = (secret?.data as Record<string, unknown> | undefined)?.[ref.key]
      if (typeof data !== 'string' || data === '') {
        return {
          ok: false,
          message: `The flag Secret "${ref.name}" (key "${ref.key}") was not found; it must carry the label ${Label.definition}=${definition.name}.`,
        }
      }
      return { ok: true, data }
    }
  }
}

interface Candidate {
  name: string
  admittedAt: number
  createdAt: number
  /** Its `status.cost`; undefined until its first sync writes it (or when an older release synced it last). */
  cost: number | undefined
  /** Started: it holds its slot whatever the order says. */
  started: boolean
}

function spec(object: KubeObject): Record<string, unknown> {
  return (object.spec ?? {}) as Record<string, unknown>
}

function nested(object: unknown, key: string): unknown {
  return typeof object === 'object' && object !== null ? (object as Record<string, unknown>)[key] : undefined
}

/** A sibling holds or waits for budget unless it is ending, stopped, finished or not yet released. */
function siblingCandidate(sibling: KubeObject, world: World): Candidate | undefined {
  const siblingSpec = spec(sibling)
  const owner = siblingSpec.owner
  const ownerKey = world.ownerKey
  if (nested(owner, 'kind') !== ownerKey.ownerKind || nested(owner, 'id') !== ownerKey.ownerId) return undefined
  if (isBeingDeleted(sibling) || siblingSpec.desiredState === 'Stopped') return undefined
  const status = sibling.status
  const phase = nested(status, 'phase')
  const run = nested(status, 'run')
  const restarts = siblingSpec.restarts
  const relaunching = typeof restarts === 'number' && restarts > (typeof run === 'number' ? run : 0)
  if (!relaunching && (phase === Phase.Error || phase === Phase.Deleted || phase === Phase.Terminating)) return undefined
  if (!relaunching && nested(status, 'reason') === Reason.NotYetAvailable) return undefined
  const admittedAt = relaunching ? undefined : parseTime(nested(status, 'admittedAt') as string | undefined)
  const cost = nested(status, 'cost')
  return {
    name: sibling.metadata.name,
    admittedAt: admittedAt ?? Infinity,
    createdAt: parseTime(sibling.metadata.creationTimestamp) ?? Infinity,
    cost: typeof cost === 'number' && Number.isInteger(cost) && cost >= 0 ? cost : undefined,
    started: !relaunching && parseTime(nested(status, 'startedAt') as string | undefined) !== undefined,
  }
}

/**
 * Deterministic admission: every instance of the owner computes the same order (earliest admittedAt, then
 * creationTimestamp, then name). Started instances hold their slots; the others fill what is left first-fit
 * in that order, so two concurrent creates cannot both win and a big waiting instance does not block a small one.
 * A sibling's cost is its own `status.cost` (the catalogue is not in the request). One whose cost is not written
 * yet and that counts before this instance (started, or earlier in the order) makes it wait: its first sync
 * writes the cost within moments and that write re-syncs this instance; guessing could admit both.
 */
function admittedByBudget(world: World, definition: ResolvedDefinition, budget: number, admittedAt: number | undefined): boolean {
  const self: Candidate = {
    name: world.challenge.metadata.name,
    admittedAt: admittedAt ?? Infinity,
    createdAt: parseTime(world.challenge.metadata.creationTimestamp) ?? Infinity,
    cost: definition.cost,
    started: false,
  }
  const candidates = [self]
  for (const sibling of objectsOfKind(world.related, 'Challenge')) {
    if (sibling.metadata.name === self.name) continue
    const candidate = siblingCandidate(sibling, world)
    if (candidate) candidates.push(candidate)
  }
  candidates.sort(
    // Names are unique among the owner's Challenges of one namespace, so the order is total.
    (a, b) => a.admittedAt - b.admittedAt || a.createdAt - b.createdAt || (a.name < b.name ? -1 : 1),
  )
  // A free challenge holds nothing, so it always fits.
  if (self.cost === 0) return true
  const before = candidates.slice(0, candidates.indexOf(self))
  if ([...candidates.filter((candidate) => candidate.started), ...before].some((candidate) => candidate.cost === undefined)) return false
  let used = 0
  for (const candidate of candidates) if (candidate.started) used += candidate.cost as number
  for (const candidate of before) {
    const cost = candidate.cost as number
    if (!candidate.started && used + cost <= budget) used += cost
  }
  return used + (self.cost as number) <= budget
}

/**
 * When the current run started waiting: its creation for the first run; for a relaunch, the moment the run
 * began (the Admitted condition is new with each run, so its transition time is the start of the wait).
 */
function queueStart(world: World, state: RunState, now: number): number {
  if (state.newRun) return now
  const admitted = world.previous.conditions.find((condition) => condition.type === ConditionType.Admitted)
  const since = state.run > 0 ? admitted?.lastTransitionTime : world.challenge.metadata.creationTimestamp
  return parseTime(since) ?? now
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
  const hardEnd = earliest(parseTime(world.challenge.spec.deadline), definition.availableUntil)
  const lifetimeMs = (world.challenge.spec.lifetimeSeconds ?? definition.lifetimeSeconds) * 1000
  const expiresAt = parseTime(decision.expiresAt) as number
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
