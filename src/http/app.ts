/**
 * The HTTP shell: builds the Fastify app for a configuration and nothing else (main.ts listens and handles
 * signals). Routes validate, authenticate, log and hand the request to the pure hooks in ../challenge/.
 */
import { randomUUID } from 'node:crypto'
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from '../config.js'
import { registerErrorHandlers } from './errors.js'
import { sharedValidatorCompiler } from './validation.js'
import { registerJsonBody } from './json-body.js'
import { createMetrics } from './metrics.js'
import { registerHealthRoutes } from './routes/health.js'
import { registerHookRoutes } from './routes/hooks.js'

export interface AppOptions {
  /** pino options, or false for no logs (tests). */
  logger?: FastifyServerOptions['logger']
  /** The clock the hooks see; tests inject one. */
  now?: () => Date
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

export function loggerOptions(config: Config): { level: string; redact: { paths: string[]; censor: string } } {
  return { level: config.logLevel, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }
}

export async function buildApp(config: Config, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? loggerOptions(config),
    bodyLimit: config.bodyLimit,
    genReqId: () => randomUUID(),
    // One line per hook call is logged by the hook routes, with the parent and the phase decided.
    logController: new LogController({ disableRequestLogging: true }),
    // Well inside Metacontroller's 10 s webhook timeout.
    requestTimeout: 9000,
    connectionTimeout: 9000,
    keepAliveTimeout: 5000,
    forceCloseConnections: 'idle',
    return503OnClosing: true,
  }).withTypeProvider<TypeBoxTypeProvider>()
  app.setValidatorCompiler(sharedValidatorCompiler())

  const metrics = createMetrics()
  const state = { closing: false }
  app.addHook('onClose', async () => {
    state.closing = true
  })
  registerErrorHandlers(app)
  registerJsonBody(app)
  registerHealthRoutes(app, { metrics, state })
  registerHookRoutes(app, { config, metrics, now: options.now ?? (() => new Date()) })
  app.decorate('markClosing', () => {
    state.closing = true
  })
  return app
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Makes /readyz fail, so the Service stops sending traffic before the server closes (SIGTERM). */
    markClosing(): void
  }
}
