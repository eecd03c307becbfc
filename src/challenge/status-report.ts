/**
 * The status of a decision: the whole `.status` the answer writes (Metacontroller replaces it with each answer,
 * so every sticky time and counter is carried forward from the previous one).
 *
 * Conditions say where the instance stands with the instants that explain a wait: Admitted (its budget slot),
 * Scheduled and ContainersStarted (the pod, with the kubelet's own instants), WorkloadReady (its readiness probes
 * passing, since the kubelet's instant), EndpointReady (traffic can reach it), Ready (Running), Expired, and
 * RenewalAccepted once a renewal was asked for. A condition's lastTransitionTime moves only when its status flips.
 * The progress conditions (Scheduled, ContainersStarted, WorkloadReady, EndpointReady) are refreshed only when
 * anything else in the status changes: the status is then written at the steps of the phase (admitted, Running, an
 * error) rather than at every step of a pod, each write being one more event Metacontroller weighs against every
 * Challenge (docs/design.md); the instants they carry are the pod's own, so nothing is lost by waiting.
 */
import { ConditionType, Phase, Reason, ServedBy } from '../contract/api.js'
import type { Decision, World } from './decision-types.js'
import { record } from './untrusted.js'
import { condition, definedTimes, type ChallengeStatus, type Condition, type PoolStatus } from './status.js'
import type { PoolRecord } from './pool-serving.js'
import { poolFlagSecretName } from './pool-children.js'
import { formatTime, readTime } from './time.js'

const PROGRESS = new Set<string>([
  ConditionType.Scheduled,
  ConditionType.ContainersStarted,
  ConditionType.WorkloadReady,
  ConditionType.EndpointReady,
])

/**
 * Where a condition stands: true or false, why, and the instant it reports (unset: now, or its last transition if
 * unchanged).
 */
type Verdict = [status: boolean, reason: string, message: string, since?: string]

/** A step of the pod's start: true since the kubelet's instant, false while it waits, or no workload at all. */
function podStep(
  decision: Decision,
  at: number | undefined,
  done: [string, string],
  waiting: [string, string],
): Verdict {
  if (!decision.workload) return [false, 'NoWorkload', 'The instance has no workload.']
  return at !== undefined ? [true, ...done, formatTime(at)] : [false, ...waiting]
}

function conditions(world: World, decision: Decision, now: string): Condition[] {
  const previous = decision.state.newRun ? [] : world.previous.conditions
  const { phase, reason, message, progress, endpoint, routeProblem } = decision
  const ended = phase === Phase.Deleted && (reason === Reason.Expired || reason === Reason.PastDeadline)
  const verdicts: [ConditionType, Verdict][] = [
    [
      ConditionType.Admitted,
      decision.admitted
        ? // An admitted decision carries its admission (lifecycle.ts, admission).
          [
            true,
            'Admitted',
            "The instance holds a slot of its owner's budget.",
            formatTime(decision.state.admittedAt as number),
          ]
        : [false, reason, message],
    ],
    [
      ConditionType.Scheduled,
      podStep(
        decision,
        progress.scheduledAt,
        ['PodScheduled', 'The pod is placed on a node.'],
        ['NotScheduled', 'The pod is not placed on a node yet.'],
      ),
    ],
    [
      ConditionType.ContainersStarted,
      podStep(
        decision,
        progress.containersStartedAt,
        ['ContainersStarted', 'A container of the pod is running.'],
        ['NotStarted', 'No container of the pod runs yet.'],
      ),
    ],
    [
      ConditionType.WorkloadReady,
      podStep(decision, progress.readyAt, ['PodReady', 'The pod passes its readiness probes.'], [reason, message]),
    ],
    [
      ConditionType.EndpointReady,
      endpoint
        ? [true, 'EndpointAllocated', endpoint.connection]
        : routeProblem
          ? [false, 'RouteNotAccepted', routeProblem.message]
          : [false, 'NoEndpoint', 'Traffic cannot reach the instance yet.'],
    ],
    [ConditionType.Ready, phase === Phase.Running ? [true, Reason.Ready, message] : [false, reason, message]],
    [
      ConditionType.Expired,
      ended ? [true, reason, message] : [false, 'NotExpired', 'The instance has not reached its end.'],
    ],
  ]
  // A condition the status never had holds since the Challenge was made (its first run; a new run's since now).
  const created = decision.state.newRun ? undefined : readTime(world.challenge.metadata.creationTimestamp)
  const initial = created === undefined ? now : formatTime(created)
  const result = verdicts.map(([type, [status, why, text, since]]) =>
    condition(previous, type, status, why, text, now, since, initial),
  )
  const renewal = decision.renewal
  const previousRenewal = previous.find((each) => each.type === ConditionType.RenewalAccepted)
  if (renewal)
    result.push(
      condition(previous, ConditionType.RenewalAccepted, renewal.accepted, renewal.reason, renewal.message, now),
    )
  else if (previousRenewal) result.push(previousRenewal)
  return result
}

export function buildStatus(world: World, decision: Decision, now: number): ChallengeStatus {
  const { state } = decision
  const status: ChallengeStatus = {
    phase: decision.phase,
    reason: decision.reason,
    message: decision.message,
    instanceId: world.instanceId,
    run: state.run,
    renewalsSeen: state.renewalsSeen,
    renewalsApplied: state.renewalsApplied,
    conditions: conditions(world, decision, formatTime(now)),
  }
  if (decision.endpoint) status.endpoint = decision.endpoint
  const cost = decision.definition?.cost ?? world.previous.cost
  if (cost !== undefined) status.cost = cost
  if (decision.definitionAuthor !== undefined) status.definitionAuthor = decision.definitionAuthor
  const time = (instant: number | undefined) => (instant === undefined ? undefined : formatTime(instant))
  Object.assign(
    status,
    definedTimes({
      admittedAt: time(state.admittedAt),
      startedAt: time(state.startedAt),
      lastRenewedAt: time(state.lastRenewedAt),
      expiresAt: time(decision.expiresAt),
      finishedAt: time(state.finishedAt),
    }),
  )
  // Running implies the instance's own Secret is observed (its pod runs only then): never one that merely carries its
  // name. The answer then renders it too (a Running decision always renders the workload, the flag Secret first).
  const pool = decision.pool
  if (pool !== undefined) status.pool = poolStatus(pool)
  if (decision.phase === Phase.Running) {
    // A claimed pod mounts the Secret its pool made for it (the pool makes a pod only once that Secret holds its flag).
    status.flagSecretRef = {
      name: pool?.state === ServedBy.Claimed ? poolFlagSecretName(pool.pod as string) : world.names.flagSecret,
    }
  }
  return keepProgress(world, decision, status)
}

/** status.pool: what is known of the run's serving, in the contract's field order. */
function poolStatus(pool: PoolRecord): PoolStatus {
  return {
    state: pool.state,
    run: pool.run,
    ...(pool.since === undefined ? {} : { since: formatTime(pool.since) }),
    ...(pool.pod === undefined ? {} : { pod: pool.pod }),
    ...(pool.flagUid === undefined ? {} : { flagUid: pool.flagUid }),
  }
}

/** The status without its progress conditions, and without what Metacontroller adds. */
function core(status: Record<string, unknown>): Record<string, unknown> {
  const { observedGeneration: _generation, conditions, ...rest } = status
  return {
    ...rest,
    conditions: Array.isArray(conditions)
      ? conditions.filter((each) => !PROGRESS.has(String(record(each)?.type)))
      : conditions,
  }
}

/** When nothing but the progress conditions would change, the previous ones stay: no write for a pod's step. */
function keepProgress(world: World, decision: Decision, status: ChallengeStatus): ChallengeStatus {
  const raw = record(world.challenge.status)
  if (decision.state.newRun || raw === undefined || !sameJson(core(status), core(raw))) return status
  const kept = new Map(world.previous.conditions.map((each) => [each.type, each]))
  return {
    ...status,
    conditions: status.conditions.flatMap((each) => {
      if (!PROGRESS.has(each.type)) return [each]
      const previous = kept.get(each.type)
      return previous === undefined ? [] : [previous]
    }),
  }
}

/** Deep equality of JSON values, key order aside (the API server stores objects with their keys sorted). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (
    typeof a !== 'object' ||
    typeof b !== 'object' ||
    a === null ||
    b === null ||
    Array.isArray(a) !== Array.isArray(b)
  )
    return false
  if (Array.isArray(a))
    return a.length === (b as unknown[]).length && a.every((each, index) => sameJson(each, (b as unknown[])[index]))
  const left = Object.entries(a).filter(([, value]) => value !== undefined)
  const right = Object.entries(b).filter(([, value]) => value !== undefined)
  return (
    left.length === right.length && left.every(([key, value]) => sameJson(value, (b as Record<string, unknown>)[key]))
  )
}
