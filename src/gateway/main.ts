/**
 * The gateway process around the app: reads the configuration and the platforms file (a problem stops the start
 * with exit code 78 and a message naming the variable), connects to the API server as the kubeconfig or the pod's
 * ServiceAccount says, listens, and closes on a signal. Everything it touches is passed in, so tests run it
 * in-process; src/gateway-server.ts passes the real ones.
 */
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { KubeConfig } from '@kubernetes/client-node'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import { ConfigError, EX_CONFIG } from '../config/config-parsers.js'
import { loadGatewayConfig, type GatewayConfig } from '../config/config-gateway.js'
import { buildGatewayApp } from './app.js'
import { flagChecker } from './flag-client.js'
import { loadPlatforms, type Platform } from './identity.js'
import { kubeClient } from './kube.js'

export { EX_CONFIG }
/** How long a call to the API server or the flag check may wait for its answer. */
export const UPSTREAM_TIMEOUT_MS = 10_000

export interface GatewayProcess {
  env: Record<string, string | undefined>
  stderr: { write(text: string): unknown }
  exit(code: number): void
  /** Arranges for `shutdown` to run on SIGTERM / SIGINT (production: close-with-grace). */
  onShutdown(shutdown: () => Promise<void>): void
  /** The API server's connection; by default KubeConfig's (KUBECONFIG, ~/.kube/config, or the pod's ServiceAccount). */
  kubeconfig?: KubeConfig
  logger?: FastifyServerOptions['logger']
}

export async function startGateway(ports: GatewayProcess): Promise<FastifyInstance | undefined> {
  let config: GatewayConfig
  let platforms: Platform[]
  try {
    config = loadGatewayConfig(ports.env)
    let text: string
    try {
      text = readFileSync(config.platformsFile, 'utf8')
    } catch (error) {
      throw new ConfigError(
        'GATEWAY_PLATFORMS_FILE',
        `cannot read ${config.platformsFile}: ${(error as Error).message}`,
      )
    }
    platforms = await loadPlatforms(text)
  } catch (error) {
    ports.stderr.write(`challenge-gateway: invalid configuration: ${(error as Error).message}\n`)
    ports.exit(EX_CONFIG)
    return undefined
  }
  const kubeconfig =
    ports.kubeconfig ??
    (() => {
      const loaded = new KubeConfig()
      loaded.loadFromDefault()
      return loaded
    })()
  const app = await buildGatewayApp(config, {
    kube: kubeClient(kubeconfig, UPSTREAM_TIMEOUT_MS),
    platforms,
    checkFlag:
      config.flagVerify === undefined
        ? undefined
        : flagChecker(config.flagVerify.url, config.flagVerify.token, UPSTREAM_TIMEOUT_MS),
    logger: ports.logger,
  })
  ports.onShutdown(async () => {
    app.log.info('shutting down')
    await app.close()
    ports.exit(0)
  })
  try {
    await app.listen({ port: config.port, host: config.host })
  } catch (err) {
    app.log.error({ err }, `cannot listen on ${config.host}:${config.port}`)
    await app.close()
    ports.exit(1)
    return undefined
  }
  app.log.info(
    { port: (app.server.address() as AddressInfo).port, platforms: platforms.map((platform) => platform.name) },
    'gateway serving',
  )
  return app
}
