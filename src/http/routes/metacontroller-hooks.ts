/**
 * POST /sync, /finalize, /customize, and the warm pools' /pools/sync, /pools/customize: the routes of
 * Metacontroller's hooks. Each handler hands the validated request to its pure function (../../challenge/hooks.ts,
 * ../../challenge/pool-hooks.ts) and sends the answer; the routes' Fastify hooks authenticate
 * (onRequest, before the body is read), time and log (onResponse). Load shedding's Fastify hooks
 * (../load-shedding.ts) run before them.
 */
import { hash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { customize, finalize, sync } from '../../challenge/hooks.js'
import { poolAnswer, poolCustomize } from '../../challenge/pool-hooks.js'
import type { Config } from '../../config/config.js'
import {
  CustomizeRequestSchema,
  PoolCustomizeRequestSchema,
  PoolSyncRequestSchema,
  SyncRequestSchema,
  type CustomizeRequest,
  type PoolCustomizeRequest,
  type PoolSyncRequest,
  type SyncRequest,
} from '../../contract/protocol.js'
import { requireBearer } from '../auth.js'
import { tooDeepError } from '../json-body.js'
import { recordImages, recordPool, type HookMetrics } from '../metrics.js'
import { reasonLabel } from '../reason-label.js'

export interface MetacontrollerHookOptions {
  config: Config
  metrics: HookMetrics
  now: () => Date
}

export const METACONTROLLER_HOOK_PATHS = [
  '/sync',
  '/finalize',
  '/customize',
  '/pools/sync',
  '/pools/customize',
] as const

/** What a handler decided, for the one log line and the metrics of the call. */
interface CallOutcome {
  parent: string
  /** What sync and finalize decided. */
  decided?: { phase: string; reason: string; children: number }
  /** What a pool sync decided. */
  pool?: { state: string; free: number; claimed: number; starting: number; claims: number; children: number }
}

declare module 'fastify' {
  interface FastifyRequest {
    callOutcome: CallOutcome | undefined
  }
}

/** A strong validator over the exact bytes: the same answer always has the same ETag. */
export function etagOf(body: string): string {
  return `"${hash('sha256', body, 'base64url')}"`
}

function ifNoneMatch(request: FastifyRequest): string[] {
  const header = request.headers['if-none-match']
  return header === undefined ? [] : header.split(',').map((tag) => tag.trim())
}

/** Serialises once (for the ETag), answers 304 when Metacontroller already holds these bytes. */
function sendAnswer(request: FastifyRequest, reply: FastifyReply, answer: object): FastifyReply {
  let body: string
  try {
    body = JSON.stringify(answer)
  } catch {
    // Serialising a value parsed from JSON fails only on depth: an observed child echoed back during teardown
    // nests deeper than the stack allows. Checked here, not on every body, to keep the hot path free of it.
    throw tooDeepError(request.body)
  }
  const etag = etagOf(body)
  reply.header('etag', etag)
  if (ifNoneMatch(request).includes(etag)) return reply.code(304).send()
  return reply.code(200).type('application/json; charset=utf-8').send(body)
}

function parentName(parent: { metadata: { namespace: string; name: string } }): string {
  return `${parent.metadata.namespace}/${parent.metadata.name}`
}

/** The plugin (encapsulated: the bearer token and the answer's log line and metrics are its routes' own). */
export async function metacontrollerHookRoutes(
  app: FastifyInstance,
  options: MetacontrollerHookOptions,
): Promise<void> {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>()
  routes.decorateRequest('callOutcome', undefined)
  requireHookToken(routes, options)
  measureAnswers(routes, options.metrics)
  // Answers are sent as pre-serialised bytes (see sendAnswer); protocol.ts documents their schemas.
  const syncSchema = { body: SyncRequestSchema }
  routes.post('/sync', { schema: syncSchema }, answerSync(sync, options))
  routes.post('/finalize', { schema: syncSchema }, answerSync(finalize, options))
  routes.post('/customize', { schema: { body: CustomizeRequestSchema } }, answerCustomize(options.config))
  routes.post('/pools/sync', { schema: { body: PoolSyncRequestSchema } }, answerPoolSync(options))
  routes.post('/pools/customize', { schema: { body: PoolCustomizeRequestSchema } }, answerPoolCustomize)
}

/** With HOOK_TOKEN set, a call without the bearer token (or the previous one) is answered 401 before its body. */
function requireHookToken(routes: FastifyInstance, { config, metrics }: MetacontrollerHookOptions): void {
  if (config.hookToken === undefined) return
  const previous = config.hookTokenPrevious === undefined ? [] : [config.hookTokenPrevious]
  const checkBearer = requireBearer([config.hookToken, ...previous])
  routes.addHook('onRequest', async (request, reply) => {
    await checkBearer(request, reply)
    if (reply.sent) metrics.rejected.inc({ cause: 'unauthorized' })
  })
}

/** One log line and the metrics of each answered call, from what its handler decided. */
function measureAnswers(routes: FastifyInstance, metrics: HookMetrics): void {
  routes.addHook('onRequest', async (request) => {
    request.callOutcome = { parent: '' }
  })
  routes.addHook('onResponse', async (request, reply) => {
    const outcome = request.callOutcome
    // Refused calls (401, 429) count in challenge_hooks_rejected_total, not as answers.
    if (outcome === undefined || reply.statusCode === 429) return
    const hook = (request.routeOptions.url as string).slice(1)
    const seconds = reply.elapsedTime / 1000
    metrics.hookDuration.observe({ hook, code: String(reply.statusCode) }, seconds)
    const size = Number(request.headers['content-length'])
    if (Number.isFinite(size)) metrics.requestSize.observe({ hook }, size)
    if (outcome.decided) {
      metrics.answers.inc({ hook, phase: outcome.decided.phase, reason: reasonLabel(outcome.decided.reason) })
    }
    request.log.info(
      {
        hook,
        parent: outcome.parent || undefined,
        ...outcome.decided,
        ...(outcome.pool === undefined ? {} : { pool: outcome.pool }),
        statusCode: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 100) / 100,
      },
      'hook answered',
    )
  })
}

/** The handler of /sync or /finalize: the pure hook's answer, recorded for the metrics and the log line. */
function answerSync(run: typeof sync, { config, metrics, now }: MetacontrollerHookOptions) {
  return async function handle(request: FastifyRequest<{ Body: SyncRequest }>, reply: FastifyReply) {
    const at = now()
    const answer = run(request.body, config, at)
    metrics.instances.observe(request.body, answer, at)
    const outcome = request.callOutcome as CallOutcome
    outcome.parent = parentName(request.body.parent)
    outcome.decided = {
      phase: String(answer.status.phase),
      reason: String(answer.status.reason),
      children: answer.children.length,
    }
    return sendAnswer(request, reply, answer)
  }
}

function answerCustomize(config: Config) {
  return async function handle(request: FastifyRequest<{ Body: CustomizeRequest }>, reply: FastifyReply) {
    ;(request.callOutcome as CallOutcome).parent = parentName(request.body.parent)
    return sendAnswer(request, reply, customize(request.body, config))
  }
}

/** The handler of /pools/sync: the pool's answer, its counts and claims recorded for the metrics and the log line. */
function answerPoolSync({ config, metrics, now }: MetacontrollerHookOptions) {
  return async function handle(request: FastifyRequest<{ Body: PoolSyncRequest }>, reply: FastifyReply) {
    const { parent } = request.body
    const { response, state, counts, claims, images } = poolAnswer(request.body, config, now())
    const definition = { namespace: parent.metadata.namespace, definition: parent.metadata.name }
    recordPool(metrics, definition, counts, claims)
    recordImages(metrics, definition, images)
    const outcome = request.callOutcome as CallOutcome
    outcome.parent = parentName(parent)
    outcome.pool = { state, ...counts, claims, children: response.children.length }
    return sendAnswer(request, reply, response)
  }
}

async function answerPoolCustomize(request: FastifyRequest<{ Body: PoolCustomizeRequest }>, reply: FastifyReply) {
  ;(request.callOutcome as CallOutcome).parent = parentName(request.body.parent)
  return sendAnswer(request, reply, poolCustomize(request.body))
}
