/**
 * The process around the app: reads the configuration (a bad value stops the start with exit code 78 and a
 * message naming the variable), builds the app and listens on PORT (hooks) and OPS_PORT (probes, metrics).
 *
 * Shutdown (SIGTERM): readiness fails at once and every answer carries `Connection: close`; for
 * SHUTDOWN_DRAIN_MS calls are still served while the Service stops sending traffic; then the hook port closes and
 * the calls in flight finish, or are cut at SHUTDOWN_TIMEOUT_MS after the signal (Metacontroller retries them);
 * the process exits 0.
 *
 * Everything the process touches (environment, stderr, exit, timers, signals) is passed in, so tests run the
 * whole sequence in-process; src/server.ts passes the real ones.
 */
import type { AddressInfo } from 'node:net'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import { loadConfig, type Config } from './config/config.js'
import { EX_CONFIG } from './config/config-parsers.js'
import { startupWarnings } from './config/config-warnings.js'
import { buildApp } from './http/app.js'
import { readHookTls } from './http/hook-tls.js'

export { EX_CONFIG }
/** start() exits by itself at SHUTDOWN_TIMEOUT_MS; should the shutdown hang, src/server.ts exits 1 this much later. */
export const SHUTDOWN_BACKSTOP_MS = 5000

export interface ShutdownCause {
  signal?: string
  err?: Error
}

export interface ProcessPorts {
  env: Record<string, string | undefined>
  /** Where a configuration error goes (no logger exists yet). */
  stderr: { write(text: string): unknown }
  exit(code: number): void
  /** Waits `ms` (production: a timer): the drain while readiness fails, then the deadline for calls in flight. */
  wait(ms: number): Promise<void>
  /** Arranges for `shutdown` to run on SIGTERM / SIGINT / a fatal error (production: close-with-grace). */
  onShutdown(shutdown: (cause: ShutdownCause) => Promise<void>, config: Config): void
  /** pino options; by default the configuration's (level, redaction). */
  logger?: FastifyServerOptions['logger']
}

/** Starts the server; undefined when it could not (the exit code was given to `ports.exit`). */
export async function start(ports: ProcessPorts): Promise<FastifyInstance | undefined> {
  let config: Config
  let tls: { cert: Buffer; key: Buffer } | undefined
  try {
    config = loadConfig(ports.env)
    tls = readHookTls(config)
  } catch (error) {
    // Both throw only ConfigError, whose message starts with the variable's name.
    ports.stderr.write(`challenge-hooks: invalid configuration: ${(error as Error).message}\n`)
    ports.exit(EX_CONFIG)
    return undefined
  }

  const app = await buildApp(config, { logger: ports.logger, tls })
  for (const warning of startupWarnings(config)) app.log.warn(warning)

  ports.onShutdown(async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'closing after an unexpected error')
    app.log.info({ signal }, 'shutting down: readiness fails now, then in-flight calls drain')
    app.markClosing()
    await ports.wait(config.shutdownDrainMs)
    const closed = app.close().then(() => true)
    const deadline = ports.wait(config.shutdownTimeoutMs - config.shutdownDrainMs).then(() => false)
    if (!(await Promise.race([closed, deadline]))) {
      app.log.warn('shutdown deadline (SHUTDOWN_TIMEOUT_MS): cutting the calls still in flight')
      app.server.closeAllConnections()
      app.ops.server.closeAllConnections()
      await closed
    }
    app.log.info('closed')
    ports.exit(err ? 1 : 0)
  }, config)

  for (const [server, port] of [
    [app, config.port],
    [app.ops, config.opsPort],
  ] as const) {
    try {
      await server.listen({ port, host: config.host })
    } catch (err) {
      app.log.error({ err }, `cannot listen on ${config.host}:${port}`)
      await app.close()
      ports.exit(1)
      return undefined
    }
  }
  const portOf = (server: FastifyInstance) => (server.server.address() as AddressInfo).port
  app.log.info(
    { port: portOf(app), opsPort: portOf(app.ops) },
    'serving hook calls on port, probes and metrics on opsPort',
  )
  return app
}
