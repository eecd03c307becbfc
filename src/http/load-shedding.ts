/**
 * Load shedding of the hook calls. Metacontroller re-queues a parent answered 429 with an integer Retry-After
 * (no error event), so a call refused early costs a retry one second later and nothing else.
 *
 * Event-loop delay, MAX_EVENT_LOOP_DELAY_MS (0 turns both off), measured two ways:
 * - within the current turn of the loop: the loop runs every ready connection's callbacks back to back, and
 *   400 connections whose calls all arrived at once would be answered in one turn of seconds, while probes and
 *   timers wait. Once the calls answered in this turn have taken the budget, the rest are refused;
 * - across turns (@fastify/under-pressure, sampled every PRESSURE_SAMPLE_INTERVAL_MS): while the loop runs late
 *   (garbage collection, long calls), every new call is refused.
 * Both refuse before the body is read, and again once it is in (a large body may take several turns to arrive).
 *
 * In-flight cap, MAX_IN_FLIGHT: calls whose body has arrived and whose answer is not finished. A call counts only
 * once its body is in (preValidation), so uploads that trickle in never hold a slot (REQUEST_TIMEOUT_MS ends
 * them); a full cap also refuses before the body is read.
 *
 * The refusal comes first among the hook routes' hooks, before the bearer token is checked: it costs no hashing
 * and tells nothing.
 */
import underPressure from '@fastify/under-pressure'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../config.js'
import { errorBody } from './errors.js'
import type { HookMetrics } from './metrics.js'

/** Seconds Metacontroller waits before retrying a parent we shed (it honours an integer Retry-After). */
export const RETRY_AFTER_SECONDS = 1
/** How often under-pressure reads the event-loop delay. */
export const PRESSURE_SAMPLE_INTERVAL_MS = 100
/** At most one "overloaded" log line per this many ms, with the count refused since the last one. */
export const SHED_LOG_INTERVAL_MS = 1000

export interface SheddingOptions {
  config: Config
  metrics: HookMetrics
}

/**
 * Milliseconds since the first hook call of the current turn of the event loop was seen. The turn ends with its
 * poll phase, where every ready connection's callbacks run; a setImmediate callback runs right after it.
 */
export function turnClock(now: () => number = () => performance.now()): () => number {
  let started: number | undefined
  return () => {
    const at = now()
    if (started === undefined) {
      started = at
      setImmediate(() => {
        started = undefined
      })
    }
    return at - started
  }
}

export type Refuse = (request: FastifyRequest, reply: FastifyReply, cause: string, message: string) => void

/**
 * under-pressure's pressureHandler. Infinity means no tick of its delay monitor in the last interval: the loop was
 * busy throughout (as while the process starts). That is no reading, and the call goes on; the next reading, an
 * interval later, carries the delay itself.
 */
export function onPressure(refuse: Refuse) {
  return (request: FastifyRequest, reply: FastifyReply, type: string, value: number | undefined): void => {
    if (value === Number.POSITIVE_INFINITY) return
    refuse(request, reply, type, `The event loop runs ${Math.round(value as number)} ms late`)
  }
}

/** Logs a burst of refusals as one line per SHED_LOG_INTERVAL_MS, not one per call. */
function shedLog(): (request: FastifyRequest, cause: string, message: string) => void {
  let last = Number.NEGATIVE_INFINITY
  let refused = 0
  return (request, cause, message) => {
    refused += 1
    const now = performance.now()
    if (now - last < SHED_LOG_INTERVAL_MS) return
    request.log.warn({ cause, refused }, `overloaded: ${message}`)
    last = now
    refused = 0
  }
}

export async function registerLoadShedding(hooks: FastifyInstance, { config, metrics }: SheddingOptions): Promise<void> {
  const log = shedLog()
  const refuse: Refuse = (request, reply, cause, message) => {
    metrics.rejected.inc({ cause })
    log(request, cause, message)
    reply
      .code(429)
      .header('retry-after', String(RETRY_AFTER_SECONDS))
      .send(errorBody(429, `${message}; retry after ${RETRY_AFTER_SECONDS} s.`))
  }

  const maxDelay = config.maxEventLoopDelayMs
  // Awaited, so its onRequest hook comes before every hook added below and by the hook routes.
  await hooks.register(underPressure, {
    maxEventLoopDelay: maxDelay,
    sampleInterval: PRESSURE_SAMPLE_INTERVAL_MS,
    pressureHandler: onPressure(refuse),
  })

  const turn = turnClock()
  const inFlight = new Set<FastifyRequest>()
  /** Refuses the call (and answers it) when this turn is over budget or the cap is full. */
  const refused = (request: FastifyRequest, reply: FastifyReply): boolean => {
    const spent = turn()
    if (maxDelay > 0 && spent > maxDelay) {
      refuse(request, reply, 'eventLoopDelay', `This turn of the event loop has run ${Math.round(spent)} ms`)
      return true
    }
    if (inFlight.size < config.maxInFlight) return false
    refuse(request, reply, 'overloaded', `More than ${config.maxInFlight} hook calls in flight`)
    return true
  }
  hooks.addHook('onRequest', (request, reply, done) => {
    if (!refused(request, reply)) done()
  })
  hooks.addHook('preValidation', (request, reply, done) => {
    if (refused(request, reply)) return
    inFlight.add(request)
    metrics.inFlight.set(inFlight.size)
    // 'close' comes once the answer is sent, and also when the client goes away before it (when Fastify's
    // onResponse never comes, and onRequestAbort neither once the body is in).
    reply.raw.once('close', () => {
      inFlight.delete(request)
      metrics.inFlight.set(inFlight.size)
    })
    done()
  })
}
