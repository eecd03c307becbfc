/**
 * A renewal request (`spec.renewals > status.renewalsSeen`) is acted on exactly once, whatever the decision: it is
 * accepted only while Running, below maxRenewals and when it can still extend the instance before the hard end (the
 * earliest of spec.deadline and availableUntil); it then runs for the Challenge's own lifetime (spec.lifetimeSeconds,
 * else the definition's) from now.
 */
import { Phase } from '../contract/api.js'
import type { Decision, ObservedContext, RunContext } from './decision-types.js'
import { earliest, formatTime } from './time.js'

/** `started`: what the last rule knew, when it decided (only it decides Running); undefined after an earlier rule. */
export function applyRenewal(run: RunContext, decision: Decision, started?: ObservedContext): Decision {
  const requested = run.world.challenge.spec.renewals ?? 0
  const state = decision.state
  if (requested <= state.renewalsSeen) return decision
  state.renewalsSeen = requested
  const reject = (reason: string, message: string): Decision => ({
    ...decision,
    renewal: { accepted: false, reason, message },
  })
  if (decision.phase !== Phase.Running || started === undefined)
    return reject('NotRunning', 'Only a running instance can be renewed.')
  const { definition, hardEnd, lifetimeMs, now } = started
  if (state.renewalsApplied >= definition.maxRenewals)
    return reject('MaxRenewalsReached', `The instance was already renewed ${definition.maxRenewals} times.`)
  if (hardEnd !== undefined && (decision.expiresAt as number) >= hardEnd) {
    return reject('PastDeadline', 'The instance already runs until the challenge deadline.')
  }
  const expiresAt = earliest(now + lifetimeMs, hardEnd) as number
  state.lastRenewedAt = now
  state.renewalsApplied += 1
  return {
    ...decision,
    expiresAt,
    message: `The instance is running until ${formatTime(expiresAt)}.`,
    nextDeadline: expiresAt,
    renewal: {
      accepted: true,
      reason: 'Renewed',
      message: `Renewal ${state.renewalsApplied} of ${definition.maxRenewals} accepted.`,
    },
  }
}
