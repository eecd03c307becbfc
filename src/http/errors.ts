/**
 * One error handler for the whole app. A 4xx keeps a message naming what is wrong; a 5xx says only
 * "Internal Server Error" and the error goes to the log. Every error body is `{error, message}`.
 */
import { STATUS_CODES, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifySchemaValidationError } from 'fastify'
import fastifyPlugin from 'fastify-plugin'
import { fieldPath } from '../challenge/schema-errors.js'
import type { ErrorBody } from '../contract/protocol.js'

export function errorBody(statusCode: number, message: string): ErrorBody {
  return { error: STATUS_CODES[statusCode] ?? 'Error', message }
}

/**
 * `/parent/spec/owner` missing `id` → `body.parent.spec.owner.id is required`; a union of literals names its
 * values (`body.parent.spec.owner.kind must be one of "User", "Team"`).
 */
function validationMessage(errors: readonly FastifySchemaValidationError[], context: string): string {
  const first = errors[0] as FastifySchemaValidationError
  // JSON-pointer segments unescaped: `Deployment.apps~1v1` is the group `Deployment.apps/v1`.
  const where = fieldPath(context, first.instancePath)
  switch (first.keyword) {
    case 'required':
      return `${where}.${String(first.params.missingProperty)} is required`
    case 'additionalProperties':
      return `${where}.${String(first.params.additionalProperty)} is not allowed`
    case 'const': {
      const allowed = errors
        .filter((each) => each.keyword === 'const' && each.instancePath === first.instancePath)
        .map((each) => JSON.stringify(each.params.allowedValue))
      return `${where} must be one of ${allowed.join(', ')}`
    }
    default:
      return `${where} ${String(first.message)}`
  }
}

/**
 * A hook call refused for load once its body is in (./load-shedding.ts): 429 with an integer Retry-After. The
 * shedding has counted and logged it already (one line per burst), so the handler logs nothing more.
 */
export class RetryLaterError extends Error {
  readonly statusCode = 429
  constructor(
    readonly body: ErrorBody,
    readonly retryAfterSeconds: number,
  ) {
    super(body.message)
    this.name = 'RetryLaterError'
  }
}

/** The plugin: the error and not-found handlers of the whole app it is registered on (not encapsulated). */
export const errorHandlers = fastifyPlugin(
  async function errorHandlers(app: FastifyInstance) {
    setHandlers(app)
  },
  { name: 'error-handlers', fastify: '5.x' },
)

function setHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof RetryLaterError) {
      return reply.code(429).header('retry-after', String(error.retryAfterSeconds)).send(error.body)
    }
    if (error.validation) {
      return reply.code(400).send(errorBody(400, validationMessage(error.validation, String(error.validationContext))))
    }
    const statusCode =
      error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500
    if (statusCode === 500) {
      request.log.error({ err: error }, 'request failed')
      return reply.code(500).send(errorBody(500, 'Internal Server Error'))
    }
    // Fastify's own 415 says only "Unsupported Media Type": name what was sent and what is expected.
    const message =
      error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? `Content-Type ${request.headers['content-type'] ?? '(none)'} is not supported; send application/json.`
        : error.message
    request.log.info({ code: error.code, statusCode }, message)
    return reply.code(statusCode).send(errorBody(statusCode, message))
  })
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody(404, `${request.method} ${request.url} is not a route of this server`))
  })
}

/** What Node reports on a connection before a request reaches the app, and the answer it gets. */
const CLIENT_ERRORS: Record<string, [number, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request did not arrive in time (REQUEST_TIMEOUT_MS); the connection is closed.'],
  HPE_HEADER_OVERFLOW: [431, 'The request headers are too large.'],
}

/**
 * Fastify's clientErrorHandler, with the app's `{error, message}` body and `Connection: close` (the connection is
 * closed after it). Node reports here a request whose headers or body did not arrive within REQUEST_TIMEOUT_MS,
 * and bytes that are not HTTP. The answer is written only when no answer has begun on the connection.
 */
export function clientErrorHandler(onTimeout: () => void = () => {}) {
  return function handleClientError(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
    if (error.code === 'ECONNRESET' || socket.destroyed) return
    const [statusCode, message] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'The request is not valid HTTP.']
    if (statusCode === 408) onTimeout()
    this.log.debug({ code: error.code, statusCode }, message)
    const answering = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
    if (socket.writable && !answering?.headersSent) {
      const body = JSON.stringify(errorBody(statusCode, message))
      socket.write(
        `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      )
    }
    socket.destroy(error)
  }
}
