// What CI counts (.ci/run and .ci/suite.sh): a suite is a failure when tap says so, when it skipped or left a todo,
// when it exited non-zero with no failing assertion, or printed no summary at all; a todo with a failing assertion
// fails under TAP_FAIL_TODO, which CI sets; UPDATE_FIXTURES is unset under CI and refused by the fixtures' test.
import { spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { updateMode } from '../helpers/update-mode.js'

const root = process.cwd()

/** Sources .ci/suite.sh, runs `script`, and prints the totals. */
function ci(script: string, env: Record<string, string> = {}): { out: string; totals: Record<string, number> } {
  const result = spawnSync(
    'bash',
    [
      '-c',
      `set -uo pipefail; . .ci/suite.sh; ${script}; echo "TOTALS passed=$passed failed=$failed skipped=$skipped todo=$todo status=$status"`,
    ],
    {
      cwd: root,
      encoding: 'utf8',
      env: { PATH: process.env.PATH as string, ...env },
    },
  )
  const line = result.stdout.split('\n').find((each) => each.startsWith('TOTALS ')) ?? ''
  const totals = Object.fromEntries([...line.matchAll(/(\w+)=(\d+)/g)].map((m) => [m[1], Number(m[2])]))
  return { out: result.stdout, totals }
}

/** A suite that prints `summary` and exits with `code`, as tap does. */
const suite = (summary: string, code = 0) => `run_suite demo bash -c 'echo "${summary}"; exit ${code}'`

t.test('run_suite: a todo, a skip, a silent non-zero exit and a missing summary each fail CI', async (t) => {
  const rows: [string, string, Record<string, number>][] = [
    ['all passed', suite('# { total: 3, pass: 3 }'), { passed: 3, failed: 0, skipped: 0, todo: 0, status: 0 }],
    [
      'a failing assertion',
      suite('# { total: 3, pass: 2, fail: 1 }', 1),
      { passed: 2, failed: 1, skipped: 0, todo: 0, status: 1 },
    ],
    [
      'a todo (tap exits 0)',
      suite('# { total: 3, pass: 2, todo: 1 }'),
      { passed: 2, failed: 1, skipped: 0, todo: 1, status: 1 },
    ],
    [
      'a skip (tap exits 0)',
      suite('# { total: 3, pass: 2, skip: 1 }'),
      { passed: 2, failed: 1, skipped: 1, todo: 0, status: 1 },
    ],
    [
      'a non-zero exit with no failing assertion (coverage)',
      suite('# { total: 3, pass: 3 }', 1),
      { passed: 3, failed: 1, skipped: 0, todo: 0, status: 1 },
    ],
    [
      'no summary (the type check failed first)',
      `run_suite demo bash -c 'echo "error TS2322"; exit 2'`,
      { passed: 0, failed: 1, skipped: 0, todo: 0, status: 1 },
    ],
  ]
  for (const [what, script, totals] of rows) t.strictSame(ci(script).totals, totals, what)
  const two = ci(`${suite('# { total: 2, pass: 2 }')}; ${suite('# { total: 5, pass: 4, todo: 1 }')}`)
  t.strictSame(
    two.totals,
    { passed: 6, failed: 1, skipped: 0, todo: 1, status: 1 },
    'the totals add up over suites, and one failure fails all',
  )
  t.match(two.out, 'demo: 1 todo (CI expects none', 'and CI says why')
})

t.test('ci_guards: UPDATE_FIXTURES is unset (and said), TAP_FAIL_TODO is set', async (t) => {
  const guarded = ci('ci_guards; echo "UPDATE=${UPDATE_FIXTURES:-unset} FAIL_TODO=${TAP_FAIL_TODO:-unset}"', {
    UPDATE_FIXTURES: '1',
  })
  t.match(guarded.out, 'UPDATE_FIXTURES=1 is ignored under CI (unset)')
  t.match(guarded.out, 'UPDATE=unset FAIL_TODO=1')
  t.notMatch(ci('ci_guards').out, 'UPDATE_FIXTURES', 'nothing said when it was not set')
})

t.test('a todo test with a failing assertion fails its file under TAP_FAIL_TODO, and passes without it', async (t) => {
  const dir = t.testdir({})
  const file = join(dir, 'todo.test.mjs')
  writeFileSync(file, `import t from 'tap'\nt.test('known broken', { todo: true }, async (t) => { t.equal(1, 2) })\n`)
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith('TAP') && !key.startsWith('_TAPJS')),
  )
  // The test directory is under the repository's .tap/: the file's `import 'tap'` finds the project's tap.
  const run = (extra: Record<string, string>) =>
    spawnSync(process.execPath, [file], { cwd: root, encoding: 'utf8', env: { ...env, ...extra } })
  const plain = run({})
  t.equal(plain.status, 0, 'without TAP_FAIL_TODO a failing todo passes: what CI must not count as passed')
  t.match(plain.stdout, /# TODO/)
  const failing = run({ TAP_FAIL_TODO: '1' })
  t.equal(failing.status, 1, `with TAP_FAIL_TODO=1 it fails:\n${failing.stdout}`)
  t.match(failing.stdout, /^not ok 1 - known broken/m)
})

t.test('UPDATE_FIXTURES rewrites the fixtures only outside CI', async (t) => {
  t.strictSame(updateMode({}), { update: false })
  t.strictSame(updateMode({ UPDATE_FIXTURES: '0' }), { update: false })
  t.strictSame(updateMode({ UPDATE_FIXTURES: '1' }), { update: true })
  t.strictSame(updateMode({ UPDATE_FIXTURES: '1', CI: 'false' }), { update: true })
  t.strictSame(updateMode({ UPDATE_FIXTURES: '1', REQUIRE_TOOLS: '1' }), {
    update: false,
    refused: 'UPDATE_FIXTURES=1 under CI (REQUIRE_TOOLS=1): the fixtures are checked there, never rewritten',
  })
  t.strictSame(updateMode({ UPDATE_FIXTURES: '1', CI: 'true' }), {
    update: false,
    refused: 'UPDATE_FIXTURES=1 under CI (CI=true): the fixtures are checked there, never rewritten',
  })
})

t.test(
  '.ci/run uses them: the guards before any suite, every suite through run_suite, the totals at the end',
  async (t) => {
    const run = readFileSync(join(root, '.ci/run'), 'utf8').split('\n')
    const at = (pattern: RegExp) => run.findIndex((line) => pattern.test(line))
    const suites = run.filter((line) => /^run_suite /.test(line))
    t.ok(
      at(/^\. \.ci\/suite\.sh$/) >= 0 && at(/^\. \.ci\/suite\.sh$/) < at(/^ci_guards$/),
      'sources .ci/suite.sh, then ci_guards',
    )
    t.ok(at(/^ci_guards$/) < at(/^run_suite /), 'the guards come before the first suite')
    t.strictSame(
      suites.map((line) => line.split('"')[1]),
      [
        'unit, e2e, fuzz, manifests (npm test)',
        'load (npm run test:load)',
        'cluster (npm run test:cluster)',
        'node (npm run test:node)',
      ],
    )
    t.match(
      run.filter((line) => line.trim() !== '').at(-2),
      /^echo "\$passed passed, \$failed failed"$/,
      'the closing line: exactly "N passed, N failed", what CI reads',
    )
    t.equal(run.filter((line) => line.trim() !== '').at(-1), 'exit "$status"')
  },
)
