/**
 * The stages of one /sync call, timed in process on the benchmark requests, without HTTP: what each piece of
 * work costs per call, away from the noise of sockets and of other work on the machine.
 *
 * The pieces are the real server's: fastify's JSON parser (secure-json-parse with the options fastify passes),
 * fastify's validator compiler with the app's ajv options on SyncRequestSchema, `sync` from dist/, and the
 * route's JSON.stringify + SHA-256 ETag. Modules fastify depends on are loaded from fastify's own location.
 */
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

export interface StageTimes {
  /** µs per call */
  decode: number
  jsonParse: number
  validate: number
  sync: number
  stringify: number
  etag: number
}

export const STAGE_LABELS: Record<keyof StageTimes, string> = {
  decode: 'UTF-8 decode of the body (Buffer → string)',
  jsonParse: 'JSON.parse',
  validate: "ajv: SyncRequestSchema, compiled by fastify's compiler with the app's options",
  sync: 'sync (dist/challenge/hooks.js)',
  stringify: 'JSON.stringify of the answer',
  etag: 'SHA-256 ETag of the answer',
}

type Fn = () => unknown

/** µs per call: repeat until ~`budgetMs` has passed (at least 3 calls), after a warm-up call. */
function time(fn: Fn, budgetMs: number): number {
  fn()
  let calls = 0
  const start = performance.now()
  let elapsed = 0
  while (calls < 3 || elapsed < budgetMs) {
    fn()
    calls += 1
    elapsed = performance.now() - start
  }
  return (elapsed * 1000) / calls
}

/** Each stage is timed `reps` times, interleaved with the others; the fastest is kept (noise only adds). */
export async function timeStages(
  root: string,
  env: Record<string, string>,
  bodies: Map<string, Buffer>,
  budgetMs = 40,
  reps = 3,
): Promise<Map<string, StageTimes>> {
  const dist = (file: string) => pathToFileURL(join(root, 'dist', file)).href
  const { sync } = (await import(dist('challenge/hooks.js'))) as {
    sync: (request: unknown, config: unknown, now: Date) => unknown
  }
  const { loadConfig } = (await import(dist('config/config.js'))) as {
    loadConfig: (env: Record<string, string>) => unknown
  }
  const { SyncRequestSchema } = (await import(dist('contract/protocol.js'))) as { SyncRequestSchema: object }
  const fastifyRequire = createRequire(createRequire(join(root, 'package.json')).resolve('fastify'))
  const AjvCompiler = fastifyRequire('@fastify/ajv-compiler') as () => (
    external: object,
    options: object,
  ) => (route: object) => (data: unknown) => boolean
  // src/http/app.ts: report, never repair.
  const customOptions = { coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false }
  const validate = AjvCompiler()({}, { customOptions })({
    schema: SyncRequestSchema,
    method: 'POST',
    url: '/sync',
    httpPart: 'body',
  })
  const config = loadConfig(env)

  const out = new Map<string, StageTimes>()
  for (const [name, body] of bodies) {
    const text = body.toString('utf8')
    const request = JSON.parse(text) as unknown
    if (!validate(structuredClone(request))) throw new Error(`stages: the ${name} request does not validate`)
    const now = new Date()
    const answer = sync(request, config, now)
    const answerText = JSON.stringify(answer)
    // Validation and sync go round a pool of separately parsed copies, so one object does not sit in the caches.
    const pool = Array.from(
      { length: Math.max(2, Math.min(64, Math.floor((8 * 1024 * 1024) / body.length))) },
      () => JSON.parse(text) as unknown,
    )
    let next = 0
    const copy = () => pool[next++ % pool.length]
    const fns: Record<keyof StageTimes, Fn> = {
      decode: () => body.toString('utf8'),
      jsonParse: (): unknown => JSON.parse(text),
      validate: () => validate(copy()),
      sync: () => sync(copy(), config, now),
      stringify: () => JSON.stringify(answer),
      etag: () => `"${createHash('sha256').update(answerText).digest('base64url')}"`,
    }
    const best = Object.fromEntries(Object.keys(fns).map((key) => [key, Infinity])) as unknown as StageTimes
    for (let rep = 0; rep < reps; rep++) {
      for (const key of Object.keys(fns) as Array<keyof StageTimes>)
        best[key] = Math.min(best[key], time(fns[key], budgetMs))
    }
    out.set(name, best)
  }
  return out
}
