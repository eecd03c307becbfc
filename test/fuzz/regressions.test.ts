/**
 * Shrunk cases found by fuzzing, one named test each.
 *
 * Fixed in the HTTP layer: nesting (see also test/http/bad-input.test.ts).
 * Fixed in src/challenge: previous-status times outside RFC 3339 (or the Date range) are ignored, spec counters
 * are bounded, definition quantities and probes are checked.
 */
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp } from '../helpers/app.js'
import { answerProblems } from './answers.js'
import { mutated, serialize, type Json } from './mutations.js'
import { runningRequest } from '../helpers/hook-requests.js'

type Loose = Record<string, any>

async function answer(app: FastifyInstance, url: string, request: Json) {
  const payload = serialize(request)
  const response = await app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json' } })
  return {
    response,
    problems: answerProblems(url, response.statusCode, response.body, JSON.parse(JSON.stringify(request))),
  }
}

function definitionOf(request: Loose): Loose {
  return Object.values(request.related['ChallengeDefinition.challenge-hooks.dev/v1alpha1'])[0] as Loose
}

t.test('fixed: an observed child nested 5000 levels deep made /finalize a 500 (stack overflow)', async (t) => {
  const app = await buildTestApp(t)
  // Shrunk: base "finalizing", [{op: 'deep', focus: 10 (children.Secret.v1), at: 5 (the Secret's data)}].
  const request = mutated('finalizing', [{ op: 'deep', focus: 10, at: 5 }])
  const { response, problems } = await answer(app, '/finalize', request)
  t.strictSame(problems, [])
  t.equal(response.statusCode, 400)
  t.match(response.json().message, /nests objects or arrays deeper than 512 levels/)
})

t.test('a previous startedAt at the end of the Date range is ignored, not a 500', async (t) => {
  const app = await buildTestApp(t)
  for (const field of ['startedAt', 'lastRenewedAt']) {
    const request = runningRequest() as Loose
    request.parent.status[field] = '+275760-09-13T00:00:00.000Z'
    const { response, problems } = await answer(app, '/sync', request)
    t.strictSame(problems, [], field)
    t.ok(response.statusCode < 500, `${field}: ${response.statusCode}`)
  }
})

t.test('previous-status times that are not RFC 3339 are not carried into the status', async (t) => {
  const app = await buildTestApp(t)
  for (const [field, value] of [
    ['startedAt', '1'],
    ['admittedAt', 'Nov 22 2026'],
    ['admittedAt', '2026-11-22'],
  ] as const) {
    const request = runningRequest() as Loose
    request.parent.status[field] = value
    const { problems } = await answer(app, '/sync', request)
    t.strictSame(problems, [], `${field} = ${value}`)
  }
  const request = runningRequest() as Loose
  request.parent.status.conditions[0].lastTransitionTime = '1'
  t.strictSame((await answer(app, '/sync', request as Json)).problems, [], 'condition lastTransitionTime')
})

t.test(
  'spec.restarts or spec.renewals beyond int32 are refused, not turned into counters that cannot be read back',
  async (t) => {
    const app = await buildTestApp(t)
    for (const field of ['restarts', 'renewals']) {
      const request = runningRequest() as Loose
      request.parent.spec[field] = 2 ** 53 + 2 // a valid int64 for the API server
      const { response, problems } = await answer(app, '/sync', request)
      t.strictSame(problems, [], field)
      t.equal(response.statusCode, 400, field)
      t.match(response.json().message, new RegExp(`body\\.parent\\.spec\\.${field} must be <= 2147483647`), field)
    }
  },
)

t.test('a definition whose resources or readinessProbe the API server would refuse is DefinitionInvalid', async (t) => {
  const app = await buildTestApp(t)
  const edits: [string, (container: Loose) => void][] = [
    ['resources.limits.cpu "lots"', (container) => (container.resources = { limits: { cpu: 'lots' } })],
    ['readinessProbe.exec a string', (container) => (container.readinessProbe = { exec: 'rm -rf /' })],
  ]
  for (const [what, edit] of edits) {
    const request = runningRequest() as Loose
    edit(definitionOf(request).spec.pod.containers[0])
    const { response, problems } = await answer(app, '/sync', request)
    t.strictSame(problems, [], what)
    t.hasStrict(response.json(), { status: { phase: 'Error', reason: 'DefinitionInvalid' } }, what)
  }
})
