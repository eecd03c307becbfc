/**
 * The HTTP shell: builds the Fastify apps for a configuration and nothing else (main.ts listens and handles
 * signals). The hook app (PORT) validates, authenticates, sheds load, logs and hands the request to the pure hooks
 * in ../challenge/; the operations app (OPS_PORT, `app.ops`) answers probes and metrics.
 */
import { randomUUID } from 'node:crypto'
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import fastifyPlugin from 'fastify-plugin'
import type { Config } from '../config/config.js'
import { clientErrorHandler, errorHandlers } from './errors.js'
import { sharedValidatorCompiler } from './validation.js'
import { jsonBody } from './json-body.js'
import { serverFactory } from './http-server.js'
import { loadShedding, sheddingChecks } from './load-shedding.js'
import { createMetrics } from './metrics.js'
import { buildOpsApp } from './ops.js'
import { flagRoutes } from './routes/flags.js'
import { METACONTROLLER_HOOK_PATHS, metacontrollerHookRoutes } from './routes/metacontroller-hooks.js'

export interface AppOptions {
  /** pino options, or false for no logs (tests). */
  logger?: FastifyServerOptions['logger']
  /** The clock the hooks see; tests inject one. */
  now?: () => Date
  /** The hook port's certificate and key, read by main.ts from TLS_CERT_FILE and TLS_KEY_FILE. */
  tls?: { cert: Buffer; key: Buffer }
  /** The event loop's delay (ms) the load shedding reads; by default under-pressure's sample. Tests inject one. */
  eventLoopDelay?: () => number
}

/** Redacted at every level: the bearer token, and any flag-bearing field should one ever be logged. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'flag',
  '*.flag',
  'data.flag',
  '*.data.flag',
]

const CONNECTION_TIMEOUTS = {
  keepAliveTimeoutMs: 5000,
  /** A silent connection is closed well inside Metacontroller's 10 s webhook timeout. */
  idleTimeoutMs: 9000,
}

export function loggerOptions(config: Config): { level: string; redact: { paths: string[]; censor: string } } {
  return { level: config.logLevel, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }
}

export async function buildApp(config: Config, options: AppOptions = {}): Promise<FastifyInstance> {
  const now = options.now ?? (() => new Date())
  const metrics = createMetrics(now)
  const state = { closing: false }
  // Made before the app, whose hook port's server takes the gate. They read the sampler (the loadShedding plugin
  // below registers it) and log through the app's logger only once calls arrive.
  const shedding = sheddingChecks({
    config,
    metrics,
    state,
    hookPaths: METACONTROLLER_HOOK_PATHS,
    reading: options.eventLoopDelay ?? (() => app.memoryUsage().eventLoopDelay),
    log: () => app.log,
  })
  const servers = { requestTimeoutMs: config.requestTimeoutMs, ...CONNECTION_TIMEOUTS }
  // Only the hook port speaks TLS: the kubelet's probes and Prometheus stay on plain HTTP on the ops port.
  const hookServers = options.tls === undefined ? servers : { ...servers, tls: options.tls }
  const app = Fastify({
    logger: options.logger ?? loggerOptions(config),
    bodyLimit: config.bodyLimit,
    genReqId: () => randomUUID(),
    // One line per hook call is logged by the hook routes, with the parent and the phase decided.
    logController: new LogController({ disableRequestLogging: true }),
    serverFactory: serverFactory(hookServers, shedding.gate),
    clientErrorHandler: clientErrorHandler(() => metrics.rejected.inc({ cause: 'timeout' })),
    forceCloseConnections: 'idle',
    return503OnClosing: true,
  }).withTypeProvider<TypeBoxTypeProvider>()
  app.setValidatorCompiler(sharedValidatorCompiler())

  const ops = await buildOpsApp({ logger: options.logger === false ? undefined : app.log, metrics, state, servers })
  app.addHook('onClose', async () => {
    state.closing = true
    await ops.close()
  })
  // Every concern of the hook app is a plugin, registered in this order: the route hooks of one run before those of
  // the plugins after it (load shedding's before the hook routes' bearer token).
  await app.register(draining, { state })
  await app.register(errorHandlers)
  await app.register(jsonBody, { beforeParse: shedding.beforeParse })
  await app.register(loadShedding, { checks: shedding })
  await app.register(metacontrollerHookRoutes, { config, metrics, now })
  await app.register(flagRoutes, { config })
  app.decorate('ops', ops)
  app.decorate('markClosing', () => {
    state.closing = true
  })
  return app
}

/**
 * While draining, every answer closes its connection: Metacontroller's next call opens a new one, which the Service
 * sends to a replica that is not shutting down (not encapsulated: every route of the app).
 */
const draining = fastifyPlugin(
  async function draining(app: FastifyInstance, { state }: { state: { closing: boolean } }) {
    app.addHook('onSend', (_request, reply, payload, done) => {
      if (state.closing) reply.header('connection', 'close')
      done(null, payload)
    })
  },
  { name: 'draining', fastify: '5.x' },
)

declare module 'fastify' {
  interface FastifyInstance {
    /** The operations app: /healthz, /readyz, /metrics, listening on OPS_PORT. */
    ops: FastifyInstance
    /** Makes /readyz fail and every answer close its connection, so traffic moves away before the server closes. */
    markClosing(): void
  }
}
