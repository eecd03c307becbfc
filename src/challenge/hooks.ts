/**
 * The three hooks as pure functions of (request, config, now):
 *
 *   request ─► observe (./world.ts) ─► decide (lifecycle) ─► render or tear down ─► status
 *
 * Nothing here knows about HTTP; the same request, config and `now` always give the same answer.
 */
import type { Config } from '../config/config.js'
import type { CustomizeRequest, CustomizeResponse, SyncRequest, SyncResponse } from '../contract/protocol.js'
import { API_VERSION, ConditionType, Label, Phase, Reason, ServedBy } from '../contract/api.js'
import { renderChildren, type RenderInput } from './children.js'
import type { Decision, World } from './decision-types.js'
import { decide } from './lifecycle.js'
import { observe } from './world.js'
import { pooledPodSelector } from './pool-serving.js'
import { staticFlagSecrets } from './flag.js'
import { countObjects } from './observed.js'
import { condition, definedTimes, type ChallengeStatus } from './status.js'
import { buildStatus } from './status-report.js'
import { teardown } from './teardown.js'
import { formatTime, toSeconds } from './time.js'

/** Retry a finalize that is still waiting for children or pods to go, in case no watch event arrives. */
export const FINALIZE_RESYNC_SECONDS = 10

/**
 * Seconds until the next deadline, rounded up to a tenth of a second so the next sync lands at or just after it,
 * and capped. Metacontroller takes a fraction (its resyncAfterSeconds is a float): whole seconds would add half a
 * second on average to every wait that ends on a deadline, such as the settle time before Running.
 */
export function resyncAfter(nextDeadline: number | undefined, now: number, config: Config): number | undefined {
  if (nextDeadline === undefined) return undefined
  return Math.min(
    config.maxResyncSeconds,
    Math.max(RESYNC_STEP_MS, Math.ceil((nextDeadline - now) / RESYNC_STEP_MS) * RESYNC_STEP_MS) / 1000,
  )
}

const RESYNC_STEP_MS = 100

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
          ...traffic(world, decision, decision.definition.name),
          definition: decision.definition,
          parameters: world.challenge.spec.parameters ?? {},
          flagData: decision.flagData,
          instanceId: world.instanceId,
          owner: { kind: world.ownerKey.ownerKind, id: world.ownerKey.ownerId },
          run: decision.state.run,
          admittedAt: formatTime(decision.state.admittedAt as number),
          config,
          withPod: decision.pod,
        })
      : teardown(world.children)
  const response: SyncResponse = { status: buildStatus(world, decision, at), children }
  const resync = resyncAfter(decision.nextDeadline, at, config)
  if (resync !== undefined) response.resyncAfterSeconds = resync
  return response
}

/**
 * What a run's traffic path selects: its own pod, or while it is served from the pool (waiting for a pod, or
 * claimed) the pooled pod; and how it is served, which its Service records (run-record.ts). A Waiting run's since is
 * its admission, which the Service records already.
 */
function traffic(world: World, decision: Decision, definition: string): Pick<RenderInput, 'podLabels' | 'served'> {
  const pool = decision.pool
  if (pool?.state === ServedBy.Waiting || pool?.state === ServedBy.Claimed) {
    const since = pool.state === ServedBy.Claimed ? formatTime(pool.since as number) : undefined
    return {
      podLabels: pooledPodSelector(definition, world.challenge.metadata.uid, pool.slot),
      served: { state: pool.state, pod: pool.pod, since },
    }
  }
  if (pool?.state === ServedBy.Cold && pool.since !== undefined)
    return { podLabels: world.podLabels, served: { state: pool.state, pod: undefined, since: formatTime(pool.since) } }
  return { podLabels: world.podLabels }
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
  const children = teardown(world.children)
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
    conditions: [condition(previous.conditions, ConditionType.Ready, false, Reason.Deleting, message, timestamp)],
  }
  const { admittedAt, startedAt, lastRenewedAt } = previous
  Object.assign(status, definedTimes({ admittedAt, startedAt, lastRenewedAt }), {
    finishedAt: previous.finishedAt ?? timestamp,
  })
  const finalized = countObjects(world.children) === 0
  const response: SyncResponse = { status, children }
  if (request.finalizing === true) response.finalized = finalized
  if (!finalized) response.resyncAfterSeconds = FINALIZE_RESYNC_SECONDS
  return response
}

/**
 * What the sync needs besides its children, fetched by Metacontroller:
 * - the instance's own ChallengeDefinition, by name;
 * - the owner's Challenges, by the owner label (the budget queue; each carries its cost in status.cost), in the
 *   instance's namespace, or in every namespace when OWNER_BUDGET_SCOPE is Cluster (hook version v2); none when it
 *   is None: each of their writes would sync every sibling, the largest cost of an opening for Metacontroller;
 * - static flag Secrets labelled with the definition's name (never our own flag Secrets);
 * - the Namespace and its LimitRanges (what it would refuse a pod for);
 * - the flag Secrets of the warm-pool pods claimed for it (docs/api.md#warm-pools).
 * Never the instance's pod: it is a child, whose events reach only its parent. A related rule makes Metacontroller
 * weigh every event of that kind in the cluster against every Challenge (docs/design.md).
 */
export function customize(request: CustomizeRequest, config: Config): CustomizeResponse {
  const challenge = request.parent
  const namespace = challenge.metadata.namespace
  // With hook version v2, a rule without a namespace selects in every namespace: only the owner's Challenges may, and
  // only when the budget is counted across namespaces. The namespace is allowed under v1 too (it is the parent's).
  const owners = { matchLabels: { [Label.owner]: challenge.spec.owner.id } }
  const siblings = {
    Namespace: [{ apiVersion: API_VERSION, resource: 'challenges', namespace, labelSelector: owners }],
    Cluster: [{ apiVersion: API_VERSION, resource: 'challenges', labelSelector: owners }],
    None: [],
  }[config.ownerBudgetScope]
  return {
    relatedResources: [
      // Its own definition only: the sync request must not grow with the catalogue, and an edit of one
      // definition must re-sync only its instances. Siblings' costs come from their status.cost.
      {
        apiVersion: API_VERSION,
        resource: 'challengedefinitions',
        namespace,
        names: [challenge.spec.definitionRef.name],
      },
      ...siblings,
      staticFlagSecrets(namespace, challenge.spec.definitionRef.name),
      // What the namespace would refuse a pod for (namespace-policy.ts): objects that rarely change, so their events
      // cost Metacontroller's scan of every parent rarely.
      { apiVersion: 'v1', resource: 'namespaces', names: [namespace] },
      { apiVersion: 'v1', resource: 'limitranges', namespace, labelSelector: {} },
      // The flag Secrets of the warm-pool pods claimed for this Challenge (pool-serving.ts): Secrets are weighed
      // against every Challenge's rules already, pods would add every pod status write of the cluster.
      {
        apiVersion: 'v1',
        resource: 'secrets',
        namespace,
        labelSelector: { matchLabels: { [Label.claimedBy]: challenge.metadata.uid } },
      },
    ],
  }
}
