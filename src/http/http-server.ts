/**
 * The node:http server under each app (Fastify's serverFactory): its timeouts, and a bound on pipelining.
 *
 * Timeouts: a request's headers and body must arrive within `requestTimeoutMs`, or Node answers 408 and closes the
 * connection (the app's clientErrorHandler), however slowly the bytes trickle in; Node looks for such requests every
 * `timeoutCheckInterval` (its own default, 30 s, would let a slow upload live that much longer). An idle
 * keep-alive connection is closed after `keepAliveTimeoutMs`, any silent one after `idleTimeoutMs`.
 *
 * Pipelining: a connection with more than MAX_PIPELINED requests waiting for their answers is closed, before the
 * app sees the request. Node stops reading a connection whose answers are not read only once it has parsed the
 * whole chunk at hand (64 KiB: some 1,700 small requests), and would answer each of them: a few clients that
 * pipeline without reading kept the event loop busy for seconds. Metacontroller, the kubelet and Prometheus send
 * one request at a time on a connection.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createTlsServer } from 'node:https'
import type { Socket } from 'node:net'

export const MAX_PIPELINED = 16

export interface ServerSettings {
  requestTimeoutMs: number
  keepAliveTimeoutMs: number
  idleTimeoutMs: number
  /** PEM certificate chain and key: the server speaks HTTPS (TLS_CERT_FILE, TLS_KEY_FILE). */
  tls?: { cert: Buffer; key: Buffer }
}

export function timeoutCheckInterval(requestTimeoutMs: number): number {
  return Math.min(1000, Math.ceil(requestTimeoutMs / 4))
}

type Handler = (request: IncomingMessage, response: ServerResponse) => void
/** Sees a request before the app does and may answer it itself: returns true when it did. */
export type RequestGate = (request: IncomingMessage, response: ServerResponse) => boolean

/**
 * `gate` sees each request after the pipelining bound and before the app (app.ts passes load shedding's for the
 * hook port).
 */
export function serverFactory(settings: ServerSettings, gate?: RequestGate): (handler: Handler) => Server {
  return (handler) => {
    const waiting = new WeakMap<Socket, number>()
    const options = {
      requestTimeout: settings.requestTimeoutMs,
      headersTimeout: settings.requestTimeoutMs,
      connectionsCheckingInterval: timeoutCheckInterval(settings.requestTimeoutMs),
    }
    const listener = (request: IncomingMessage, response: ServerResponse): void => {
      const socket = request.socket
      const count = (waiting.get(socket) ?? 0) + 1
      if (count > MAX_PIPELINED || socket.destroyed) {
        // The requests that follow in the same chunk still come here; each costs this check and nothing more.
        socket.destroy()
        return
      }
      waiting.set(socket, count)
      response.once('finish', () => waiting.set(socket, (waiting.get(socket) as number) - 1))
      if (gate?.(request, response)) return
      handler(request, response)
    }
    // An https.Server is a tls.Server with the same request handling, timeouts and close methods as an http.Server.
    const server =
      settings.tls === undefined
        ? createServer(options, listener)
        : (createTlsServer({ ...options, ...settings.tls }, listener) as unknown as Server)
    server.keepAliveTimeout = settings.keepAliveTimeoutMs
    server.setTimeout(settings.idleTimeoutMs)
    return server
  }
}
