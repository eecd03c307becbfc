/**
 * POST /sync, /finalize, /customize. Each handler hands the validated request to a pure hook and sends its
 * answer; the surrounding hooks authenticate (before the body is read), shed load, time and log.
 */
import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { customize, finalize, sync } from '../../challenge/hooks.js'
import type { Config } from '../../config.js'
import {
  CustomizeRequestSchema,
  CustomizeResponseSchema,
  ErrorBodySchema,
  SyncRequestSchema,
  SyncResponseSchema,
  type CustomizeRequest,
  type SyncRequest,
} from '../../protocol.js'
import { requireBearer } from '../auth.js'
import { errorBody } from '../errors.js'
import { reasonLabel, type HookMetrics } from '../metrics.js'

export interface HookRouteOptions {
  config: Config
  metrics: HookMetrics
  now: () => Date
}

/** What a handler decided, for the one log line and the metrics of the call. */
interface HookOutcome {
  /** Cleared once the call left the in-flight count (response sent or client gone). */
  inFlight: boolean
  parent: string
  phase?: string
  reason?: string
  children?: number
}

declare module 'fastify' {
  interface FastifyRequest {
    hookOutcome: HookOutcome | undefined
  }
}

/** Seconds Metacontroller waits before retrying a parent we shed (it honours an integer Retry-After). */
export const RETRY_AFTER_SECONDS = 1

/** A strong validator over the exact bytes: the same answer always has the same ETag. */
export function etagOf(body: string): string {
  return `"${createHash('sha256').update(body).digest('base64url')}"`
}

function ifNoneMatch(request: FastifyRequest): string[] {
  const header = request.headers['if-none-match']
  return header === undefined ? [] : header.split(',').map((tag) => tag.trim())
}

/** Serialises once (for the ETag), answers 304 when Metacontroller already holds these bytes. */
function sendAnswer(request: FastifyRequest, reply: FastifyReply, answer: object): FastifyReply {
  const body = JSON.stringify(answer)
  const etag = etagOf(body)
  reply.header('etag', etag)
  if (ifNoneMatch(request).includes(etag)) return reply.code(304).send()
  return reply.code(200).type('application/json; charset=utf-8').send(body)
}

function parentName(parent: { metadata: { namespace: string; name: string } }): string {
  return `${parent.metadata.namespace}/${parent.metadata.name}`
}

const errorResponses = { 400: ErrorBodySchema, 401: ErrorBodySchema, 413: ErrorBodySchema, 429: ErrorBodySchema }

export function registerHookRoutes(app: FastifyInstance, { config, metrics, now }: HookRouteOptions): void {
  const typed = app.withTypeProvider<TypeBoxTypeProvider>()
  let inFlight = 0
  typed.decorateRequest('hookOutcome', undefined)

  typed.register(async (hooks) => {
    if (config.hookToken !== undefined) {
      const checkBearer = requireBearer(config.hookToken)
      hooks.addHook('onRequest', async (request, reply) => {
        await checkBearer(request, reply)
        if (reply.sent) metrics.rejected.inc({ cause: 'unauthorized' })
      })
    }
    // Shed load before reading the body: 429 with an integer Retry-After re-queues the parent in Metacontroller.
    hooks.addHook('onRequest', async (request, reply) => {
      if (inFlight >= config.maxInFlight) {
        metrics.rejected.inc({ cause: 'overloaded' })
        request.log.warn({ inFlight }, 'overloaded: asking Metacontroller to retry later')
        await reply
          .code(429)
          .header('retry-after', String(RETRY_AFTER_SECONDS))
          .send(errorBody(429, `More than ${config.maxInFlight} hook calls in flight; retry after ${RETRY_AFTER_SECONDS} s.`))
        return
      }
      inFlight += 1
      metrics.inFlight.set(inFlight)
      request.hookOutcome = { inFlight: true, parent: '' }
    })
    const leave = (outcome: HookOutcome) => {
      if (!outcome.inFlight) return
      outcome.inFlight = false
      inFlight -= 1
      metrics.inFlight.set(inFlight)
    }
    hooks.addHook('onRequestAbort', async (request) => {
      if (request.hookOutcome) leave(request.hookOutcome)
    })
    hooks.addHook('onResponse', async (request, reply) => {
      const outcome = request.hookOutcome
      if (outcome === undefined) return
      leave(outcome)
      const hook = request.routeOptions.url?.slice(1) ?? 'unknown'
      const seconds = reply.elapsedTime / 1000
      metrics.hookDuration.observe({ hook, code: String(reply.statusCode) }, seconds)
      const size = Number(request.headers['content-length'])
      if (Number.isFinite(size)) metrics.requestSize.observe({ hook }, size)
      if (outcome.phase !== undefined) {
        metrics.answers.inc({ hook, phase: outcome.phase, reason: reasonLabel(outcome.reason ?? '') })
      }
      request.log.info(
        {
          hook,
          parent: outcome.parent || undefined,
          phase: outcome.phase,
          reason: outcome.reason,
          children: outcome.children,
          statusCode: reply.statusCode,
          durationMs: Math.round(reply.elapsedTime * 100) / 100,
        },
        'hook answered',
      )
    })

    const answerSync = (run: typeof sync) =>
      async function handle(request: FastifyRequest<{ Body: SyncRequest }>, reply: FastifyReply) {
        const answer = run(request.body, config, now())
        const outcome = request.hookOutcome as HookOutcome
        outcome.parent = parentName(request.body.parent)
        outcome.phase = String(answer.status.phase)
        outcome.reason = String(answer.status.reason)
        outcome.children = answer.children.length
        return sendAnswer(request, reply, answer)
      }

    const syncSchema = { body: SyncRequestSchema, response: { 200: SyncResponseSchema, ...errorResponses } }
    hooks.post('/sync', { schema: syncSchema }, answerSync(sync))
    hooks.post('/finalize', { schema: syncSchema }, answerSync(finalize))
    hooks.post(
      '/customize',
      { schema: { body: CustomizeRequestSchema, response: { 200: CustomizeResponseSchema, ...errorResponses } } },
      async (request: FastifyRequest<{ Body: CustomizeRequest }>, reply) => {
        ;(request.hookOutcome as HookOutcome).parent = parentName(request.body.parent)
        return sendAnswer(request, reply, customize(request.body))
      },
    )
  })
}
