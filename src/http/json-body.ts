/**
 * The JSON body parser of the app: Fastify's own (prototype poisoning refused), with two additions.
 * - A refused `__proto__` / `constructor.prototype` key is reported as such, not as "not valid JSON".
 * - Bodies nesting deeper than MAX_JSON_DEPTH are refused with 400: hooks echo observed children back
 *   (teardown keeps them as they are), and serialising a very deep object overflows the stack (a 500).
 *   No Kubernetes object comes near the limit.
 * Only `application/json` is parsed; any other content type is 415.
 */
import type { FastifyInstance } from 'fastify'

export const MAX_JSON_DEPTH = 512

/** A 400 for the error handler: its message is kept and sent. */
export class BodyError extends Error {
  readonly statusCode = 400
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
    this.name = 'BodyError'
  }
}

/**
 * The first path at which `value` nests deeper than `limit` objects or arrays, or undefined. Iterative: the
 * value may be far deeper than the stack allows. Paths name at most the first five levels.
 */
export function tooDeep(value: unknown, limit: number): string | undefined {
  const pending: { value: object; depth: number; path: string }[] = []
  if (typeof value === 'object' && value !== null) pending.push({ value, depth: 1, path: 'body' })
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (next.depth > limit) return next.path
    for (const [key, child] of Object.entries(next.value)) {
      if (typeof child !== 'object' || child === null) continue
      const path = next.depth <= 5 ? `${next.path}.${key}` : next.path
      pending.push({ value: child as object, depth: next.depth + 1, path })
    }
  }
  return undefined
}

export function registerJsonBody(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser(['application/json', 'text/plain'])
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string
    parseJson(request, text, (error, value: unknown) => {
      if (error) {
        const code = (error as Error & { code?: string }).code
        if (code !== 'FST_ERR_CTP_INVALID_JSON_BODY' || !isJson(text)) return done(error, undefined)
        return done(
          new BodyError('PROTOTYPE_POISONING', 'Body contains a "__proto__" or "constructor.prototype" key, which is refused.'),
          undefined,
        )
      }
      const where = tooDeep(value, MAX_JSON_DEPTH)
      if (where !== undefined) {
        return done(new BodyError('TOO_DEEP', `${where} nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels.`), undefined)
      }
      done(null, value)
    })
  })
}

/** Plain JSON.parse accepts what the poisoning check refused; only called on the error path. */
function isJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}
