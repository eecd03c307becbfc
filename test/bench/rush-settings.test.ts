// bench:rush's command line (bench/rush/settings.ts): its --name=value flags and RUSH_* variables, and the usage
// errors that end the run with exit code 2 before anything starts. No benchmark runs here.
import t from 'tap'
import { readSettings, UsageError } from '../../bench/rush/settings.js'

const env = { METACONTROLLER_BIN: '/usr/local/bin/metacontroller' }

t.test('flags and variables', async (t) => {
  const settings = readSettings({ ...env, RUSH_OWNERS: '7' }, [
    '--challenges=200',
    '--budget-scope=Cluster',
    '--running-ms=1000-2000',
    '--label',
    'small',
  ])
  t.match(settings, { challenges: 200, owners: 7, budgetScope: 'Cluster', runningMs: [1000, 2000], label: 'small' })
  t.match(
    readSettings(env, []),
    { challenges: 2000, owners: 500, budgetScope: 'Namespace', label: 'defaults' },
    'the defaults',
  )
  t.equal(
    readSettings({ ...env, RUSH_CHALLENGES: '10' }, ['--challenges=20']).challenges,
    20,
    'a flag wins over its variable',
  )
})

t.test('the fault run: --faults brings two hook replicas', async (t) => {
  const pick = (settings: { faults: boolean; hookReplicas: number }) => ({
    faults: settings.faults,
    hookReplicas: settings.hookReplicas,
  })
  t.strictSame(pick(readSettings(env, [])), { faults: false, hookReplicas: 1 }, 'the defaults: one process, no front')
  t.strictSame(pick(readSettings(env, ['--faults'])), { faults: true, hookReplicas: 2 })
  t.strictSame(pick(readSettings(env, ['--faults', '--hook-replicas=3'])), { faults: true, hookReplicas: 3 })
  t.strictSame(pick(readSettings(env, ['--hook-replicas=2'])), { faults: false, hookReplicas: 2 }, 'the pair')
  t.strictSame(pick(readSettings({ ...env, RUSH_FAULTS: '1' }, [])), { faults: true, hookReplicas: 2 })
  t.throws(() => readSettings(env, ['--faults', '--hook-replicas=1']), {
    message:
      'bench:rush: hook_replicas must be a whole number >= 2 with faults (a rolling restart keeps one up), got 1',
  })
  t.throws(() => readSettings(env, ['--hook-replicas=1.5']), {
    message: 'bench:rush: hook_replicas must be a whole number >= 1, got 1.5',
  })
  t.throws(() => readSettings({ ...env, RUSH_FAULTS: 'yes' }, []), {
    message: 'bench:rush: faults must be one of false, true, 0, 1, got yes',
  })
  t.throws(() => readSettings(env, ['--faults=1']), {
    message: /^bench:rush: Option '--faults' does not take an argument/,
  })
})

t.test('usage errors', async (t) => {
  const usage = /\nusage: npm run bench:rush -- \[--challenges=…\].*\[--budget-scope=…\]/
  t.throws(
    () => readSettings(env, ['--nope=1']),
    new UsageError("bench:rush: Unknown option '--nope'"),
    'an unknown flag',
  )
  t.throws(() => readSettings(env, ['--nope=1']), { message: usage }, 'names the flags')
  t.throws(
    () => readSettings(env, ['extra']),
    { message: /^bench:rush: Unexpected argument 'extra'/ },
    'a positional argument',
  )
  t.throws(() => readSettings(env, ['--challenges=-1']), {
    name: 'Error',
    message: 'bench:rush: challenges must be a number >= 0, got -1',
  })
  t.throws(() => readSettings(env, ['--ready-ms=3-1']), {
    message: 'bench:rush: ready_ms must be a range like 1000-3000, got 3-1',
  })
  t.throws(() => readSettings(env, ['--budget-scope=World']), {
    message: 'bench:rush: budget_scope must be one of Namespace, Cluster, None, got World',
  })
  t.throws(() => readSettings({}, []), { message: /set METACONTROLLER_BIN/ })
  for (const args of [['--nope=1'], ['--challenges=x'], ['--budget-scope=World']]) {
    t.ok(captured(() => readSettings(env, args)) instanceof UsageError, `${args.join(' ')}: a UsageError (exit code 2)`)
  }
})

function captured(run: () => unknown): unknown {
  try {
    run()
  } catch (error) {
    return error
  }
  return undefined
}
