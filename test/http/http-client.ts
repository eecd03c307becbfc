/**
 * Real HTTP for the few tests that need concurrency: a request whose body is sent in two parts, so it waits for its
 * body (past onRequest, not yet counted in flight) until the test lets it finish or aborts it; and requests held
 * after admission (counted in flight) until the test releases them.
 */
import { once } from 'node:events'
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance, FastifyRequest } from 'fastify'

export interface Answer {
  statusCode: number
  headers: IncomingMessage['headers']
  body: string
}

async function read(response: IncomingMessage): Promise<Answer> {
  const chunks: Buffer[] = []
  for await (const chunk of response) chunks.push(chunk as Buffer)
  return {
    statusCode: response.statusCode as number,
    headers: response.headers,
    body: Buffer.concat(chunks).toString('utf8'),
  }
}

/** Listens on an ephemeral port of the loopback interface. */
export async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as AddressInfo).port
}

/**
 * `next()` resolves once the next hook call has reached `hook`: by default preParsing, past every onRequest hook
 * (authenticated, not refused), before its body is read. With `wait`, the request stays there until the test
 * calls the release it was given. Must be called before the app is ready.
 */
export function arrivals(
  app: FastifyInstance,
  hook: 'preParsing' | 'preHandler' = 'preParsing',
  wait?: (release: () => void) => void,
): { next: () => Promise<void> } {
  const waiting: (() => void)[] = []
  let arrived = 0
  app.addHook(hook, async (request: FastifyRequest) => {
    if (request.method !== 'POST' || request.is404) return
    arrived += 1
    waiting.shift()?.()
    if (wait) await new Promise<void>((release) => wait(release))
  })
  let seen = 0
  return {
    next() {
      seen += 1
      if (arrived >= seen) return Promise.resolve()
      return new Promise<void>((resolve) => waiting.push(resolve))
    },
  }
}

/**
 * `next()` resolves when the server has seen a client abort. The root hook runs before the routes' own, so the
 * routes' hooks finish in the microtasks that follow: anything the test then sends over the network comes after.
 */
export function aborts(app: FastifyInstance): { next(): Promise<void> } {
  const waiting: (() => void)[] = []
  app.addHook('onRequestAbort', async (_request) => {
    waiting.shift()?.()
  })
  return { next: () => new Promise<void>((resolve) => waiting.push(resolve)) }
}

export async function post(
  port: number,
  path: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const request = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers },
  })
  request.end(body)
  const [response] = (await once(request, 'response')) as [IncomingMessage]
  return read(response)
}

export async function get(port: number, path: string): Promise<Answer> {
  const request = httpRequest({ host: '127.0.0.1', port, method: 'GET', path })
  request.end()
  const [response] = (await once(request, 'response')) as [IncomingMessage]
  return read(response)
}

export interface HalfSent {
  request: ClientRequest
  /** Sends the rest of the body and reads the answer. */
  finish(): Promise<Answer>
  /** Drops the connection with the body half sent. */
  abort(): void
}

/** Sends the headers and the first half of the body, then waits for the test. */
export function postHalf(port: number, path: string, body: string): HalfSent {
  const bytes = Buffer.from(body)
  const half = Math.floor(bytes.length / 2)
  const request = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) },
  })
  const response = once(request, 'response') as Promise<[IncomingMessage]>
  response.catch(() => {}) // an aborted request never gets one
  request.on('error', () => {})
  request.write(bytes.subarray(0, half))
  return {
    request,
    async finish() {
      request.end(bytes.subarray(half))
      const [message] = await response
      return read(message)
    },
    abort() {
      request.destroy()
    },
  }
}

/** The value of the in-flight gauge, read from the operations app (metrics are never refused). */
export async function inFlight(app: FastifyInstance): Promise<number> {
  const text = (await app.ops.inject({ method: 'GET', url: '/metrics' })).body
  const match = /^challenge_hooks_in_flight_requests (\d+)$/m.exec(text)
  return Number(match?.[1] ?? Number.NaN)
}

/**
 * Holds every POST after its body has arrived and been admitted (preHandler: counted in flight), until the test
 * releases it: `next()` resolves when the next one is held. Must be called before the app is ready.
 */
export function holds(app: FastifyInstance): { next(): Promise<void>; release(): void } {
  const gates: (() => void)[] = []
  const held = arrivals(app, 'preHandler', (release) => gates.push(release))
  return {
    next: held.next,
    release() {
      for (const open of gates.splice(0)) open()
    },
  }
}
