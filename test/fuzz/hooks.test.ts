/**
 * Fuzzing the three hooks over HTTP (app.inject): valid requests from the builders, mutated (fields deleted,
 * nulled, retyped, 1 MB strings, 5000-level nesting, unicode and control characters, extra and renamed fields,
 * duplicated groups, v1 and v2 keys). Whatever comes in: never a 5xx and never a thrown error; a 4xx is a JSON
 * {error, message}; a 200 is an answer the CRD and the API server accept, the same bytes when asked twice.
 */
import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { buildTestApp } from '../helpers/app.js'
import { tooDeepAt } from '../../src/http/json-body.js'
import { answerProblems } from './answers.js'
import { BASES, mutated, mutation, serialize, type BaseName, type Mutation } from './mutations.js'

const HOOKS = ['/sync', '/finalize', '/customize'] as const
/** Seeded: the suite is reproducible. FUZZ_SEED and FUZZ_RUNS explore further by hand. */
const SEED = Number(process.env.FUZZ_SEED ?? 42)
const runs = (usual: number) => Number(process.env.FUZZ_RUNS ?? usual)

async function post(app: FastifyInstance, url: string, payload: string) {
  return app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json' } })
}

/** Posts the request and throws a readable error when the answer breaks the contract. */
async function check(app: FastifyInstance, url: string, payload: string): Promise<number> {
  const response = await post(app, url, payload)
  const problems = answerProblems(
    url,
    response.statusCode,
    response.body,
    response.statusCode === 200 ? JSON.parse(payload) : undefined,
  )
  if (response.statusCode === 200) {
    const again = await post(app, url, payload)
    if (again.body !== response.body) problems.push('the same request gave different bytes')
  }
  if (problems.length > 0) throw new Error(`${url} answered ${response.statusCode}:\n  ${problems.join('\n  ')}`)
  return response.statusCode
}

const baseName = fc.constantFrom(...(Object.keys(BASES) as BaseName[]))
const hook = fc.constantFrom(...HOOKS)

t.test('the unmutated bases are answered 200 by every hook they suit', async (t) => {
  const app = await buildTestApp(t)
  for (const base of Object.keys(BASES) as BaseName[]) {
    for (const url of base === 'customize' ? (['/customize', '/sync'] as const) : HOOKS) {
      t.equal(await check(app, url, serialize(mutated(base, []))), 200, `${base} ${url}`)
    }
  }
})

t.test('mutated requests: never a 5xx; a 4xx is {error, message}; a 200 is a valid answer', async (t) => {
  const app = await buildTestApp(t)
  const seen = new Map<number, number>()
  await fc.assert(
    fc.asyncProperty(
      baseName,
      hook,
      fc.array(mutation, { minLength: 1, maxLength: 4 }),
      async (base, url, edits: Mutation[]) => {
        const code = await check(app, url, serialize(mutated(base, edits)))
        seen.set(code, (seen.get(code) ?? 0) + 1)
      },
    ),
    { seed: SEED, numRuns: runs(400) },
  )
  t.ok((seen.get(200) ?? 0) > 40, `many mutations are still answered 200 (${JSON.stringify([...seen])})`)
  t.ok((seen.get(400) ?? 0) > 40, 'many are refused with 400')
})

t.test('raw bytes: truncated or spliced JSON is a 4xx or a valid 200, never a 5xx', async (t) => {
  const app = await buildTestApp(t)
  const seen = new Map<number, number>()
  const texts = Object.fromEntries(
    (Object.keys(BASES) as BaseName[]).map((base) => [base, serialize(mutated(base, []))]),
  )
  await fc.assert(
    fc.asyncProperty(
      baseName,
      hook,
      fc.nat(),
      fc.nat({ max: 20 }),
      fc.string({ unit: 'binary', maxLength: 8 }),
      async (base, url, at, cut, insert) => {
        const text = texts[base] as string
        const position = at % (text.length + 1)
        const code = await check(app, url, text.slice(0, position) + insert + text.slice(position + cut))
        seen.set(code, (seen.get(code) ?? 0) + 1)
      },
    ),
    { seed: SEED, numRuns: runs(200) },
  )
  // check() throws on a 5xx or a malformed answer; what is left says the splices reached both outcomes.
  t.ok((seen.get(400) ?? 0) > 0, `splices are refused with 400 (${JSON.stringify([...seen])})`)
  t.strictSame(
    [...seen.keys()].filter((code) => code !== 200 && (code < 400 || code >= 500)),
    [],
    'every answer is a 200 or a 4xx',
  )
})

/** How deep a JSON value nests objects and arrays, counted on the value itself (not on its text). */
function depthOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0
  const children: unknown[] = Array.isArray(value) ? value : Object.values(value)
  return 1 + Math.max(0, ...children.map(depthOf))
}

t.test('the depth scan of large bodies agrees with the depth of the value they hold, whatever the strings', (t) => {
  // Strings full of quotes, backslashes and brackets are where a text scan can go wrong.
  const tricky = fc.string({ unit: fc.constantFrom('"', '\\', '[', ']', '{', '}', 'a', ' ') })
  const value = fc.letrec<{ json: unknown }>((tie) => ({
    json: fc.oneof(
      { depthSize: 'small' },
      tricky,
      fc.integer(),
      fc.array(tie('json'), { maxLength: 3 }),
      fc.dictionary(tricky, tie('json'), { maxKeys: 3 }),
    ),
  })).json
  fc.assert(
    fc.property(value, fc.integer({ min: 0, max: 6 }), (json, limit) => {
      const text = JSON.stringify(json)
      return (tooDeepAt(text, limit) === -1) === depthOf(json) <= limit
    }),
    { seed: SEED, numRuns: runs(500) },
  )
  t.pass('every generated value')
  t.end()
})
