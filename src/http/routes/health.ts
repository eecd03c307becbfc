import type { FastifyInstance } from 'fastify'
import { renderMetrics, type HookMetrics } from '../metrics.js'
import { errorBody } from '../errors.js'

export interface HealthOptions {
  metrics: HookMetrics
  state: { closing: boolean }
}

/** Liveness, readiness (fails once shutdown begins) and Prometheus metrics; never behind the bearer token. */
export function registerHealthRoutes(app: FastifyInstance, { metrics, state }: HealthOptions): void {
  const render = renderMetrics(metrics.registry)
  app.get('/healthz', async () => ({ status: 'ok' }))
  app.get('/readyz', async (_request, reply) => {
    if (state.closing) return reply.code(503).send(errorBody(503, 'shutting down'))
    return { status: 'ready' }
  })
  app.get('/metrics', async (_request, reply) => {
    const text = await render()
    return reply.header('content-type', metrics.registry.contentType).send(text)
  })
}
