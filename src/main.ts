/**
 * The process around the app: reads the configuration (a bad value stops the start with exit code 78 and a
 * message naming the variable), builds the app and listens. On shutdown readiness fails first, the Service gets
 * SHUTDOWN_DRAIN_MS to stop sending traffic, in-flight calls finish, and the process exits 0.
 *
 * Everything the process touches (environment, stderr, exit, timers, signals) is passed in, so tests run the
 * whole sequence in-process; src/server.ts passes the real ones.
 */
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import { loadConfig, type Config } from './config.js'
import { buildApp } from './http/app.js'

/** sysexits.h EX_CONFIG: the configuration is wrong; restarting will not help. */
export const EX_CONFIG = 78

export interface ShutdownCause {
  signal?: string
  err?: Error
}

export interface ProcessPorts {
  env: Record<string, string | undefined>
  /** Where a configuration error goes (no logger exists yet). */
  stderr: { write(text: string): unknown }
  exit(code: number): void
  /** Waits while readiness fails before closing (production: a timer). */
  drain(ms: number): Promise<void>
  /** Arranges for `shutdown` to run on SIGTERM / SIGINT / a fatal error (production: close-with-grace). */
  onShutdown(shutdown: (cause: ShutdownCause) => Promise<void>, config: Config): void
  /** pino options; by default the configuration's (level, redaction). */
  logger?: FastifyServerOptions['logger']
}

/** Starts the server; undefined when it could not (the exit code was given to `ports.exit`). */
export async function start(ports: ProcessPorts): Promise<FastifyInstance | undefined> {
  let config: Config
  try {
    config = loadConfig(ports.env)
  } catch (error) {
    // loadConfig throws only ConfigError, whose message starts with the variable's name.
    ports.stderr.write(`challenge-hooks: invalid configuration: ${(error as Error).message}\n`)
    ports.exit(EX_CONFIG)
    return undefined
  }

  const app = await buildApp(config, { logger: ports.logger })
  if (config.flagSecretIsDevelopmentDefault) {
    app.log.warn('FLAG_SECRET is not set: using the development secret; flags are guessable. Set FLAG_SECRET.')
  }
  if (config.hookToken === undefined) {
    app.log.warn('HOOK_TOKEN is not set: anyone who can reach the hook can call it.')
  }

  ports.onShutdown(async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'closing after an unexpected error')
    app.log.info({ signal }, 'shutting down: readiness fails now, then in-flight calls drain')
    app.markClosing()
    await ports.drain(config.shutdownDrainMs)
    await app.close()
    app.log.info('closed')
    ports.exit(err ? 1 : 0)
  }, config)

  try {
    await app.listen({ port: config.port, host: config.host })
  } catch (err) {
    app.log.error({ err }, `cannot listen on ${config.host}:${config.port}`)
    await app.close()
    ports.exit(1)
    return undefined
  }
  return app
}
