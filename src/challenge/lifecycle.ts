/**
 * The lifecycle decision of one sync: from the observed world, the previous status, the configuration and `now`,
 * which phase the instance is in, whether it holds a workload, and which sticky times and counters it carries
 * forward. Pure: no I/O, no clock but the `now` it is given. Each rule is a small function; they are tried in this
 * order and the first that decides wins:
 *
 *   finishedRun → stopped → ownerLabels → definitionAuthorKept → definitionFound → challengeFields → routing →
 *   budgetScope → flagSource → hardDeadline → releaseGate → imagesGate → namespaceAdmits → admission → lifetimeOver →
 *   podFailure → startupTimeout → runningOrStarting
 *
 * A run ends in Deleted or in a sticky Error (finish); a problem of the world (a missing definition, labels, a
 * release gate, the budget queue) holds the instance without a workload and re-checks at every sync (hold); only
 * `spec.restarts` starts a new run. The pod runs only once its flag Secret and NetworkPolicies are observed as the
 * Challenge's own children, and the instance is Running only ENDPOINT_SETTLE_MS after its pod became ready and
 * its Service and route came into place: kube-proxy and the proxies program a new path only after that.
 *
 * A rule sees what the rules before it learned and nothing more: each rule that learns something (the definition's
 * author, the definition, the hard end, the flag, admission, the pod, the traffic path) hands the next ones a
 * context of the next stage (decision-types.ts).
 *
 * This file holds the run and the gates up to admission; the rules of an admitted run and its timers (from
 * lifetimeOver on) are in running.ts, and what a rule returns (finish, hold) in rule.ts.
 */
import type { Config } from '../config/config.js'
import type { ChallengeObject } from '../contract/protocol.js'
import { Annotation, ConditionType, ImagesState, Label, Phase, PrepullMode, Reason } from '../contract/api.js'
import { budgetCheck } from './budget.js'
import type {
  AdmittedContext,
  AuthoredContext,
  DatedContext,
  Decision,
  DefinedContext,
  FlaggedContext,
  ObservedContext,
  RunContext,
  RunState,
  World,
} from './decision-types.js'
import { DEFINITION_KIND, definitionAuthor, definitionPolicy, lookupDefinition } from './definition.js'
import { flagData, parametersProblem } from './flag.js'
import { namespaceRefusal } from './namespace-policy.js'
import { findObject } from './observed.js'
import { count, field, list, quote } from './untrusted.js'
import { applyRenewal } from './renewal.js'
import { routingProblem } from './traffic-routes.js'
import { runRecord } from './run-record.js'
import { advance, finish, hold, isDecision, nextDeadline, type Rule, type Step } from './rule.js'
import { lifetimeOver, podFailure, runningOrStarting, startupTimeout } from './running.js'
import { earliest, formatTime, readTime } from './time.js'
import { currentPod } from './workload.js'

export type { Decision, World } from './decision-types.js'

/** Errors that end the run: the workload is gone and stays gone until a restart. */
const RUN_ENDING_ERRORS = new Set<string>([
  Reason.StartupTimeout,
  Reason.CrashLoopBackOff,
  Reason.InvalidImage,
  Reason.ConfigError,
  Reason.IsolationNotEnforced,
  Reason.PodRefused,
])

export function decide(world: World, config: Config, now: number): Decision {
  const state = runState(world)
  // What the run's Service records is the run's, whatever the status says (run-record.ts): read once per sync.
  const recorded = runRecord(world.children, world.names, world.challenge.metadata.uid, state.run)
  state.admittedAt = recorded.admittedAt ?? state.admittedAt
  const run: RunContext = { world, config, now, state, recorded, deadlines: [] }
  const result = throughTheRules(run)
  if (isDecision(result)) return applyRenewal(run, result)
  return applyRenewal(run, runningOrStarting(result), result)
}

/**
 * Every rule but the last, in order: each stage's checks, then the rule that learns the next stage (decision-types.ts).
 * The first decision, or all the last rule, runningOrStarting, needs to know.
 */
function throughTheRules(run: RunContext): Decision | ObservedContext {
  const authored = advance(run, [finishedRun, stopped, ownerLabels], definitionAuthorKept)
  if (isDecision(authored)) return authored
  const defined = definitionFound(authored)
  if (isDecision(defined)) return defined
  const dated = challengeFields(defined)
  if (isDecision(dated)) return dated
  const flagged = advance(dated, [routing, budgetScope], flagSource)
  if (isDecision(flagged)) return flagged
  const admitted = advance(flagged, [hardDeadline, releaseGate, imagesGate, namespaceAdmits], admission)
  if (isDecision(admitted)) return admitted
  const withPod = advance(admitted, [lifetimeOver], podFailure)
  if (isDecision(withPod)) return withPod
  return startupTimeout(withPod)
}

// ---- the run ---------------------------------------------------------------------------------------------------

/** `spec.restarts > status.run` starts a new run (unless stopped): timers and renewals reset. */
function runState(world: World): RunState {
  const { spec } = world.challenge
  const previous = world.previous
  const restarts = spec.restarts ?? 0
  if (spec.desiredState !== 'Stopped' && restarts > previous.run) {
    // Renewals asked for before the restart belong to the old run.
    const renewalsSeen = Math.max(previous.renewalsSeen, spec.renewals ?? 0)
    return {
      run: restarts,
      newRun: true,
      admittedAt: undefined,
      startedAt: undefined,
      lastRenewedAt: undefined,
      finishedAt: undefined,
      renewalsSeen,
      renewalsApplied: 0,
    }
  }
  return {
    run: previous.run,
    newRun: false,
    admittedAt: readTime(previous.admittedAt),
    startedAt: readTime(previous.startedAt),
    lastRenewedAt: readTime(previous.lastRenewedAt),
    finishedAt: readTime(previous.finishedAt),
    renewalsSeen: previous.renewalsSeen,
    renewalsApplied: previous.renewalsApplied,
  }
}

// ---- the rules, in order (from lifetimeOver on in running.ts) --------------------------------------------------

/** A finished run stays finished: its workload is gone, and only a restart (a new run) brings it back. */
const finishedRun: Rule<RunContext> = (context) => {
  const { previous } = context.world
  if (context.state.newRun) return undefined
  if (previous.phase === Phase.Deleted)
    return finish(context, {
      phase: Phase.Deleted,
      reason: previous.reason ?? Reason.Expired,
      message: previous.message,
    })
  // finishedAt tells a run-ending Error from a ConfigError of the world (a missing static flag Secret), which
  // recovers once fixed.
  if (
    previous.phase === Phase.Error &&
    previous.finishedAt !== undefined &&
    RUN_ENDING_ERRORS.has(String(previous.reason))
  ) {
    return finish(context, { phase: Phase.Error, reason: previous.reason as string, message: previous.message })
  }
  return undefined
}

const stopped: Rule<RunContext> = (context) => {
  const { spec } = context.world.challenge
  if (spec.desiredState !== 'Stopped') return undefined
  const reason = spec.stopReason ?? Reason.Stopped
  const message =
    spec.stopReason === undefined ? 'The instance was stopped.' : `The instance was stopped: ${quote(spec.stopReason)}.`
  return finish(context, { phase: Phase.Deleted, reason, message })
}

const ownerLabels: Rule<RunContext> = (context) => {
  const problem = ownerLabelProblem(context.world.challenge)
  return problem === undefined
    ? undefined
    : hold(context, { phase: Phase.Error, reason: Reason.OwnerLabelMismatch, message: problem })
}

/**
 * An instance stays with the author of the definition it was first synced with. Its flags follow the definition's
 * name, so a definition deleted and made again under that name by someone else (or handed to another author) would
 * run their pod with the flags of the first author's challenge: the instance holds, without a workload, until an
 * operator accepts the new author with an annotation only operators may set (admission-policy.yaml). An instance
 * that recorded no author yet adopts the current one. A missing definition is definitionFound's to report.
 */
const definitionAuthorKept: Step<RunContext, AuthoredContext> = (context) => {
  const { world } = context
  const name = world.challenge.spec.definitionRef.name
  const object = findObject(world.related, DEFINITION_KIND, name)
  if (object === undefined) return { ...context, definitionAuthor: undefined }
  const current = definitionAuthor(object)
  const recorded = world.previous.definitionAuthor
  const accepted = field(world.challenge.metadata.annotations, Annotation.acceptDefinitionAuthor)
  if (recorded === undefined || recorded === current || accepted === current) {
    return { ...context, definitionAuthor: current }
  }
  const now = current === '' ? 'no author' : `the author ${quote(current, AUTHOR_LENGTH)}`
  const before = recorded === '' ? 'none' : quote(recorded, AUTHOR_LENGTH)
  return hold(context, {
    phase: Phase.Error,
    reason: Reason.DefinitionAuthorChanged,
    message: `ChallengeDefinition "${name}" now names ${now}, not ${before} as when this instance was made: it stays stopped until an operator accepts the new author (the annotation ${Annotation.acceptDefinitionAuthor}=${quote(current, AUTHOR_LENGTH)} on this Challenge) or deletes the instance.`,
  })
}

const definitionFound: Step<AuthoredContext, DefinedContext> = (context) => {
  const lookup = lookupDefinition(
    context.world.related,
    context.world.challenge.spec.definitionRef.name,
    definitionPolicy(context.config),
  )
  if (!lookup.found) return hold(context, { phase: Phase.Error, reason: lookup.reason, message: lookup.message })
  const lifetimeMs = (context.world.challenge.spec.lifetimeSeconds ?? lookup.definition.lifetimeSeconds) * 1000
  return { ...context, definition: lookup.definition, lifetimeMs }
}

/** The Challenge's own fields the schema cannot check: parameters against the flag variable, the deadline's date. */
const challengeFields: Step<DefinedContext, DatedContext> = (context) => {
  const { spec } = context.world.challenge
  const parameterProblem = parametersProblem(spec.parameters ?? {}, context.definition.flag.env)
  if (parameterProblem)
    return hold(context, { phase: Phase.Error, reason: Reason.ConfigError, message: parameterProblem })
  // The schema lets through what the API server stores; a date it could not have stored has no meaning.
  const deadline = readTime(spec.deadline)
  if (spec.deadline !== undefined && deadline === undefined) {
    return hold(context, {
      phase: Phase.Error,
      reason: Reason.ConfigError,
      message: `spec.deadline: ${quote(spec.deadline)} is not a date-time.`,
    })
  }
  return { ...context, hardEnd: earliest(deadline, context.definition.availableUntil) }
}

const routing: Rule<DatedContext> = (context) => {
  const { type } = context.definition.expose
  const problem =
    type === 'HTTP' || type === 'TLS' ? routingProblem(type, context.config, context.world.childGroups) : undefined
  return problem === undefined
    ? undefined
    : hold(context, { phase: Phase.Error, reason: Reason.ConfigError, message: problem })
}

/** A budget across namespaces needs the owner's Challenges of every namespace: only hook version v2 relates them. */
const budgetScope: Rule<DatedContext> = (context) => {
  if (context.config.ownerBudgetScope !== 'Cluster' || context.world.customizeVersion === 'v2') return undefined
  return hold(context, {
    phase: Phase.Error,
    reason: Reason.ConfigError,
    message:
      "OWNER_BUDGET_SCOPE is Cluster, which counts an owner's budget across namespaces: the CompositeController's hooks must be at version v2 (the budget-across-namespaces component).",
  })
}

const flagSource: Step<DatedContext, FlaggedContext> = (context) => {
  const { world } = context
  const flag = flagData(
    { ownerKey: world.ownerKey, uid: world.challenge.metadata.uid, related: world.related },
    context.definition,
    context.config.flagSecret,
  )
  if (!flag.ok) return hold(context, { phase: Phase.Error, reason: Reason.ConfigError, message: flag.message })
  return { ...context, flagData: flag.data }
}

/** The Challenge's own deadline and the definition's availableUntil cap everything. */
const hardDeadline: Rule<FlaggedContext> = (context) => {
  if (context.hardEnd !== undefined && context.now >= context.hardEnd) {
    return finish(context, {
      phase: Phase.Deleted,
      reason: Reason.PastDeadline,
      message: 'The challenge is past its deadline.',
    })
  }
  context.deadlines.push(context.hardEnd)
  return undefined
}

const releaseGate: Rule<FlaggedContext> = (context) => {
  const from = context.definition.availableFrom
  if (from === undefined || context.now >= from) return undefined
  return hold(
    context,
    { phase: Phase.Pending, reason: Reason.NotYetAvailable, message: `The challenge opens at ${formatTime(from)}.` },
    nextDeadline(context, from),
  )
}

/**
 * With `prepull: Hold`, a run is not admitted before its definition says its images are on every node (images.ts):
 * it holds no budget meanwhile, and the definition's status write syncs it. Once admitted it is never held again (a
 * new node makes the definition Pulling for a while), and it waits at most its lifetime, as a queued one.
 */
const imagesGate: Rule<FlaggedContext> = (context) => {
  const { world, state, definition } = context
  if (definition.prepull !== PrepullMode.Hold || state.admittedAt !== undefined) return undefined
  const images = field(field(findObject(world.related, DEFINITION_KIND, definition.name), 'status'), 'images')
  if (field(images, 'state') === ImagesState.Ready) return undefined
  const giveUpAt = waitEnd(context)
  if (context.now >= giveUpAt) return waitedTooLong(context, "the challenge's images")
  return hold(
    context,
    { phase: Phase.Pending, reason: Reason.ImagesPulling, message: imagesMessage(images) },
    nextDeadline(context, giveUpAt),
  )
}

/** Where the images are, as the player may read it: the nodes that hold every image, of all. */
function imagesMessage(images: unknown): string {
  const nodes = count(field(images, 'nodes'))
  const ready = list(field(images, 'images')).map((image) => count(field(image, 'ready')) ?? 0)
  if (nodes === undefined || nodes === 0 || ready.length === 0)
    return "The challenge's images are being pulled onto the nodes; the instance starts once they are there."
  return `The challenge's images are on ${Math.min(...ready)} of ${nodes} nodes; the instance starts once they are on every one.`
}

/**
 * A pod the namespace would refuse (Pod Security, a LimitRange) is never asked for: the run ends at once with the
 * reason, before it holds a budget slot. Only until the pod of the run exists: admission judged it when it was made.
 */
const namespaceAdmits: Rule<FlaggedContext> = (context) => {
  const { world, state } = context
  if (state.startedAt !== undefined || currentPod(world.children, world.names, state.run) !== undefined)
    return undefined
  const refusal = namespaceRefusal(context.definition, world.related, world.namespace)
  return refusal === undefined
    ? undefined
    : finish(context, { phase: Phase.Error, reason: Reason.PodRefused, message: refusal })
}

/**
 * Admission is decided, and re-checked until the instance has started: with Metacontroller's caches, two instances
 * of one owner may each be admitted before seeing the other; once both are visible, every instance computes the
 * same order and the later one goes back to the queue before anyone played on it.
 */
const admission: Step<FlaggedContext, AdmittedContext> = (context) => {
  const { state, definition, config, world } = context
  if (state.admittedAt !== undefined && state.startedAt !== undefined)
    return { ...context, admittedAt: state.admittedAt }
  // OWNER_BUDGET_SCOPE None: no budget to hold or exceed, the namespace's quota is the ceiling.
  const counted = config.ownerBudgetScope !== 'None'
  if (counted && definition.cost > config.ownerBudget) {
    return hold(context, {
      phase: Phase.Error,
      reason: Reason.OwnerBudgetExceeded,
      message: `This challenge costs ${definition.cost} units, more than the ${config.ownerBudget} units one owner may hold.`,
    })
  }
  const owner = { challenge: world.challenge, ownerKey: world.ownerKey, siblings: world.siblings }
  const budget = counted
    ? budgetCheck(owner, definition.cost, config.ownerBudget, state.admittedAt)
    : ({ admitted: true } as const)
  if (budget.admitted) {
    state.admittedAt ??= context.now
    return { ...context, admittedAt: state.admittedAt }
  }
  const giveUpAt = waitEnd(context)
  if (context.now >= giveUpAt) return waitedTooLong(context, 'a free slot')
  if (budget.held === undefined) {
    // The sibling's cost write re-syncs this instance, but Metacontroller matches related events against every
    // Challenge in one goroutine per kind, which falls minutes behind in a rush (`npm run bench:rush` measures it).
    // A recheck soon costs a call or two.
    const message = 'Waiting for your other instances to report their cost.'
    return hold(
      context,
      { phase: Phase.Pending, reason: Reason.Queued, message },
      nextDeadline(context, giveUpAt, context.now + UNKNOWN_COST_RECHECK_MS),
    )
  }
  const message = `Waiting for another of your instances to end: ${budget.held} of your ${units(config.ownerBudget)} ${budget.held === 1 ? 'is' : 'are'} in use, and this challenge needs ${definition.cost}.`
  return hold(context, { phase: Phase.Pending, reason: Reason.Queued, message }, nextDeadline(context, giveUpAt))
}

// ---- helpers of the rules --------------------------------------------------------------------------------------

/** Longest author a message quotes whole: the user names of ChallengeAuthors are at most 253 characters. */
const AUTHOR_LENGTH = 253

/** How soon an instance waiting for a sibling's first cost write looks again, should the write's notice come late. */
export const UNKNOWN_COST_RECHECK_MS = 5_000

function units(count: number): string {
  return count === 1 ? '1 unit' : `${count} units`
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

/** A run not yet admitted waits at most its lifetime from when it began waiting (for its images, for a slot). */
function waitEnd(context: FlaggedContext): number {
  return queueStart(context) + context.lifetimeMs
}

function waitedTooLong(context: FlaggedContext, what: string): Decision {
  return finish(context, {
    phase: Phase.Deleted,
    reason: Reason.Expired,
    message: `The instance waited for ${what} longer than its lifetime.`,
  })
}

/**
 * When the current run started waiting: its creation for the first run; for a relaunch, the moment the run began
 * (the Admitted condition is new with each run, so its transition time is the start of the wait).
 */
function queueStart(context: RunContext): number {
  if (context.state.newRun) return context.now
  const admitted = context.world.previous.conditions.find((condition) => condition.type === ConditionType.Admitted)
  const since =
    context.state.run > 0 ? admitted?.lastTransitionTime : context.world.challenge.metadata.creationTimestamp
  return readTime(since) ?? context.now
}
