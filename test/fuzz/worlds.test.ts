/**
 * Fuzzing whole worlds rather than bytes (world-gen.ts), sent to /sync and /finalize. The answer must keep the
 * contract (see answers.ts) and be the same bytes when asked twice. Decisions are checked in decisions.test.ts.
 *
 * The known problems outside the generated range are the todo tests in regressions.test.ts.
 */
import t from 'tap'
import fc from 'fast-check'
import { buildTestApp } from '../helpers/app.js'
import { answerProblems } from './answers.js'
import { requestFor, runs, SEED, world } from './world-gen.js'

t.test('any plausible world: the answer keeps the contract and is deterministic', async (t) => {
  const app = await buildTestApp(t)
  const phases = new Map<string, number>()
  await fc.assert(
    fc.asyncProperty(world, async (w) => {
      const { url, body } = requestFor(w)
      const payload = JSON.stringify(body)
      const response = await app.inject({
        method: 'POST',
        url,
        payload,
        headers: { 'content-type': 'application/json' },
      })
      const problems = answerProblems(url, response.statusCode, response.body, body)
      if (response.statusCode === 200) {
        const again = await app.inject({
          method: 'POST',
          url,
          payload,
          headers: { 'content-type': 'application/json' },
        })
        if (again.body !== response.body) problems.push('the same request gave different bytes')
        const phase = String(JSON.parse(response.body).status.phase)
        phases.set(phase, (phases.get(phase) ?? 0) + 1)
      }
      if (problems.length > 0) throw new Error(`${url} answered ${response.statusCode}:\n  ${problems.join('\n  ')}`)
    }),
    { seed: SEED, numRuns: runs(300) },
  )
  for (const phase of ['Pending', 'Running', 'Error', 'Deleted', 'Terminating']) {
    t.ok((phases.get(phase) ?? 0) > 0, `reached ${phase} (${JSON.stringify([...phases])})`)
  }
})
