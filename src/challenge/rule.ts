/**
 * How a rule of the lifecycle (lifecycle.ts, running.ts) decides: it ends the run (finish), holds the instance on a
 * problem of the world that is re-checked at every sync (hold), or builds on the plain decision of an outcome
 * (base); and the next deadline among those the rules gathered, when the hook must look again.
 */
import { Phase } from '../contract/api.js'
import type { Context, Decision, Outcome, Progress } from './decision-types.js'
import { earliest } from './time.js'

/** A rule: a decision, or undefined to let the next rule decide. */
export type Rule = (c: Context) => Decision | undefined

const NO_PROGRESS: Progress = { scheduledAt: undefined, containersStartedAt: undefined, readyAt: undefined }

export function base(c: Context, outcome: Outcome): Decision {
  return {
    phase: outcome.phase,
    reason: outcome.reason,
    message: outcome.message,
    state: c.state,
    workload: false,
    pod: false,
    admitted: false,
    definition: c.definition,
    definitionAuthor: c.definitionAuthor ?? c.world.previous.definitionAuthor,
    flagData: undefined,
    endpoint: undefined,
    routeProblem: undefined,
    expiresAt: undefined,
    progress: NO_PROGRESS,
    renewal: undefined,
    nextDeadline: undefined,
  }
}

/** Ends the run: the finish time is recorded once and the workload is torn down. */
export function finish(c: Context, outcome: Outcome): Decision {
  c.state.finishedAt ??= c.now
  return base(c, outcome)
}

/**
 * A condition of the world (not of the run): re-checked on every sync, so fixing it recovers. The instance gives
 * up its budget slot meanwhile (its siblings see it as not admitted) and is admitted again later.
 */
export function hold(c: Context, outcome: Outcome, wakeAt?: number): Decision {
  c.state.admittedAt = undefined
  const decision = base(c, outcome)
  if (outcome.phase === Phase.Pending) decision.nextDeadline = wakeAt
  return decision
}

/** The instants among the gathered deadlines still ahead, the earliest. */
export function nextDeadline(c: Context, ...more: (number | undefined)[]): number | undefined {
  return earliest(...[...c.deadlines, ...more].filter((instant) => instant !== undefined && instant > c.now))
}
