/**
 * A renewal request (`spec.renewals > status.renewalsSeen`) is acted on exactly once, whatever the decision: it is
 * accepted only while Running, below maxRenewals and when it can still extend the instance before the hard end (the
 * earliest of spec.deadline and availableUntil); it then runs for the Challenge's own lifetime (spec.lifetimeSeconds,
 * else the definition's) from now.
 */
import { Phase } from '../contract/api.js'
import type { Context, Decision } from './decision-types.js'
import { earliest, formatTime } from './time.js'

export function applyRenewal(c: Context, decision: Decision): Decision {
  const requested = c.world.challenge.spec.renewals ?? 0
  const state = decision.state
  if (requested <= state.renewalsSeen) return decision
  state.renewalsSeen = requested
  const reject = (reason: string, message: string): Decision => ({
    ...decision,
    renewal: { accepted: false, reason, message },
  })
  const definition = decision.definition
  if (decision.phase !== Phase.Running || definition === undefined)
    return reject('NotRunning', 'Only a running instance can be renewed.')
  if (state.renewalsApplied >= definition.maxRenewals)
    return reject('MaxRenewalsReached', `The instance was already renewed ${definition.maxRenewals} times.`)
  const { hardEnd, now } = c
  if (hardEnd !== undefined && (decision.expiresAt as number) >= hardEnd) {
    return reject('PastDeadline', 'The instance already runs until the challenge deadline.')
  }
  const expiresAt = earliest(now + c.lifetimeMs, hardEnd) as number
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
