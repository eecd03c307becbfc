/**
 * One instance's life posted to a real app with a clock: created at 11:59:00, admitted at 12:00:00, its pod
 * scheduled at :02, a container started at :05, ready at :09, Running at :20 (ENDPOINT_SETTLE_MS after). For the
 * tests of the metrics the answers leave behind.
 */
import type { FastifyInstance } from 'fastify'
import type { SyncRequest, SyncResponse } from '../../src/contract/protocol.js'
import { challenge, observedChildren, readyPodStatus, syncRequest, webDefinition, type Json } from './world.js'
import { T0 } from './instant.js'

export const CREATED = '2026-11-22T11:59:00Z'
export const POD_TIMES = {
  scheduled: '2026-11-22T12:00:02Z',
  started: '2026-11-22T12:00:05Z',
  ready: '2026-11-22T12:00:09Z',
}

export async function post(
  app: FastifyInstance,
  url: string,
  request: SyncRequest,
  headers: Record<string, string> = {},
): Promise<SyncResponse> {
  const response = await app.inject({ method: 'POST', url, payload: request, headers })
  if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`)
  return response.json<SyncResponse>()
}

/** The observed children of `answer`, its Pod ready since `times`. */
export function readyChildren(answer: SyncResponse, times = POD_TIMES) {
  return observedChildren(answer.children, (child) =>
    child.kind === 'Pod' ? { status: readyPodStatus(((child.spec as Json).containers ?? []) as Json[], times) } : {},
  )
}

/** Posts the three syncs of a start; `clock.now` ends at 12:00:20. */
export async function liveToRunning(app: FastifyInstance, clock: { now: Date }, headers: Record<string, string> = {}) {
  const definition = webDefinition()
  const parent = challenge({ createdAt: CREATED })
  clock.now = new Date(T0)
  const first = await post(app, '/sync', syncRequest(parent, { related: [definition] }), headers)
  clock.now = new Date(T0 + 1000)
  const second = await post(
    app,
    '/sync',
    syncRequest(
      { ...parent, status: first.status },
      { related: [definition], children: observedChildren(first.children) },
    ),
    headers,
  )
  const ready = readyChildren(second)
  clock.now = new Date(T0 + 20_000)
  const running = await post(
    app,
    '/sync',
    syncRequest({ ...parent, status: second.status }, { related: [definition], children: ready }),
    headers,
  )
  return { parent, definition, first, second, running, ready }
}
