/**
 * Shrunk cases found by fuzzing, one named test each.
 *
 * Fixed in the HTTP layer: nesting (see also test/http/bad-input.test.ts).
 * Open in src/challenge (reported, not fixed here): marked `todo`, so they run and show, without failing the
 * suite; drop the `todo` once the domain is fixed.
 */
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp } from '../helpers/app.js'
import { answerProblems } from './answers.js'
import { mutated, serialize, type Json } from './mutations.js'
import { runningRequest } from '../http/worlds.js'

type Loose = Record<string, any>

async function answer(app: FastifyInstance, url: string, request: Json) {
  const payload = serialize(request)
  const response = await app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json' } })
  return { response, problems: answerProblems(url, response.statusCode, response.body, JSON.parse(JSON.stringify(request))) }
}

function definitionOf(request: Loose): Loose {
  return Object.values(request.related['ChallengeDefinition.challenge-hooks.dev/v1alpha1'])[0] as Loose
}

t.test('fixed: an observed child nested 5000 levels deep made /finalize a 500 (stack overflow)', async (t) => {
  const app = await buildTestApp(t)
  // Shrunk: base "finalizing", [{op: 'deep', focus: 10 (children.Secret.v1), at: 5 (the Secret's data)}].
  const request = mutated('finalizing', [{ op: 'deep', focus: 10, at: 5 }])
  const { response, problems } = await answer(app, '/finalize', request)
  t.same(problems, [])
  t.equal(response.statusCode, 400)
  t.match(response.json().message, /nests objects or arrays deeper than 512 levels/)
})

t.test(
  'open: a previous startedAt at the end of the Date range makes /sync a 500',
  { todo: 'src/challenge: expiry = startedAt + lifetime overflows Date; formatTime throws RangeError' },
  async (t) => {
    const app = await buildTestApp(t)
    for (const field of ['startedAt', 'lastRenewedAt']) {
      const request = runningRequest() as Loose
      request.parent.status[field] = '+275760-09-13T00:00:00.000Z'
      const { response, problems } = await answer(app, '/sync', request as Json)
      t.same(problems, [], field)
      t.ok(response.statusCode < 500, `${field}: ${response.statusCode}`)
    }
  },
)

t.test(
  'open: previous-status times that Date.parse accepts but are not RFC 3339 are carried into the status',
  { todo: 'src/challenge/status.ts time(): accepts any Date.parse-able text; the CRD (format: date-time) refuses the status' },
  async (t) => {
    const app = await buildTestApp(t)
    for (const [field, value] of [
      ['startedAt', '1'],
      ['admittedAt', 'Nov 22 2026'],
      ['admittedAt', '2026-11-22'],
    ] as const) {
      const request = runningRequest() as Loose
      request.parent.status[field] = value
      const { problems } = await answer(app, '/sync', request as Json)
      t.same(problems, [], `${field} = ${value}`)
    }
    const request = runningRequest() as Loose
    request.parent.status.conditions[0].lastTransitionTime = '1'
    t.same((await answer(app, '/sync', request as Json)).problems, [], 'condition lastTransitionTime')
  },
)

t.test(
  'open: spec.restarts or spec.renewals beyond 2^53 give status counters the hook cannot read back',
  { todo: 'src/challenge/api.ts: renewals/restarts have no maximum; status.run 2^53+2 reads back as 0, a new run every sync' },
  async (t) => {
    const app = await buildTestApp(t)
    for (const field of ['restarts', 'renewals']) {
      const request = runningRequest() as Loose
      request.parent.spec[field] = 2 ** 53 + 2 // a valid int64 for the API server
      const { problems } = await answer(app, '/sync', request as Json)
      t.same(problems, [], field)
    }
  },
)

t.test(
  'open: a definition whose resources or readinessProbe the API server refuses yields an invalid Deployment',
  { todo: 'src/challenge/definition.ts: quantities and probes are not checked; should be Error/DefinitionInvalid' },
  async (t) => {
    const app = await buildTestApp(t)
    const edits: [string, (container: Loose) => void][] = [
      ['resources.limits.cpu "lots"', (container) => (container.resources = { limits: { cpu: 'lots' } })],
      ['readinessProbe.exec a string', (container) => (container.readinessProbe = { exec: 'rm -rf /' })],
    ]
    for (const [what, edit] of edits) {
      const request = runningRequest() as Loose
      edit(definitionOf(request).spec.pod.containers[0])
      const { response, problems } = await answer(app, '/sync', request as Json)
      t.same(problems, [], what)
      t.match(response.json(), { status: { phase: 'Error', reason: 'DefinitionInvalid' } }, what)
    }
  },
)
