// startReport: the steps of a start read from the conditions of the answer that makes the instance Running.
import t from 'tap'
import { startReport } from '../../src/challenge/start-report.js'

const parent = (creationTimestamp: unknown = '2026-11-22T11:59:00Z') => ({
  metadata: { namespace: 'challenges', creationTimestamp },
  spec: { definitionRef: { name: 'web-login' } },
})
const condition = (type: string, lastTransitionTime: string, status = 'True') => ({
  type,
  status,
  lastTransitionTime,
  reason: 'x',
  message: 'x',
})
const running = (conditions: object[], run = 0) => ({ phase: 'Running', reason: 'Ready', run, conditions })
const ALL = [
  condition('Admitted', '2026-11-22T12:00:00Z'),
  condition('Scheduled', '2026-11-22T12:00:01Z'),
  condition('ContainersStarted', '2026-11-22T12:00:04Z'),
  condition('WorkloadReady', '2026-11-22T12:00:10Z'),
  condition('Ready', '2026-11-22T12:00:12Z'),
]

t.test('every step, and the total from creation', async (t) => {
  t.strictSame(startReport(parent(), { phase: 'Pending', run: 0 }, running(ALL)), {
    namespace: 'challenges',
    definition: 'web-login',
    seconds: { queue: 60, scheduling: 1, starting: 3, readiness: 6, endpoint: 2 },
    total: 72,
  })
  t.strictSame(
    startReport(parent(), undefined, running(ALL))?.total,
    72,
    'a first answer that is already Running counts too',
  )
})

t.test('only a transition into Running', async (t) => {
  t.equal(startReport(parent(), { phase: 'Running', run: 0 }, running(ALL)), undefined, 'already Running')
  t.equal(
    startReport(parent(), { phase: 'Pending', run: 0 }, { ...running(ALL), phase: 'Pending' }),
    undefined,
    'not Running yet',
  )
  t.strictSame(
    startReport(parent(), { phase: 'Running', run: 0 }, running(ALL, 1))?.seconds,
    { scheduling: 1, starting: 3, readiness: 6, endpoint: 2 },
    'a restart, Running again: no queue step',
  )
  t.strictSame(
    startReport(parent(), { phase: 'Running', run: 0 }, running(ALL, 1))?.total,
    12,
    'counted from its admission',
  )
})

t.test('a step without both instants is left out; clocks that disagree give 0, not a negative time', async (t) => {
  const noScheduled = ALL.filter((each) => each.type !== 'Scheduled')
  t.strictSame(startReport(parent(), {}, running(noScheduled))?.seconds, { queue: 60, readiness: 6, endpoint: 2 })
  const falseStarted = ALL.map((each) => (each.type === 'ContainersStarted' ? { ...each, status: 'False' } : each))
  t.strictSame(startReport(parent(), {}, running(falseStarted))?.seconds, { queue: 60, scheduling: 1, endpoint: 2 })
  t.strictSame(
    startReport(parent('2026-11-22T12:00:30Z'), {}, running(ALL))?.seconds.queue,
    0,
    'created "after" admission (a skewed clock)',
  )
  t.strictSame(startReport(parent('2026-11-22T12:00:30Z'), {}, running(ALL))?.total, 0)
  t.strictSame(startReport(parent('not a time'), {}, running(ALL))?.total, 12, 'no creation time: from admission')
  t.equal(
    startReport(parent(), {}, running(ALL.filter((each) => each.type !== 'Ready'))),
    undefined,
    'no Ready instant: nothing to report',
  )
  t.equal(
    startReport(parent('not a time'), {}, running(ALL.filter((each) => each.type !== 'Admitted'))),
    undefined,
    'no start instant either',
  )
  t.equal(
    startReport(parent(), {}, { phase: 'Running', run: 0, conditions: 'none' }),
    undefined,
    'conditions of another shape',
  )
})
