/**
 * How a rule of the lifecycle (lifecycle.ts, running.ts) decides: it ends the run (finish), holds the instance on a
 * problem of the world that is re-checked at every sync (hold), or builds on the plain decision of an outcome
 * (base); and the next deadline among those the rules gathered, when the hook must look again. A rule either only
 * checks (a decision or undefined) or also learns (a decision or the next stage of the context, decision-types.ts).
 */
import { Phase } from '../contract/api.js'
import type { AnyContext, Decision, Outcome, Progress, RunContext } from './decision-types.js'
import { earliest } from './time.js'
import { carriedRecord, recordOnly } from './pool-serving.js'

/** A rule that only checks: a decision, or undefined to let the next rule decide. */
export type Rule<Context> = (context: Context) => Decision | undefined

/** A rule that learns: a decision, or the next stage of the context for the rules after it. */
export type Step<Context, Next> = (context: Context) => Decision | Next

/** Tells a rule's decision from the next stage of the context (only a decision carries a phase). */
export function isDecision<Next extends RunContext>(result: Decision | Next): result is Decision {
  return 'phase' in result
}

/** The stage's checks in order, then its step: the first decision, or the next stage. */
export function advance<Context, Next>(
  context: Context,
  checks: readonly Rule<Context>[],
  step: Step<Context, Next>,
): Decision | Next {
  for (const check of checks) {
    const decision = check(context)
    if (decision !== undefined) return decision
  }
  return step(context)
}

const NO_PROGRESS: Progress = { scheduledAt: undefined, containersStartedAt: undefined, readyAt: undefined }

export function base(context: AnyContext, outcome: Outcome): Decision {
  return {
    phase: outcome.phase,
    reason: outcome.reason,
    message: outcome.message,
    state: context.state,
    workload: false,
    pod: false,
    admitted: false,
    definition: context.definition,
    definitionAuthor: context.definitionAuthor ?? context.world.previous.definitionAuthor,
    flagData: undefined,
    endpoint: undefined,
    routeProblem: undefined,
    expiresAt: undefined,
    progress: NO_PROGRESS,
    renewal: undefined,
    pool: recordOnly(carriedRecord(context.world.previous.pool, context.state.run, false)),
    nextDeadline: undefined,
  }
}

/** Ends the run: the finish time is recorded once and the workload is torn down. */
export function finish(context: AnyContext, outcome: Outcome): Decision {
  context.state.finishedAt ??= context.now
  const decision = base(context, outcome)
  decision.pool = recordOnly(carriedRecord(context.world.previous.pool, context.state.run, true))
  return decision
}

/**
 * A condition of the world (not of the run): re-checked on every sync, so fixing it recovers. The instance gives
 * up its budget slot meanwhile (its siblings see it as not admitted) and is admitted again later.
 */
export function hold(context: AnyContext, outcome: Outcome, wakeAt?: number): Decision {
  context.state.admittedAt = undefined
  const decision = base(context, outcome)
  if (outcome.phase === Phase.Pending) decision.nextDeadline = wakeAt
  return decision
}

/** The instants among the gathered deadlines still ahead, the earliest. */
export function nextDeadline(context: RunContext, ...more: (number | undefined)[]): number | undefined {
  return earliest(
    ...[...context.deadlines, ...more].filter((instant) => instant !== undefined && instant > context.now),
  )
}
