/**
 * One error handler for the whole app. A 4xx keeps a message naming what is wrong; a 5xx says only
 * "Internal Server Error" and the error goes to the log. Every error body is `{error, message}`.
 */
import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyInstance } from 'fastify'
import type { ErrorBody } from '../protocol.js'

export function errorBody(statusCode: number, message: string): ErrorBody {
  return { error: STATUS_CODES[statusCode] ?? 'Error', message }
}

/** `body/parent/spec/owner must have required property 'id'` → `body.parent.spec.owner must have ...`. */
function validationMessage(error: FastifyError): string {
  const first = error.validation?.[0]
  if (!first) return error.message
  const where = [error.validationContext ?? 'body', ...first.instancePath.split('/').slice(1)].join('.')
  const missing = first.keyword === 'required' ? `.${String((first.params as { missingProperty?: string }).missingProperty)}` : ''
  const unexpected =
    first.keyword === 'additionalProperties'
      ? `.${String((first.params as { additionalProperty?: string }).additionalProperty)}`
      : ''
  const what = first.keyword === 'required' ? 'is required' : first.keyword === 'additionalProperties' ? 'is not allowed' : first.message
  return `${where}${missing}${unexpected} ${what}`
}

export function registerErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error.validation) {
      return reply.code(400).send(errorBody(400, validationMessage(error)))
    }
    const statusCode = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500
    if (statusCode === 500) {
      request.log.error({ err: error }, 'request failed')
      return reply.code(500).send(errorBody(500, 'Internal Server Error'))
    }
    request.log.info({ code: error.code, statusCode }, error.message)
    return reply.code(statusCode).send(errorBody(statusCode, error.message))
  })
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody(404, `${request.method} ${request.url} is not a route of this server`))
  })
}
