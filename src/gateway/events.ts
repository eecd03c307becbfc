/**
 * GET /v1/instances/{definition}/events: Server-Sent Events on the namespace's shared watch of Challenges
 * (./cache.ts). The protocol is a few lines of text (`event:`, `id:`, `data:`, blank line; `:` comments as
 * heartbeats), written here rather than through a plugin: the stream is a subscriber of the shared watch, whose
 * lifecycle (re-watch, re-list on 410, waiting out an unreachable API server) is the cache's.
 *
 * Each event is the instance's whole view, with the record's resourceVersion as its id, sent when the status
 * changed. A client that reconnects with Last-Event-ID gets the current view at once if anything changed since.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import { compareVersions, type GatewayCache } from './cache.js'
import { GatewayError, type Instances, type Scope } from './instances.js'
import { KubeError } from './kube.js'
import { sameOwner } from './names.js'
import type { ChallengeRecord } from './view.js'

export interface StreamOptions {
  heartbeatSeconds: number
  retryAfterSeconds: number
}

/** Whether resourceVersion `a` is older than `b`; not comparable (not both integers) counts as not older. */
const older = (a: string, b: string) => compareVersions(a, b) === -1

export async function streamEvents(
  request: FastifyRequest,
  reply: FastifyReply,
  operations: Instances,
  cache: GatewayCache,
  scope: Scope,
  definition: string,
  options: StreamOptions,
): Promise<void> {
  // Before the stream starts, a missing or foreign record, or an API server out of reach, is an ordinary answer.
  const record = await operations.record(scope, definition)
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
  const write = (text: string) => {
    if (!signal.aborted) reply.raw.write(text)
  }
  const send = (event: string, id: string | undefined, data: unknown) =>
    write(`event: ${event}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`)
  const heartbeat = setInterval(() => write(': heartbeat\n\n'), options.heartbeatSeconds * 1000)

  // The shared watch of the namespace tells of each change; the loop below shows them in order. Each change is
  // shown if its status differs from the last one sent.
  const changes: { record: ChallengeRecord; deleted: boolean }[] = [{ record, deleted: false }]
  let latest = record
  let failure: Error | undefined
  let wake = () => {}
  const unsubscribe = cache.challenges(scope.namespace).subscribe(record.metadata.name, {
    change(type, object) {
      const next = object as unknown as ChallengeRecord
      // A shared watch may lag the record read above: what it says of an older version was already seen.
      if (type !== 'DELETED' && older(next.metadata.resourceVersion, latest.metadata.resourceVersion)) return
      latest = next
      changes.push({ record: next, deleted: type === 'DELETED' })
      wake()
    },
    fail(error) {
      failure = error
      wake()
    },
  })
  request.raw.on('close', () => {
    controller.abort()
    wake()
  })
  // The status last sent (JSON; undefined for a record without one), null before the first. Marked shown only once
  // sent: a view that could not be made is sent when it can.
  let shown = record.metadata.resourceVersion === lastEventId ? JSON.stringify(record.status) : null

  try {
    while (!signal.aborted) {
      if (failure !== undefined) throw failure
      const change = changes[0]
      if (change === undefined) {
        await new Promise<void>((resolve) => (wake = resolve))
        continue
      }
      const next = change.record
      if (change.deleted) {
        send('deleted', next.metadata.resourceVersion, { name: next.metadata.name })
        break
      }
      if (!sameOwner(scope.owner, next.spec?.owner)) {
        send('error', undefined, { message: 'The record no longer belongs to this owner.' })
        break
      }
      const status = JSON.stringify(next.status)
      try {
        if (status !== shown) send('instance', next.metadata.resourceVersion, await operations.view(scope, next))
        shown = status
        changes.shift()
      } catch (error) {
        if (!(error instanceof GatewayError && error.statusCode === 503)) throw error
        // The view's reads cannot be made now: wait, then show the latest change (those between are past).
        await sleep(options.retryAfterSeconds * 1000, undefined, { signal }).catch(() => undefined)
        changes.splice(0, changes.length - 1)
      }
    }
  } catch (error) {
    // The API server refused the watch for good, or a failure of the code: said, then closed.
    const known = error instanceof GatewayError || error instanceof KubeError
    send('error', undefined, { message: known ? error.message : 'The stream failed.' })
    if (!known) request.log.error({ err: error }, 'events stream failed')
  } finally {
    unsubscribe()
    clearInterval(heartbeat)
    controller.abort()
    reply.raw.end()
  }
}
