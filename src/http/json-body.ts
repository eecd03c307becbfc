/**
 * The JSON body parser of the app: Fastify's own, as plain as JSON.parse (a `__proto__` key is an own data
 * property, never a prototype). Only `application/json` is parsed; any other content type is 415.
 *
 * Depth: no Kubernetes object nests anywhere near MAX_JSON_DEPTH. A large body is scanned before it is parsed
 * and refused with a 400 at the first level past the limit: parsing a 4 MiB array nested four million deep holds
 * the event loop (and the probes that share it) for seconds. Smaller bodies are not scanned (the scan costs about a
 * third of JSON.parse, 0.86 ms against 2.8 ms at 1 MiB, on every call) and parse in milliseconds whatever their shape; hooks echo observed children back
 * during teardown, and when serialising a deep one overflows the stack the answer is a 400 naming where the body
 * nests too deep (tooDeepError).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fastifyPlugin from 'fastify-plugin'

export const MAX_JSON_DEPTH = 512
/** Bodies of this many characters and more are scanned for their depth before they are parsed. */
export const DEPTH_SCAN_FROM = 256 * 1024

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
 * The first path at which `value` nests deeper than `limit` objects or arrays, or undefined. Iterative (the value
 * may be far deeper than the stack allows) and allocation-light: it runs on every hook body. Paths name at most
 * the first five levels.
 */
export function tooDeep(value: unknown, limit: number): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const values: object[] = [value]
  const depths: number[] = [1]
  const paths: string[] = ['body']
  while (values.length > 0) {
    const node = values.pop() as Record<string, unknown>
    const depth = depths.pop() as number
    const path = paths.pop() as string
    if (depth > limit) return path
    for (const key in node) {
      const child = node[key]
      if (typeof child !== 'object' || child === null) continue
      values.push(child)
      depths.push(depth + 1)
      paths.push(depth <= 5 ? `${path}.${key}` : path)
    }
  }
  return undefined
}

/**
 * The offset of the first `[` or `{` (outside strings) that opens a level past `limit` in JSON text, or -1. It
 * stops there: a body nested millions deep is refused after reading `limit` characters of it.
 */
export function tooDeepAt(text: string, limit: number): number {
  let depth = 0
  const length = text.length
  for (let at = 0; at < length; at++) {
    const code = text.charCodeAt(at)
    if (code === 0x22) {
      // A string: jump to its closing quote, the first one after an even run of backslashes. indexOf searches in
      // native code; most of a Kubernetes object's characters are in strings, so this halves the scan.
      for (;;) {
        at = text.indexOf('"', at + 1)
        if (at < 0) return -1
        let backslashes = 0
        while (text.charCodeAt(at - 1 - backslashes) === 0x5c) backslashes++
        if (backslashes % 2 === 0) break
      }
    } else if (code === 0x5b || code === 0x7b) {
      if (++depth > limit) return at
    } else if (code === 0x5d || code === 0x7d) {
      depth--
    }
  }
  return -1
}

/** The 400 for a body whose answer could not be serialised because of its depth. */
export function tooDeepError(body: unknown): BodyError {
  // V8 overflows only thousands of levels deep, so a failing body always nests past the limit somewhere.
  const where = tooDeep(body, MAX_JSON_DEPTH) as string
  return new BodyError('TOO_DEEP', `${where} nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels.`)
}

function depthRefusal(body: string): BodyError | undefined {
  if (body.length < DEPTH_SCAN_FROM) return undefined
  const at = tooDeepAt(body, MAX_JSON_DEPTH)
  return at < 0
    ? undefined
    : new BodyError(
        'TOO_DEEP',
        `The body nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels (at character ${at}).`,
      )
}

/** Sees a body once it is in, before it is parsed, and may refuse it: returns the error to answer. */
export type BodyCheck = (request: FastifyRequest) => Error | undefined

export interface JsonBodyOptions {
  /** Sees each body before the depth scan and the parse (app.ts passes load shedding's). */
  beforeParse?: BodyCheck
}

/** The plugin: the parser of the whole app it is registered on (not encapsulated). */
export const jsonBody = fastifyPlugin(
  async function jsonBody(app: FastifyInstance, options: JsonBodyOptions) {
    registerParser(app, options.beforeParse)
  },
  { name: 'json-body', fastify: '5.x' },
)

function registerParser(app: FastifyInstance, beforeParse: BodyCheck | undefined): void {
  // 'ignore': keys such as "__proto__" stay plain own data properties, as JSON.parse makes them. Refusing them
  // would let one author's definition or one player's parameter refuse every request that carries it (every sync
  // and finalize of a namespace); the domain refuses such keys where they are written, and never merges them.
  const parseJson = app.getDefaultJsonParser('ignore', 'ignore')
  app.removeContentTypeParser(['application/json', 'text/plain'])
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const refusal = beforeParse?.(request) ?? depthRefusal(body as string)
    // The default parser answers through `done`; what it returns is nothing to wait for.
    if (refusal === undefined) void parseJson(request, body as string, done)
    else done(refusal, undefined)
  })
}
