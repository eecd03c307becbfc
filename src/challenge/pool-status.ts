/**
 * The definition's status.pool: its state, and the counts of the moment that state began. Every Challenge of the
 * definition relates it, so each write of the definition's status syncs all of them: the status is written again
 * only when the state (or what its message says) changes, never for a count. The live counts are metrics.
 */
import { PoolState } from '../contract/api.js'
import { formatTime } from './time.js'
import { cut, field, record } from './untrusted.js'

export interface PoolCounts {
  /** Free and ready: claimable now. */
  free: number
  claimed: number
  /** Free and not ready yet, new ones included. */
  starting: number
}

export const NO_PODS: PoolCounts = { free: 0, claimed: 0, starting: 0 }

export interface PoolReport {
  state: PoolState
  /** Why the pool is Off, when the definition cannot have one. */
  message?: string
  size: number
  counts: PoolCounts
}

/** An open pool is Ready while a Challenge may wait for a pod (free or starting), Exhausted at its ceiling. */
export function openState(counts: PoolCounts): PoolState {
  return counts.free + counts.starting > 0 ? PoolState.Ready : PoolState.Exhausted
}

/** The CRD's bound on status.pool.message: a longer status would be refused, and the pool's sync with it. */
export const POOL_MESSAGE_LIMIT = 1024

/**
 * The status to answer: the parent's status.pool as it is when its state and message are unchanged (the same bytes:
 * Metacontroller writes nothing), else the new state with the counts and the time of now.
 */
export function poolStatus(previous: unknown, report: PoolReport, at: number): Record<string, unknown> {
  const message = report.message === undefined ? undefined : cut(report.message, POOL_MESSAGE_LIMIT)
  const current = record(field(previous, 'pool'))
  if (current !== undefined && current.state === report.state && current.message === message) {
    return { pool: current }
  }
  return {
    pool: {
      state: report.state,
      ...(message === undefined ? {} : { message }),
      size: report.size,
      ...report.counts,
      since: formatTime(at),
    },
  }
}
