/**
 * The operations listener (OPS_PORT): liveness, readiness and metrics, apart from the hook calls. Its own
 * socket, accept queue and connections: a flood of hook calls or of slow uploads on PORT never queues a probe
 * behind it, and the hook port's NetworkPolicy stays closed to everyone but Metacontroller. The event loop is
 * still shared; load shedding on the hook routes (./load-shedding.ts) keeps it answering.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { clientErrorHandler, errorHandlers } from './errors.js'
import type { HookMetrics } from './metrics.js'
import { serverFactory, type ServerSettings } from './http-server.js'
import { registerHealthRoutes } from './routes/health.js'

export interface OpsOptions {
  /** The hook app's logger (one pino instance per process), or undefined for no logs. */
  logger: FastifyBaseLogger | undefined
  metrics: HookMetrics
  state: { closing: boolean }
  /** The same timeouts as the hook port's. */
  servers: ServerSettings
}

export async function buildOpsApp(options: OpsOptions): Promise<FastifyInstance> {
  const ops = Fastify({
    ...(options.logger === undefined ? { logger: false } : { loggerInstance: options.logger }),
    logController: new LogController({ disableRequestLogging: true }),
    serverFactory: serverFactory(options.servers),
    clientErrorHandler: clientErrorHandler(),
    forceCloseConnections: true,
    // Probes carry no body; anything larger than a few headers is not a probe.
    bodyLimit: 1024,
  })
  await ops.register(errorHandlers)
  registerHealthRoutes(ops, options)
  return ops
}
