/**
 * The shapes of a lifecycle decision (lifecycle.ts decides, renewal.ts acts on a renewal, hooks.ts renders and
 * writes the status from it): the observed world, the run's sticky state, and the decision itself.
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
  /** Earliest future instant at which the decision changes by itself (ms since epoch). */
  nextDeadline: number | undefined
}

/** What the rules learn, each field set by one rule and read by the later ones. */
export interface Context {
  world: World
  config: Config
  now: number
  state: RunState
  /** the author of the observed definition, once the instance may run with it */
  definitionAuthor: string | undefined
  definition: ResolvedDefinition
  flagData: string
  /** the earliest of spec.deadline and availableUntil */
  hardEnd: number | undefined
  lifetimeMs: number
  pod: KubeObject | undefined
  /** guard children not yet observed as the instance's own */
  missing: string[]
  /** admittedAt + startupTimeoutSeconds, while the run has not started */
  startupDeadline: number | undefined
  problem: PodProblem | undefined
  observed: EndpointObservation
  /** instants at which the decision changes by itself, gathered on the way */
  deadlines: (number | undefined)[]
}
