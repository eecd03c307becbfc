/**
 * Load shedding of the hook calls: one set of checks (`sheddingChecks`), which app.ts makes before the hook app and
 * hands to each check point of the table: the gate to the hook port's server factory, the body check to the JSON
 * body plugin, the route hooks to the `loadShedding` plugin, which also registers the sampler of the event loop's
 * delay they read. Metacontroller re-queues a parent answered 429 with an integer Retry-After (no error event), so a
 * call refused early costs a retry one second later and nothing else.
 *
 * | point | where | checks | why there |
 * |---|---|---|---|
 * | gate | the hook port's node:http handler, after the pipelining bound (http-server.ts), before Fastify | delay | a refused call costs the parse of its headers and a 200-byte answer |
 * | body | the JSON parser, once a body is in, before it is parsed (json-body.ts) | delay | the calls let in during one turn send their bodies in the next; parsing them all (80 KB each for a Running instance) would make that turn as long as the gate kept the first one short |
 * | onRequest | the hook routes, before the bearer token | delay, then the in-flight cap | a full cap refuses before the body is read; a refusal costs no hashing and tells nothing |
 * | preValidation | the hook routes, once the body is parsed | delay, then the cap; then counts the call in flight until its answer is done | a call holds a slot only once its body is in, so uploads that trickle in never hold one (REQUEST_TIMEOUT_MS ends them) |
 *
 * Event-loop delay, MAX_EVENT_LOOP_DELAY_MS (0 turns it off), measured two ways:
 * - across turns of the loop: @fastify/under-pressure samples the loop's delay every PRESSURE_SAMPLE_INTERVAL_MS;
 * - within the current turn: the loop runs every ready connection's callbacks back to back, and 400 connections
 *   whose calls all arrived at once would be answered in one turn of seconds while probes and timers wait. Once
 *   the calls of this turn have run past the limit, the rest are refused.
 *
 * In-flight cap, MAX_IN_FLIGHT: calls whose body has arrived and whose answer is not finished.
 */
import underPressure from '@fastify/under-pressure'
import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  preValidationHookHandler,
} from 'fastify'
import fastifyPlugin from 'fastify-plugin'
import type { Config } from '../config/config.js'
import type { ErrorBody } from '../contract/protocol.js'
import { errorBody, RetryLaterError } from './errors.js'
import type { RequestGate } from './http-server.js'
import type { HookMetrics } from './metrics.js'

/** Seconds Metacontroller waits before retrying a parent we shed (it honours an integer Retry-After). */
export const RETRY_AFTER_SECONDS = 1
/** How often under-pressure reads the event-loop delay. */
export const PRESSURE_SAMPLE_INTERVAL_MS = 100
/** At most one "overloaded" log line per this many ms, with the count refused since the last one. */
export const SHED_LOG_INTERVAL_MS = 1000

export interface Refusal {
  cause: 'eventLoopDelay' | 'overloaded'
  message: string
}

/** The checks of the table above, for app.ts to hand to each check point. */
export interface SheddingChecks {
  /** For the node:http handler of the hook port: answers 429 and returns true when the call must be refused. */
  gate: RequestGate
  /** For the JSON body parser, once a hook call's body is in: the error to answer instead of parsing it. */
  beforeParse: (request: FastifyRequest) => RetryLaterError | undefined
  onRequest: onRequestHookHandler
  preValidation: preValidationHookHandler
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

/**
 * Why the loop is too late for another call, or undefined. `reading` is under-pressure's last sample: Infinity
 * there means no tick of its delay monitor in the whole interval (the loop was busy throughout, as while the
 * process starts); that is no reading, and the next one, an interval later, carries the delay itself.
 */
export function delayRefusal(maxDelayMs: number, spentThisTurn: number, reading: number): Refusal | undefined {
  if (maxDelayMs === 0) return undefined
  if (spentThisTurn > maxDelayMs) {
    return { cause: 'eventLoopDelay', message: `This turn of the event loop has run ${Math.round(spentThisTurn)} ms` }
  }
  if (reading > maxDelayMs && reading !== Number.POSITIVE_INFINITY) {
    return { cause: 'eventLoopDelay', message: `The event loop runs ${Math.round(reading)} ms late` }
  }
  return undefined
}

/** The parts of a connection's libuv handle that Node's HTTP server itself uses to stop and restart reading. */
interface ReadingHandle {
  reading: boolean
  readStop(): number
  readStart(): number
}

/**
 * Reads nothing more from a connection until the next turn of the loop. libuv reads a ready connection up to 32
 * times in one go, and a client that sends its next call the moment it reads a 429 is read again within the same
 * turn: one such connection was refused 25 times in one turn, and 400 of them made turns of 300 ms and more of
 * refusals while probes and timers waited. Held, each connection is read at most once more in the turn.
 *
 * The HTTP server reads the socket's handle directly (its parser consumes it), so `socket.pause()` stops nothing
 * once the stream is not flowing; this stops and restarts the handle as Node's server does for its own
 * back-pressure, and leaves a connection Node has paused (`_paused`: an answer the client does not read) to Node.
 */
export function holdUntilNextTurn(socket: Socket): void {
  const handle = (socket as Socket & { _handle?: Partial<ReadingHandle> | null })._handle
  if (handle?.reading !== true || typeof handle.readStop !== 'function') return
  const reading = handle as ReadingHandle
  reading.reading = false
  reading.readStop()
  setImmediate(() => {
    if (socket.destroyed || reading.reading || (socket as Socket & { _paused?: boolean })._paused) return
    reading.reading = true
    reading.readStart()
  })
}

export interface CheckOptions {
  config: Config
  metrics: HookMetrics
  /** While shutting down, the gate's answers close their connection too. */
  state: { closing: boolean }
  /** The routes shed (POST only). */
  hookPaths: readonly string[]
  /** The last reading of the loop's delay, ms: the sampler's, which the plugin registers (tests inject one). */
  reading: () => number
  /** Where the one line per burst of refusals goes: the app's logger. */
  log: () => FastifyBaseLogger
}

export function sheddingChecks({ config, metrics, state, hookPaths, reading, log }: CheckOptions): SheddingChecks {
  const paths = new Set(hookPaths)
  const turn = turnClock()
  const refuse = refusalRecorder(metrics, log)
  const inFlight = new Set<FastifyRequest>()

  const delayed = () => delayRefusal(config.maxEventLoopDelayMs, turn(), reading())
  /** The refusal due for a call now, before or after its body: delay first, then the in-flight cap. */
  const due = (): Refusal | undefined =>
    delayed() ??
    (inFlight.size < config.maxInFlight
      ? undefined
      : { cause: 'overloaded', message: `More than ${config.maxInFlight} hook calls in flight` })
  const answer = (reply: FastifyReply, refusal: Refusal) =>
    reply.code(429).header('retry-after', String(RETRY_AFTER_SECONDS)).send(refuse(refusal))
  /** The route hooks apply to the hook routes only; every other route of the app passes. */
  const isHook = (request: FastifyRequest) => paths.has(request.routeOptions.url as string)

  return {
    gate(request, response) {
      if (request.method !== 'POST' || !paths.has(request.url as string)) return false
      const refusal = delayed()
      if (refusal === undefined) return false
      answerAtGate(response, refuse(refusal), state.closing)
      holdUntilNextTurn(request.socket)
      return true
    },

    beforeParse(request) {
      if (!paths.has(request.url)) return undefined
      const refusal = delayed()
      return refusal === undefined ? undefined : new RetryLaterError(refuse(refusal), RETRY_AFTER_SECONDS)
    },

    onRequest(request, reply, done) {
      const refusal = isHook(request) ? due() : undefined
      if (refusal === undefined) done()
      else answer(reply, refusal)
    },

    preValidation(request, reply, done) {
      if (!isHook(request)) return void done()
      const refusal = due()
      if (refusal !== undefined) return void answer(reply, refusal)
      countInFlight(inFlight, metrics, request, reply)
      done()
    },
  }
}

/** Counts and logs each refusal (one line per SHED_LOG_INTERVAL_MS for a burst) and returns the body to answer. */
function refusalRecorder(metrics: HookMetrics, log: () => FastifyBaseLogger): (refusal: Refusal) => ErrorBody {
  let lastLogged = Number.NEGATIVE_INFINITY
  let refusedSinceLog = 0
  return ({ cause, message }) => {
    metrics.rejected.inc({ cause })
    refusedSinceLog += 1
    const now = performance.now()
    if (now - lastLogged >= SHED_LOG_INTERVAL_MS) {
      log().warn({ cause, refused: refusedSinceLog }, `overloaded: ${message}`)
      lastLogged = now
      refusedSinceLog = 0
    }
    return errorBody(429, `${message}; retry after ${RETRY_AFTER_SECONDS} s.`)
  }
}

/** The gate's 429, written on the node:http response before Fastify sees the request. */
function answerAtGate(response: ServerResponse, refusal: ErrorBody, closing: boolean): void {
  const body = JSON.stringify(refusal)
  response.writeHead(429, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'retry-after': String(RETRY_AFTER_SECONDS),
    ...(closing ? { connection: 'close' } : {}),
  })
  response.end(body)
}

/** Counts a call in flight from now until its answer is done. */
function countInFlight(
  inFlight: Set<FastifyRequest>,
  metrics: HookMetrics,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  inFlight.add(request)
  metrics.inFlight.set(inFlight.size)
  // 'close' comes once the answer is sent, and also when the client goes away before it (when Fastify's
  // onResponse never comes, and onRequestAbort neither once the body is in).
  reply.raw.once('close', () => {
    inFlight.delete(request)
    metrics.inFlight.set(inFlight.size)
  })
}

/**
 * The plugin: registers the sampler the checks read, then the route hooks of the table (not encapsulated: they pass
 * every route but the hook routes). app.ts hands the gate to the hook port's server factory and beforeParse to the
 * JSON body plugin.
 */
export const loadShedding = fastifyPlugin(
  async function loadShedding(app: FastifyInstance, { checks }: { checks: SheddingChecks }) {
    // Only measuring: no threshold is given to under-pressure, so it refuses nothing itself; the checks read it.
    await app.register(underPressure, { sampleInterval: PRESSURE_SAMPLE_INTERVAL_MS })
    app.addHook('onRequest', checks.onRequest)
    app.addHook('preValidation', checks.preValidation)
  },
  { name: 'load-shedding', fastify: '5.x' },
)
