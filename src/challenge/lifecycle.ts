/**
 * The lifecycle decision of one sync: from the observed world, the previous status, the configuration and `now`,
 * which phase the instance is in, whether it holds a workload, and which sticky times and counters it carries
 * forward. Pure: no I/O, no clock but the `now` it is given. Each rule is a small function; they are tried in this
 * order and the first that decides wins:
 *
 *   finishedRun → stopped → ownerLabels → definitionAuthorKept → definitionFound → challengeFields → routing →
 *   budgetScope → flagSource → hardDeadline → releaseGate → namespaceAdmits → admission → lifetimeOver → podFailure →
 *   startupTimeout → runningOrStarting
 *
 * A run ends in Deleted or in a sticky Error (finish); a problem of the world (a missing definition, labels, a
 * release gate, the budget queue) holds the instance without a workload and re-checks at every sync (hold); only
 * `spec.restarts` starts a new run. The pod runs only once its flag Secret and NetworkPolicies are observed as the
 * Challenge's own children, and the instance is Running only ENDPOINT_SETTLE_MS after its pod became ready and
 * its Service and route came into place: kube-proxy and the proxies program a new path only after that.
 *
 * This file holds the run and the gates up to admission; the rules of an admitted run and its timers (from
 * lifetimeOver on) are in running.ts, and what a rule returns (finish, hold) in rule.ts.
 */
import type { Config } from '../config/config.js'
import type { ChallengeObject } from '../contract/protocol.js'
import { Annotation, ConditionType, Label, Phase, Reason } from '../contract/api.js'
import { budgetCheck } from './budget.js'
import type { Context, Decision, RunState, World } from './decision-types.js'
import { DEFINITION_KIND, definitionAuthor, lookupDefinition } from './definition.js'
import { flagData, parametersProblem } from './flag.js'
import { namespaceRefusal } from './namespace-policy.js'
import { findObject } from './observed.js'
import { field, quote } from './untrusted.js'
import { applyRenewal } from './renewal.js'
import { routingProblem } from './traffic-routes.js'
import { finish, hold, nextDeadline, type Rule } from './rule.js'
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
  // Every field a rule reads was set by a rule before it (definitionFound sets the definition, and so on).
  const c = { world, config, now, state: runState(world), deadlines: [] } as unknown as Context
  for (const rule of RULES) {
    const decision = rule(c)
    if (decision !== undefined) return applyRenewal(c, decision)
  }
  return applyRenewal(c, runningOrStarting(c))
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
const finishedRun: Rule = (c) => {
  const { previous } = c.world
  if (c.state.newRun) return undefined
  if (previous.phase === Phase.Deleted)
    return finish(c, { phase: Phase.Deleted, reason: previous.reason ?? Reason.Expired, message: previous.message })
  // finishedAt tells a run-ending Error from a ConfigError of the world (a missing static flag Secret), which
  // recovers once fixed.
  if (
    previous.phase === Phase.Error &&
    previous.finishedAt !== undefined &&
    RUN_ENDING_ERRORS.has(String(previous.reason))
  ) {
    return finish(c, { phase: Phase.Error, reason: previous.reason as string, message: previous.message })
  }
  return undefined
}

const stopped: Rule = (c) => {
  const { spec } = c.world.challenge
  if (spec.desiredState !== 'Stopped') return undefined
  const reason = spec.stopReason ?? Reason.Stopped
  const message =
    spec.stopReason === undefined ? 'The instance was stopped.' : `The instance was stopped: ${quote(spec.stopReason)}.`
  return finish(c, { phase: Phase.Deleted, reason, message })
}

const ownerLabels: Rule = (c) => {
  const problem = ownerLabelProblem(c.world.challenge)
  return problem === undefined
    ? undefined
    : hold(c, { phase: Phase.Error, reason: Reason.OwnerLabelMismatch, message: problem })
}

/**
 * An instance stays with the author of the definition it was first synced with. Its flags follow the definition's
 * name, so a definition deleted and made again under that name by someone else (or handed to another author) would
 * run their pod with the flags of the first author's challenge: the instance holds, without a workload, until an
 * operator accepts the new author with an annotation only operators may set (admission-policy.yaml). An instance
 * that recorded no author yet adopts the current one. A missing definition is definitionFound's to report.
 */
const definitionAuthorKept: Rule = (c) => {
  const { world } = c
  const name = world.challenge.spec.definitionRef.name
  const object = findObject(world.related, DEFINITION_KIND, name)
  if (object === undefined) return undefined
  const current = definitionAuthor(object)
  const recorded = world.previous.definitionAuthor
  const accepted = field(world.challenge.metadata.annotations, Annotation.acceptDefinitionAuthor)
  if (recorded === undefined || recorded === current || accepted === current) {
    c.definitionAuthor = current
    return undefined
  }
  const now = current === '' ? 'no author' : `the author ${quote(current, AUTHOR_LENGTH)}`
  const before = recorded === '' ? 'none' : quote(recorded, AUTHOR_LENGTH)
  return hold(c, {
    phase: Phase.Error,
    reason: Reason.DefinitionAuthorChanged,
    message: `ChallengeDefinition "${name}" now names ${now}, not ${before} as when this instance was made: it stays stopped until an operator accepts the new author (the annotation ${Annotation.acceptDefinitionAuthor}=${quote(current, AUTHOR_LENGTH)} on this Challenge) or deletes the instance.`,
  })
}

const definitionFound: Rule = (c) => {
  const policy = {
    extendedResources: c.config.allowedExtendedResources,
    runtimeClasses: c.config.allowedRuntimeClasses,
    costUnit: c.config.costUnit,
  }
  const lookup = lookupDefinition(c.world.related, c.world.challenge.spec.definitionRef.name, policy)
  if (!lookup.found) return hold(c, { phase: Phase.Error, reason: lookup.reason, message: lookup.message })
  c.definition = lookup.definition
  c.lifetimeMs = (c.world.challenge.spec.lifetimeSeconds ?? lookup.definition.lifetimeSeconds) * 1000
  return undefined
}

/** The Challenge's own fields the schema cannot check: parameters against the flag variable, the deadline's date. */
const challengeFields: Rule = (c) => {
  const { spec } = c.world.challenge
  const parameterProblem = parametersProblem(spec.parameters ?? {}, c.definition.flag.env)
  if (parameterProblem) return hold(c, { phase: Phase.Error, reason: Reason.ConfigError, message: parameterProblem })
  // The schema lets through what the API server stores; a date it could not have stored has no meaning.
  const deadline = readTime(spec.deadline)
  if (spec.deadline !== undefined && deadline === undefined) {
    return hold(c, {
      phase: Phase.Error,
      reason: Reason.ConfigError,
      message: `spec.deadline: ${quote(spec.deadline)} is not a date-time.`,
    })
  }
  c.hardEnd = earliest(deadline, c.definition.availableUntil)
  return undefined
}

const routing: Rule = (c) => {
  const { type } = c.definition.expose
  const problem = type === 'HTTP' || type === 'TLS' ? routingProblem(type, c.config, c.world.childGroups) : undefined
  return problem === undefined
    ? undefined
    : hold(c, { phase: Phase.Error, reason: Reason.ConfigError, message: problem })
}

/** A budget across namespaces needs the owner's Challenges of every namespace: only hook version v2 relates them. */
const budgetScope: Rule = (c) => {
  if (c.config.ownerBudgetScope !== 'Cluster' || c.world.customizeVersion === 'v2') return undefined
  return hold(c, {
    phase: Phase.Error,
    reason: Reason.ConfigError,
    message:
      "OWNER_BUDGET_SCOPE is Cluster, which counts an owner's budget across namespaces: the CompositeController's hooks must be at version v2 (the budget-across-namespaces component).",
  })
}

const flagSource: Rule = (c) => {
  const { world } = c
  const flag = flagData(
    { ownerKey: world.ownerKey, uid: world.challenge.metadata.uid, related: world.related },
    c.definition,
    c.config.flagSecret,
  )
  if (!flag.ok) return hold(c, { phase: Phase.Error, reason: Reason.ConfigError, message: flag.message })
  c.flagData = flag.data
  return undefined
}

/** The Challenge's own deadline and the definition's availableUntil cap everything. */
const hardDeadline: Rule = (c) => {
  if (c.hardEnd !== undefined && c.now >= c.hardEnd) {
    return finish(c, {
      phase: Phase.Deleted,
      reason: Reason.PastDeadline,
      message: 'The challenge is past its deadline.',
    })
  }
  c.deadlines.push(c.hardEnd)
  return undefined
}

const releaseGate: Rule = (c) => {
  const from = c.definition.availableFrom
  if (from === undefined || c.now >= from) return undefined
  return hold(
    c,
    { phase: Phase.Pending, reason: Reason.NotYetAvailable, message: `The challenge opens at ${formatTime(from)}.` },
    nextDeadline(c, from),
  )
}

/**
 * A pod the namespace would refuse (Pod Security, a LimitRange) is never asked for: the run ends at once with the
 * reason, before it holds a budget slot. Only until the pod of the run exists: admission judged it when it was made.
 */
const namespaceAdmits: Rule = (c) => {
  const { world, state } = c
  if (state.startedAt !== undefined || currentPod(world.children, world.names, state.run) !== undefined)
    return undefined
  const refusal = namespaceRefusal(c.definition, world.related, world.namespace)
  return refusal === undefined
    ? undefined
    : finish(c, { phase: Phase.Error, reason: Reason.PodRefused, message: refusal })
}

/**
 * Admission is decided, and re-checked until the instance has started: with Metacontroller's caches, two instances
 * of one owner may each be admitted before seeing the other; once both are visible, every instance computes the
 * same order and the later one goes back to the queue before anyone played on it.
 */
const admission: Rule = (c) => {
  const { state, definition, config, world } = c
  if (state.admittedAt !== undefined && state.startedAt !== undefined) return undefined
  if (definition.cost > config.ownerBudget) {
    return hold(c, {
      phase: Phase.Error,
      reason: Reason.OwnerBudgetExceeded,
      message: `This challenge costs ${definition.cost} units, more than the ${config.ownerBudget} units one owner may hold.`,
    })
  }
  const owner = { challenge: world.challenge, ownerKey: world.ownerKey, siblings: world.siblings }
  const budget = budgetCheck(owner, definition.cost, config.ownerBudget, state.admittedAt)
  if (budget.admitted) {
    state.admittedAt ??= c.now
    return undefined
  }
  const giveUpAt = queueStart(c) + c.lifetimeMs
  if (c.now >= giveUpAt) {
    return finish(c, {
      phase: Phase.Deleted,
      reason: Reason.Expired,
      message: 'The instance waited for a free slot longer than its lifetime.',
    })
  }
  if (budget.held === undefined) {
    // The sibling's cost write re-syncs this instance, but Metacontroller matches related events against every
    // Challenge in one goroutine per kind, which falls minutes behind in a rush (`npm run bench:rush` measures it).
    // A recheck soon costs a call or two.
    const message = 'Waiting for your other instances to report their cost.'
    return hold(
      c,
      { phase: Phase.Pending, reason: Reason.Queued, message },
      nextDeadline(c, giveUpAt, c.now + UNKNOWN_COST_RECHECK_MS),
    )
  }
  const message = `Waiting for another of your instances to end: ${budget.held} of your ${units(config.ownerBudget)} ${budget.held === 1 ? 'is' : 'are'} in use, and this challenge needs ${definition.cost}.`
  return hold(c, { phase: Phase.Pending, reason: Reason.Queued, message }, nextDeadline(c, giveUpAt))
}

/** Every rule but the last, runningOrStarting, which always decides. */
const RULES: Rule[] = [
  finishedRun,
  stopped,
  ownerLabels,
  definitionAuthorKept,
  definitionFound,
  challengeFields,
  routing,
  budgetScope,
  flagSource,
  hardDeadline,
  releaseGate,
  namespaceAdmits,
  admission,
  lifetimeOver,
  podFailure,
  startupTimeout,
]

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

/**
 * When the current run started waiting: its creation for the first run; for a relaunch, the moment the run began
 * (the Admitted condition is new with each run, so its transition time is the start of the wait).
 */
function queueStart(c: Context): number {
  if (c.state.newRun) return c.now
  const admitted = c.world.previous.conditions.find((condition) => condition.type === ConditionType.Admitted)
  const since = c.state.run > 0 ? admitted?.lastTransitionTime : c.world.challenge.metadata.creationTimestamp
  return readTime(since) ?? c.now
}
