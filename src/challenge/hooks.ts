/**
 * The three hooks as pure functions of (request, config, now):
 *
 *   request ─► observe (index children and related) ─► decide (lifecycle) ─► render or tear down ─► status
 *
 * Nothing here knows about HTTP; the same request, config and `now` always give the same answer.
 */
import type { Config } from '../config.js'
import type {
  ChallengeObject,
  CustomizeRequest,
  CustomizeResponse,
  DesiredChild,
  SyncRequest,
  SyncResponse,
} from '../protocol.js'
import { API_VERSION, ConditionType, Label, MANAGED_BY, Phase, Reason } from './api.js'
import { renderChildren, teardown } from './children.js'
import { decide, type Decision, type World } from './lifecycle.js'
import { childNames, podLabels } from './names.js'
import { countObjects, findObject, indexObjects, ownChild, type ObservedIndex } from './observed.js'
import { instanceId, type OwnerKey } from './secrets.js'
import { condition, definedTimes, readPreviousStatus, type ChallengeStatus, type Condition } from './status.js'
import { formatTime, toSeconds } from './time.js'

/** Retry a finalize that is still waiting for children or pods to go, in case no watch event arrives. */
export const FINALIZE_RESYNC_SECONDS = 10

function ownerKeyOf(challenge: ChallengeObject): OwnerKey {
  return {
    namespace: challenge.metadata.namespace,
    definition: challenge.spec.definitionRef.name,
    ownerKind: challenge.spec.owner.kind,
    ownerId: challenge.spec.owner.id,
  }
}

export function observe(request: SyncRequest, config: Config): World {
  const challenge = request.parent
  const namespace = challenge.metadata.namespace
  const ownerKey = ownerKeyOf(challenge)
  const names = childNames(challenge.metadata.name, challenge.metadata.uid)
  const children = indexObjects(request.children, namespace)
  return {
    challenge,
    namespace,
    names,
    podLabels: podLabels(names, legacySelector(children, names.base)),
    ownerKey,
    instanceId: instanceId(config.flagSecret, ownerKey),
    previous: readPreviousStatus(challenge.status),
    children,
    childGroups: new Set(Object.keys(request.children ?? {})),
    related: indexObjects(request.related, namespace),
  }
}

/** A Deployment made before the uid label existed: its selector cannot change, so the instance keeps it. */
function legacySelector(children: ObservedIndex, base: string): boolean {
  const deployment = findObject(children, 'Deployment', base)
  if (deployment === undefined) return false
  const matchLabels = (deployment.spec as { selector?: { matchLabels?: Record<string, unknown> } } | undefined)?.selector?.matchLabels
  return matchLabels?.[Label.instance] === base && matchLabels[Label.uid] === undefined
}

function conditions(world: World, decision: Decision, at: string): Condition[] {
  const previous = decision.newRun ? [] : world.previous.conditions
  const { phase, reason, message } = decision
  const ended = phase === Phase.Deleted && (reason === Reason.Expired || reason === Reason.PastDeadline)
  const result = [
    decision.admitted
      ? condition(previous, ConditionType.Admitted, true, 'Admitted', 'The instance holds a slot of its owner\'s budget.', at)
      : condition(previous, ConditionType.Admitted, false, reason, message, at),
    decision.workloadReady
      ? condition(previous, ConditionType.WorkloadReady, true, 'DeploymentAvailable', 'The workload has a ready replica.', at)
      : condition(previous, ConditionType.WorkloadReady, false, decision.workload ? reason : 'NoWorkload', decision.workload ? message : 'The instance has no workload.', at),
    decision.endpoint
      ? condition(previous, ConditionType.EndpointReady, true, 'EndpointAllocated', decision.endpoint.connection, at)
      : decision.routeProblem
        ? condition(previous, ConditionType.EndpointReady, false, 'RouteNotAccepted', decision.routeProblem.message, at)
        : condition(previous, ConditionType.EndpointReady, false, 'NoEndpoint', 'Traffic cannot reach the instance yet.', at),
    phase === Phase.Running
      ? condition(previous, ConditionType.Ready, true, Reason.Ready, message, at)
      : condition(previous, ConditionType.Ready, false, reason, message, at),
    ended
      ? condition(previous, ConditionType.Expired, true, reason, message, at)
      : condition(previous, ConditionType.Expired, false, 'NotExpired', 'The instance has not reached its end.', at),
  ]
  const renewal = decision.renewal
  const previousRenewal = previous.find((each) => each.type === ConditionType.RenewalAccepted)
  if (renewal) result.push(condition(previous, ConditionType.RenewalAccepted, renewal.accepted, renewal.reason, renewal.message, at))
  else if (previousRenewal) result.push(previousRenewal)
  return result
}

export function buildStatus(world: World, decision: Decision, children: readonly DesiredChild[], now: number): ChallengeStatus {
  const at = formatTime(now)
  const status: ChallengeStatus = {
    phase: decision.phase,
    reason: decision.reason,
    message: decision.message,
    instanceId: world.instanceId,
    run: decision.run,
    renewalsSeen: decision.renewalsSeen,
    renewalsApplied: decision.renewalsApplied,
    conditions: conditions(world, decision, at),
  }
  if (decision.endpoint) status.endpoint = decision.endpoint
  const cost = decision.definition?.cost ?? world.previous.cost
  if (cost !== undefined) status.cost = cost
  Object.assign(status, definedTimes(decision))
  // Only the instance's own Secret, observed: never one that merely carries its name.
  const flagSecret = world.names.flagSecret
  if (children.some((child) => child.kind === 'Secret' && child.metadata.name === flagSecret) && ownChild(world.children, 'Secret', flagSecret, world.names.uid)) {
    status.flagSecretRef = { name: flagSecret }
  }
  return status
}

/** Seconds until the next deadline, rounded up so the next sync lands at or just after it, and capped. */
export function resyncAfter(nextDeadline: number | undefined, now: number, config: Config): number | undefined {
  if (nextDeadline === undefined) return undefined
  return Math.min(config.maxResyncSeconds, Math.max(1, Math.ceil((nextDeadline - now) / 1000)))
}

/** Deletion is said by the request: a finalize call, or a parent that carries a deletionTimestamp. */
export function beingDeleted(request: SyncRequest): boolean {
  return request.finalizing === true || Boolean(request.parent.metadata.deletionTimestamp)
}

export function sync(request: SyncRequest, config: Config, now: Date): SyncResponse {
  // A CompositeController may point both hooks at one URL (Metacontroller's own examples do): a parent being
  // deleted is torn down whichever hook was called, never rendered or reported Running.
  if (beingDeleted(request)) return finalize(request, config, now)
  const at = toSeconds(now.getTime())
  const world = observe(request, config)
  const decision = decide(world, config, at)
  const children =
    decision.workload && decision.definition && decision.flagData !== undefined
      ? renderChildren({
          namespace: world.namespace,
          names: world.names,
          podLabels: world.podLabels,
          definition: decision.definition,
          parameters: world.challenge.spec.parameters ?? {},
          flagData: decision.flagData,
          instanceId: world.instanceId,
          run: decision.run,
          config,
          withDeployment: decision.deployment,
        })
      : teardown(world.children, world.related, world.names)
  const response: SyncResponse = { status: buildStatus(world, decision, children, at), children }
  const resync = resyncAfter(decision.nextDeadline, at, config)
  if (resync !== undefined) response.resyncAfterSeconds = resync
  return response
}

/**
 * Deletion: phase Terminating, ordered teardown, and `finalized: true` only once no child is observed.
 * The times and counters of the record stay until the object is gone. `finalized` is answered only to a
 * finalizing call: in the answer to a sync it would remove Metacontroller's finalizer, which then flaps.
 */
export function finalize(request: SyncRequest, config: Config, now: Date): SyncResponse {
  const at = toSeconds(now.getTime())
  const world = observe(request, config)
  const previous = world.previous
  const children = teardown(world.children, world.related, world.names)
  const message = 'The instance is being deleted.'
  const timestamp = formatTime(at)
  const status: ChallengeStatus = {
    phase: Phase.Terminating,
    reason: Reason.Deleting,
    message,
    instanceId: world.instanceId,
    run: previous.run,
    renewalsSeen: previous.renewalsSeen,
    renewalsApplied: previous.renewalsApplied,
    conditions: [
      condition(previous.conditions, ConditionType.Ready, false, Reason.Deleting, message, timestamp),
    ],
  }
  const { admittedAt, startedAt, lastRenewedAt } = previous
  Object.assign(status, definedTimes({ admittedAt, startedAt, lastRenewedAt }), { finishedAt: previous.finishedAt ?? timestamp })
  const finalized = countObjects(world.children) === 0
  const response: SyncResponse = { status, children }
  if (request.finalizing === true) response.finalized = finalized
  if (!finalized) response.resyncAfterSeconds = FINALIZE_RESYNC_SECONDS
  return response
}

/**
 * What the sync needs besides its children, fetched by Metacontroller:
 * - the instance's own ChallengeDefinition, by name;
 * - the instance's pods, by the instance label (readiness and error reasons);
 * - the owner's Challenges, by the owner label (the budget queue; each carries its cost in status.cost);
 * - static flag Secrets labelled with the definition's name (never our own flag Secrets).
 */
export function customize(request: CustomizeRequest): CustomizeResponse {
  const challenge = request.parent
  const namespace = challenge.metadata.namespace
  const names = childNames(challenge.metadata.name, challenge.metadata.uid)
  return {
    relatedResources: [
      // Its own definition only: the sync request must not grow with the catalogue, and an edit of one
      // definition must re-sync only its instances. Siblings' costs come from their status.cost.
      { apiVersion: API_VERSION, resource: 'challengedefinitions', namespace, names: [challenge.spec.definitionRef.name] },
      { apiVersion: 'v1', resource: 'pods', labelSelector: { matchLabels: { [Label.instance]: names.base } } },
      { apiVersion: API_VERSION, resource: 'challenges', labelSelector: { matchLabels: { [Label.owner]: challenge.spec.owner.id } } },
      {
        apiVersion: 'v1',
        resource: 'secrets',
        labelSelector: {
          matchLabels: { [Label.definition]: challenge.spec.definitionRef.name },
          matchExpressions: [{ key: Label.managedBy, operator: 'NotIn', values: [MANAGED_BY] }],
        },
      },
    ],
  }
}
