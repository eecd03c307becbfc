/**
 * The shapes of a lifecycle decision (lifecycle.ts decides, renewal.ts acts on a renewal, hooks.ts renders and
 * writes the status from it): the observed world, the run's sticky state, what the rules know in stages, and the
 * decision itself.
 */
import type { Config } from '../config/config.js'
import type { ChallengeObject, KubeObject } from '../contract/protocol.js'
import type { Phase } from '../contract/api.js'
import type { ResolvedDefinition } from './definition.js'
import type { EndpointObservation } from './endpoint.js'
import type { ChildNames } from './names.js'
import type { ObservedIndex } from './observed.js'
import type { OwnerKey } from './hmac.js'
import type { PreviousStatus } from './status.js'
import type { PodProblem } from './workload.js'
import type { Serving } from './pool-serving.js'
import type { RunRecord } from './run-record.js'

export interface RenewalOutcome {
  accepted: boolean
  reason: string
  message: string
}

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
  /** The owner's Challenges the request carries (this one included): from every namespace when the budget spans them. */
  siblings: KubeObject[]
  /** The customize hook's version (`v1`, `v2`), from the CompositeController the request carries. */
  customizeVersion: string
}

export interface Outcome {
  phase: Phase
  reason: string
  message: string
}

/** The sticky part of the status for the current run (instants in ms), and whether this sync starts the run. */
export interface RunState {
  run: number
  newRun: boolean
  admittedAt: number | undefined
  startedAt: number | undefined
  lastRenewedAt: number | undefined
  finishedAt: number | undefined
  renewalsSeen: number
  renewalsApplied: number
}

/** What the instance's pod and traffic path look like this sync (for the status's progress conditions). */
export interface Progress {
  scheduledAt: number | undefined
  containersStartedAt: number | undefined
  /** when the pod became ready (its readiness probes passing), while it is */
  readyAt: number | undefined
}

export interface Decision extends Outcome {
  state: RunState
  /** Render the workload (flag Secret, policies, Service, route, and the Pod when `pod`); otherwise tear down. */
  workload: boolean
  /** The Pod too: its flag Secret and NetworkPolicies are observed as this Challenge's own, and it has not ended. */
  pod: boolean
  /** Holds a slot of its owner's budget. */
  admitted: boolean
  definition: ResolvedDefinition | undefined
  /** The definition's author the status records: the one this sync accepted, else the previous one. */
  definitionAuthor: string | undefined
  /** base64 of the flag, present exactly when `workload` is. */
  flagData: string | undefined
  endpoint: EndpointObservation['endpoint']
  /** Why the route carries no traffic yet, as its Gateway says (while the workload is rendered). */
  routeProblem: EndpointObservation['routeProblem']
  expiresAt: number | undefined
  progress: Progress
  renewal: RenewalOutcome | undefined
  /** How the run is served by its definition's warm pool; undefined without one (pool-serving.ts). */
  pool: Serving | undefined
  /** Earliest future instant at which the decision changes by itself (ms since epoch). */
  nextDeadline: number | undefined
}

/*
 * What the rules know, in stages: each stage is what one rule (lifecycle.ts, running.ts) learned added to the stage
 * before it, so a rule's parameter holds exactly what the rules before it set. A rule that learns nothing takes the
 * stage it is tried in; `state` and `deadlines` are shared by every stage of one decision.
 */

/** From the start: the request, the configuration, `now`, the run's sticky state and the deadlines gathered so far. */
export interface RunContext {
  world: World
  config: Config
  now: number
  state: RunState
  /** What the run's Service records of it (run-record.ts). */
  recorded: RunRecord
  /** instants at which the decision changes by itself, gathered on the way */
  deadlines: (number | undefined)[]
}

/** definitionAuthorKept: the author of the observed definition, once the instance may run with it. */
export interface AuthoredContext extends RunContext {
  /** undefined while no definition of that name is observed (definitionFound then holds) */
  definitionAuthor: string | undefined
}

/** definitionFound: the definition, resolved against the operator's policy, and the lifetime it gives. */
export interface DefinedContext extends AuthoredContext {
  definition: ResolvedDefinition
  lifetimeMs: number
}

/** challengeFields: the hard end, the earliest of spec.deadline and availableUntil. */
export interface DatedContext extends DefinedContext {
  hardEnd: number | undefined
}

/** flagSource: the flag, base64; the gates of the world that follow (deadline, release, namespace) learn nothing. */
export interface FlaggedContext extends DatedContext {
  flagData: string
}

/** admission: the run holds a slot of its owner's budget since this instant. */
export interface AdmittedContext extends FlaggedContext {
  admittedAt: number
}

/** podFailure: the run's pod, once its guard children are its own, and what it says. */
export interface PodContext extends AdmittedContext {
  pod: KubeObject | undefined
  /** guard children not yet observed as the instance's own */
  missing: string[]
  problem: PodProblem | undefined
  /** How the run is served by its definition's warm pool: while Waiting or Claimed, `pod` is the pooled one or none. */
  served: Serving | undefined
}

/** startupTimeout: the traffic path, and the startup deadline while the run has not started. */
export interface ObservedContext extends PodContext {
  observed: EndpointObservation
  /** admittedAt + startupTimeoutSeconds, while the run has not started */
  startupDeadline: number | undefined
}

/** Any stage: what a decision of any rule (rule.ts, base) reads, the fields of later stages when they are known. */
export type AnyContext = RunContext & Partial<Pick<DefinedContext, 'definitionAuthor' | 'definition'>>
