/**
 * The process: reads the configuration (a bad value stops the start, naming the variable), builds the app,
 * listens, and shuts down gracefully: on SIGTERM readiness fails first, in-flight calls drain, exit 0.
 */
import closeWithGrace from 'close-with-grace'
import { setTimeout as sleep } from 'node:timers/promises'
import { ConfigError, loadConfig, type Config } from './config.js'
import { buildApp } from './http/app.js'

/** Time for the endpoints controller to take this pod out of the Service after readiness fails. */
const READINESS_DRAIN_MS = Number(process.env.SHUTDOWN_DRAIN_MS ?? 5000)

function readConfig(): Config {
  try {
    return loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`challenge-hooks: invalid configuration: ${error.message}\n`)
      process.exit(78) // EX_CONFIG
    }
    throw error
  }
}

const config = readConfig()
const app = await buildApp(config)

if (config.flagSecretIsDevelopmentDefault) {
  app.log.warn('FLAG_SECRET is not set: using the development secret; flags are guessable. Set FLAG_SECRET.')
}
if (config.hookToken === undefined) {
  app.log.warn('HOOK_TOKEN is not set: anyone who can reach the hook can call it.')
}

closeWithGrace({ delay: READINESS_DRAIN_MS + 15000, logger: false }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'closing after an unexpected error')
  app.log.info({ signal }, 'shutting down: readiness fails now, then in-flight calls drain')
  app.markClosing()
  await sleep(READINESS_DRAIN_MS)
  await app.close()
  app.log.info('closed')
})

await app.listen({ port: config.port, host: config.host })
