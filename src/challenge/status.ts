/**
 * The Challenge status: reading the previous one (our own last answer, carried forward because Metacontroller
 * replaces the whole status with each answer) and writing the next. Conditions keep their
 * `lastTransitionTime` unless their status flips, so an unchanged world yields a byte-identical status.
 */
import type { ConditionType, Phase } from '../contract/api.js'
import { count, record, text } from './untrusted.js'
import { readTime } from './time.js'
import { readPoolRecord, type PoolRecord } from './pool-serving.js'

export interface Condition {
  type: ConditionType
  status: 'True' | 'False' | 'Unknown'
  reason: string
  message: string
  lastTransitionTime: string
}

export interface Endpoint {
  type: string
  host: string
  port: number
  url?: string
  connection: string
}

/** What the hook carries from one sync to the next; everything else is recomputed. */
export interface PreviousStatus {
  phase: Phase | undefined
  reason: string | undefined
  message: string
  admittedAt: string | undefined
  startedAt: string | undefined
  lastRenewedAt: string | undefined
  finishedAt: string | undefined
  renewalsSeen: number
  renewalsApplied: number
  run: number
  /** Carried forward by the syncs that do not read the definition (an ended instance), so the status stays still. */
  cost: number | undefined
  /** The author of the definition the instance was first synced with ('' for none); undefined when never recorded. */
  definitionAuthor: string | undefined
  /** How the run is served by its definition's warm pool (pool-serving.ts); undefined without a record. */
  pool: PoolRecord | undefined
  conditions: Condition[]
}

/** status.pool as written (docs/api.md#warm-pools). */
export type PoolStatus = { state: string; run: number; since?: string; pod?: string; flagUid?: string }

/** A type, not an interface: it is then assignable to the answer's open `Record<string, unknown>` as it is. */
export type ChallengeStatus = {
  phase: Phase
  reason: string
  message: string
  instanceId: string
  endpoint?: Endpoint
  run: number
  admittedAt?: string
  startedAt?: string
  lastRenewedAt?: string
  expiresAt?: string
  finishedAt?: string
  renewalsSeen: number
  renewalsApplied: number
  flagSecretRef?: { name: string }
  /** The definition's cost, written at every sync that knows it: the owner's other instances read it for the budget. */
  cost?: number
  /** The definition's author the instance runs with ('' when it names none): another one stops it (lifecycle.ts). */
  definitionAuthor?: string
  pool?: PoolStatus
  conditions: Condition[]
}

const PHASES = new Set(['Pending', 'Running', 'Error', 'Deleted', 'Terminating'])
const CONDITION_STATUSES = new Set(['True', 'False', 'Unknown'])

/** A timestamp we wrote; anything else is treated as absent rather than trusted (and never copied on). */
function time(value: unknown): string | undefined {
  return readTime(value) === undefined ? undefined : (value as string)
}

function readCondition(value: unknown): Condition | undefined {
  const raw = record(value) ?? {}
  const type = text(raw.type)
  const status = text(raw.status)
  const lastTransitionTime = time(raw.lastTransitionTime)
  if (type === undefined || status === undefined || !CONDITION_STATUSES.has(status) || !lastTransitionTime) {
    return undefined
  }
  return {
    type: type as ConditionType,
    status: status as Condition['status'],
    reason: text(raw.reason) ?? '',
    message: typeof raw.message === 'string' ? raw.message : '',
    lastTransitionTime,
  }
}

export function readPreviousStatus(value: unknown): PreviousStatus {
  const raw = record(value) ?? {}
  const phase = text(raw.phase)
  return {
    phase: phase !== undefined && PHASES.has(phase) ? (phase as Phase) : undefined,
    reason: text(raw.reason),
    message: text(raw.message) ?? '',
    admittedAt: time(raw.admittedAt),
    startedAt: time(raw.startedAt),
    lastRenewedAt: time(raw.lastRenewedAt),
    finishedAt: time(raw.finishedAt),
    renewalsSeen: count(raw.renewalsSeen) ?? 0,
    renewalsApplied: count(raw.renewalsApplied) ?? 0,
    run: count(raw.run) ?? 0,
    cost:
      typeof raw.cost === 'number' && Number.isInteger(raw.cost) && raw.cost >= 0 && raw.cost <= 100
        ? raw.cost
        : undefined,
    // The empty string is a value here (a definition that names no author), not an absence.
    definitionAuthor: typeof raw.definitionAuthor === 'string' ? raw.definitionAuthor : undefined,
    pool: readPoolRecord(raw.pool),
    conditions: Array.isArray(raw.conditions)
      ? raw.conditions.map(readCondition).filter((condition) => condition !== undefined)
      : [],
  }
}

/**
 * A condition as of `now`: its transition time moves only when its status differs from the previous one's.
 * Reason and message follow the truth without counting as a transition. A condition that reports an instant (the
 * admission, the pod's own steps) takes that instant, whatever the previous status said, and one the previous
 * status lacks holds since `initial` (the Challenge's creation, for its first run): a view of the Challenge that lags
 * its last write then gives the same condition as a fresh one (docs/api.md, "The Service records the run's
 * instants").
 */
export function condition(
  previous: readonly Condition[],
  type: ConditionType,
  status: boolean,
  reason: string,
  message: string,
  now: string,
  instant?: string,
  initial: string = now,
): Condition {
  const value = status ? 'True' : 'False'
  const before = previous.find((candidate) => candidate.type === type)
  const transition = before === undefined ? initial : before.status === value ? before.lastTransitionTime : now
  return { type, status: value, reason, message, lastTransitionTime: instant ?? transition }
}

type TimeField = 'admittedAt' | 'startedAt' | 'lastRenewedAt' | 'expiresAt' | 'finishedAt'
const TIME_FIELDS: readonly TimeField[] = ['admittedAt', 'startedAt', 'lastRenewedAt', 'expiresAt', 'finishedAt']

/** The times that are set, in the status's field order (absent ones are left out, not written as null). */
export function definedTimes(
  source: Partial<Record<TimeField, string | undefined>>,
): Partial<Record<TimeField, string>> {
  const times: Partial<Record<TimeField, string>> = {}
  for (const field of TIME_FIELDS) {
    const value = source[field]
    if (value !== undefined) times[field] = value
  }
  return times
}
