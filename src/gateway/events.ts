/**
 * GET /v1/instances/{definition}/events: Server-Sent Events on a watch of the one Challenge. The protocol is a few
 * lines of text (`event:`, `id:`, `data:`, blank line; `:` comments as heartbeats), written here rather than through
 * a plugin: the stream needs the watch's lifecycle (re-watch when the API server ends it, re-read when its version
 * expired, wait out an unreachable API server) more than it needs a framework.
 *
 * Each event is the instance's whole view, with the record's resourceVersion as its id, sent when the status
 * changed. A client that reconnects with Last-Event-ID gets the current view at once if anything changed since.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import { GatewayError, type Instances, type Scope } from './instances.js'
import { sameOwner } from './names.js'
import type { ChallengeRecord } from './view.js'

export interface StreamOptions {
  heartbeatSeconds: number
  retryAfterSeconds: number
}

export async function streamEvents(
  request: FastifyRequest,
  reply: FastifyReply,
  operations: Instances,
  scope: Scope,
  definition: string,
  options: StreamOptions,
): Promise<void> {
  // Before the stream starts, a missing or foreign record is an ordinary error answer.
  let record = await operations.record(scope, definition)
  const lastEventId = request.headers['last-event-id']
  reply.hijack()
  reply.raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  })
  const controller = new AbortController()
  const { signal } = controller
  request.raw.on('close', () => controller.abort())
  const write = (text: string) => {
    if (!signal.aborted) reply.raw.write(text)
  }
  const send = (event: string, id: string | undefined, data: unknown) =>
    write(`event: ${event}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`)
  const heartbeat = setInterval(() => write(': heartbeat\n\n'), options.heartbeatSeconds * 1000)
  let shown = JSON.stringify(record.status)
  let version = record.metadata.resourceVersion
  const show = async (next: ChallengeRecord) => {
    send('instance', next.metadata.resourceVersion, await operations.view(scope, next))
  }
  const end = () => controller.abort()

  try {
    if (version !== lastEventId) await show(record)
    let expired = false
    while (!signal.aborted) {
      let pending = Promise.resolve()
      let failed: Error | undefined
      const handle = async (type: string, next: ChallengeRecord) => {
        if (type === 'ERROR') {
          // 410 Gone: the version is too old to watch from; read the record again.
          expired = true
          return
        }
        version = next.metadata.resourceVersion
        if (type === 'DELETED') {
          send('deleted', version, { name: next.metadata.name })
          return end()
        }
        if (!sameOwner(scope.owner, next.spec?.owner)) {
          send('error', undefined, { message: 'The record no longer belongs to this owner.' })
          return end()
        }
        const status = JSON.stringify(next.status)
        if (status === shown) return
        // Marked shown only once sent: a view that could not be made is sent after the next read.
        await show(next)
        shown = status
      }
      try {
        if (expired) {
          expired = false
          record = await operations.record(scope, definition)
          version = record.metadata.resourceVersion
          const status = JSON.stringify(record.status)
          if (status !== shown) {
            await show(record)
            shown = status
          }
        }
        await operations.watch(
          scope,
          definition,
          version,
          (type, next) => {
            pending = pending
              .then(() => handle(type, next))
              .catch((error: Error) => {
                failed = error
              })
          },
          signal,
        )
        await pending
        if (failed !== undefined) throw failed
      } catch (error) {
        if (!(error instanceof GatewayError && error.statusCode === 503)) throw error
        // The API server cannot be reached: wait, then read the record again and watch on.
        await sleep(options.retryAfterSeconds * 1000, undefined, { signal }).catch(() => undefined)
        expired = true
      }
    }
  } catch (error) {
    // The record is gone (404), is another owner's (409), or the API server refused the watch: said, then closed.
    const message = error instanceof GatewayError ? error.message : 'The stream failed.'
    if (error instanceof GatewayError && error.statusCode === 404) send('deleted', undefined, { message })
    else send('error', undefined, { message })
    if (!(error instanceof GatewayError)) request.log.error({ err: error }, 'events stream failed')
  } finally {
    clearInterval(heartbeat)
    controller.abort()
    reply.raw.end()
  }
}
