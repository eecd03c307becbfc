/**
 * The gateway's HTTP shell: builds the Fastify app for a configuration and its ports (the API server client, the
 * platforms, the clock) and nothing else; src/gateway-server.ts is the process. The app validates, authenticates
 * (./identity.ts), sheds (body limit, per-owner rate limits, CORS allow-list) and delegates to ./instances.ts.
 */
import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifySchemaValidationError,
  type FastifyServerOptions,
} from 'fastify'
import cors from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import swagger from '@fastify/swagger'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { GatewayConfig } from '../config/config-gateway.js'
import type { FlagCheck } from '../challenge/flag-check.js'
import type { Caller, Platform } from './identity.js'
import { OWNER_HEADER } from './identity.js'
import { gatewayCache } from './cache.js'
import { GatewayError, instances } from './instances.js'
import type { Json, Kube } from './kube.js'
import { ownerText } from './names.js'
import { gatewayRoutes } from './routes.js'
import { playerPageRoute } from './page/page.js'

export interface GatewayPorts {
  kube: Kube
  platforms: readonly Platform[]
  now?: () => Date
  /** The hook server's flag check (./flag-client.ts); undefined: FLAG_VERIFY_URL is not set. */
  checkFlag?: (body: Json) => Promise<FlagCheck>
  logger?: FastifyServerOptions['logger']
}

/** Redacted at every level: credentials, and a submitted flag should a body ever be logged. */
export const GATEWAY_REDACTED = ['req.headers.authorization', 'headers.authorization', 'flag', '*.flag']

const errorBody = (statusCode: number, message: string) => ({ error: STATUS_CODES[statusCode] as string, message })

export async function buildGatewayApp(config: GatewayConfig, ports: GatewayPorts): Promise<FastifyInstance> {
  const now = ports.now ?? (() => new Date())
  const app = Fastify({
    logger: ports.logger ?? { level: config.logLevel, redact: { paths: GATEWAY_REDACTED, censor: '[redacted]' } },
    bodyLimit: config.bodyLimit,
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    forceCloseConnections: true,
    // Fastify's defaults would drop a field it does not know and turn 1 into "1": a platform's mistake would pass
    // unseen. A body is taken as sent, or refused naming the field.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false } },
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof GatewayError)
      return reply.code(error.statusCode).headers(error.headers).send(errorBody(error.statusCode, error.message))
    if (error.validation) {
      const first = error.validation[0] as FastifySchemaValidationError
      const where = `${error.validationContext}${first.instancePath.replaceAll('/', '.')}`
      return reply.code(400).send(errorBody(400, `${where} ${first.message}`))
    }
    const statusCode =
      error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500
    if (statusCode === 500) {
      request.log.error({ err: error }, 'request failed')
      return reply.code(500).send(errorBody(500, 'Internal Server Error'))
    }
    return reply.code(statusCode).send(errorBody(statusCode, error.message))
  })
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send(errorBody(404, `${request.method} ${request.url.split('?')[0]} is not a route of this gateway`)),
  )

  await app.register(cors, {
    origin: config.corsOrigins.length === 0 ? false : config.corsOrigins,
    methods: ['GET', 'PUT', 'POST', 'DELETE'],
    allowedHeaders: ['authorization', 'content-type', OWNER_HEADER, 'last-event-id'],
    maxAge: 600,
  })
  await app.register(rateLimit, {
    global: false,
    // After authentication: the key is the owner the credentials act for (the platform's own calls: the platform).
    hook: 'preHandler',
    keyGenerator: (request) => {
      // Every rate-limited route is behind authentication (onRequest), so the caller is known here.
      const caller = request.caller as Caller
      return `${caller.platform.name}/${caller.owner === undefined ? '' : ownerText(caller.owner)}`
    },
    errorResponseBuilder: (_request, context) => ({
      statusCode: 429,
      error: 'Too Many Requests',
      message: `At most ${context.max} changes a minute per owner; try again in ${Math.ceil(context.ttl / 1000)} s.`,
    }),
  })
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'challenge-gateway', version: 'v1', description: 'docs/gateway-api.md' },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'A platform key, or a token the platform minted' },
        },
      },
      security: [{ bearer: [] }],
    },
  })

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  // Outside /v1's authentication: the page holds no data; its script calls /v1 with the player's token.
  await app.register(playerPageRoute, { origins: config.corsOrigins })
  const cache = gatewayCache(ports.kube, {
    onFailure: (path, error) =>
      app.log.warn({ err: error, path }, 'the shared watch failed: reads go to the API server until it starts again'),
  })
  app.addHook('onClose', async () => cache.stop())
  const operations = instances({
    kube: ports.kube,
    cache,
    ownerBudget: config.ownerBudget,
    retryAfterSeconds: config.retryAfterSeconds,
    now,
    checkFlag: ports.checkFlag,
  })
  await app.register(gatewayRoutes, {
    operations,
    cache,
    platforms: ports.platforms,
    audience: config.audience,
    rateLimit: config.rateLimit,
    heartbeatSeconds: config.heartbeatSeconds,
    retryAfterSeconds: config.retryAfterSeconds,
    now,
  })
  return app
}
