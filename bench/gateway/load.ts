/**
 * The load of bench:gateway: an open-loop sender (requests leave at a fixed rate whatever the answers do, and each
 * latency counts from the moment its request was due, so a slow server cannot slow the load down and hide its own
 * queue), and the readers of Server-Sent Events and watch streams. Plain node:http(s) with keep-alive agents: the
 * project has no load library (autocannon and undici are not among its packages), and a fixed-rate sender is a few
 * lines.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { performance } from 'node:perf_hooks'

/** Milliseconds since the epoch with sub-millisecond precision, comparable between processes on one machine. */
export const clock = (): number => performance.timeOrigin + performance.now()

export interface Target {
  /** http://127.0.0.1:port or https://127.0.0.1:port */
  base: string
  headers: Record<string, string>
  /** the API server's CA (https only) */
  ca?: string
}

export interface Answer {
  status: number
  body: string
}

export interface Sender {
  send(method: string, path: string, headers?: Record<string, string>, body?: unknown): Promise<Answer>
  close(): void
}

/** Keep-alive requests to one server; as many sockets as requests in flight (an open loop must not queue here). */
export function sender(target: Target): Sender {
  const https = target.base.startsWith('https:')
  const agent = https
    ? new HttpsAgent({ keepAlive: true, maxSockets: 1024, ...(target.ca === undefined ? {} : { ca: target.ca }) })
    : new HttpAgent({ keepAlive: true, maxSockets: 1024 })
  const send = https ? httpsRequest : httpRequest
  return {
    send(method, path, headers = {}, body) {
      const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body)
      return new Promise((resolve) => {
        const request = send(
          new URL(path, target.base),
          {
            method,
            agent,
            headers: {
              ...target.headers,
              ...headers,
              ...(text === undefined ? {} : { 'content-length': Buffer.byteLength(text) }),
            },
          },
          (response) => {
            let received = ''
            response.setEncoding('utf8')
            response.on('data', (chunk: string) => (received += chunk))
            response.on('end', () => resolve({ status: response.statusCode ?? 0, body: received }))
            response.on('error', () => resolve({ status: 0, body: received }))
          },
        )
        // A refused or cut connection is counted as status 0, never thrown: the open loop goes on.
        request.on('error', (error) => resolve({ status: 0, body: error.message }))
        request.end(text)
      })
    },
    close: () => agent.destroy(),
  }
}

export interface Timed {
  /** ms from the moment the request was due to the end of its answer */
  latencyMs: number
  status: number
  kind: string
}

/**
 * Sends `count` requests at `rate` a second, each at its due time (t0 + i / rate) however many are still in flight;
 * `next(i)` starts request i and resolves with its status and kind. Resolves when every answer is in.
 */
export async function openLoop(
  count: number,
  rate: number,
  next: (i: number) => Promise<{ status: number; kind: string }>,
): Promise<{ results: Timed[]; seconds: number; lateMs: number }> {
  const results: Timed[] = []
  const pending: Promise<void>[] = []
  const t0 = clock() + 20
  let lateMs = 0
  for (let i = 0; i < count; i++) {
    const due = t0 + (i * 1000) / rate
    const wait = due - clock()
    if (wait > 1) await new Promise((done) => setTimeout(done, wait))
    // How late the sender itself started a request (its own event loop busy): reported, so a figure is not
    // mistaken for the server's when the sender fell behind.
    lateMs = Math.max(lateMs, clock() - due)
    pending.push(
      next(i).then(({ status, kind }) => {
        results.push({ latencyMs: clock() - due, status, kind })
      }),
    )
  }
  await Promise.all(pending)
  return { results, seconds: (clock() - t0) / 1000, lateMs }
}

export interface StreamHandle {
  /** resolves with the status of the answer's head once it came (0: no connection) */
  opened: Promise<number>
  close(): void
}

/**
 * A long-lived GET whose body is read as text (an SSE stream of the gateway, a watch of the API server); `onText`
 * gets each chunk with the time it arrived. No agent: each stream holds a connection of its own, as a browser's
 * EventSource or a watch does.
 */
export function openStream(
  target: Target,
  path: string,
  headers: Record<string, string>,
  onText: (text: string, at: number) => void,
): StreamHandle {
  const https = target.base.startsWith('https:')
  const send = https ? httpsRequest : httpRequest
  let response: IncomingMessage | undefined
  const request = send(new URL(path, target.base), {
    method: 'GET',
    agent: false,
    headers: { ...target.headers, ...headers },
    ...(https && target.ca !== undefined ? { ca: target.ca } : {}),
  })
  const opened = new Promise<number>((resolve) => {
    request.on('response', (answer) => {
      response = answer
      answer.setEncoding('utf8')
      answer.on('data', (chunk: string) => onText(chunk, clock()))
      answer.on('error', () => undefined)
      resolve(answer.statusCode ?? 0)
    })
    request.on('error', () => resolve(0))
  })
  request.end()
  return {
    opened,
    close() {
      response?.destroy()
      request.destroy()
    },
  }
}

/** Runs `work` on every item with at most `limit` at once. */
export async function inBatches<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let index = 0
  const worker = async () => {
    while (index < items.length) await work(items[index++] as T)
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}
