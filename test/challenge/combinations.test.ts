// Where two timers meet, one case each, with every expected instant worked out by hand from docs/api.md (the
// Expiry and Renew rules), not read from an answer: the hard end is the earliest of spec.deadline and
// availableUntil, a renewal is capped by either, a renewal that arrives at the expiring sync is refused, a renewal
// runs for the Challenge's own lifetime. The same rules over generated worlds and clocks: test/fuzz/timers.test.ts.
import t from 'tap'
import type { KubeObject } from '../../src/contract/protocol.js'
import { at, prepared, step, type Step } from '../helpers/drive.js'
import { challenge, conditionOf, readyWorld, webDefinition, type Json } from '../helpers/world.js'

/** A Challenge (spec merged) of web-login (definition spec merged) that became Running at t = 30 s (12:00:30). */
function runningAt30(spec: Json, definition: Json): { running: Step; related: KubeObject[]; children: KubeObject[] } {
  const related = [webDefinition(definition)]
  const first = prepared(challenge({ spec }), { related })
  const children = readyWorld(first.response.children)
  return { running: step(first.parent, { related, children, now: at(30) }), related, children }
}

function later(instance: ReturnType<typeof runningAt30>, seconds: number, spec: Json = {}): Step {
  const parent = { ...instance.running.parent, spec: { ...instance.running.parent.spec, ...spec } }
  return step(parent, { related: instance.related, children: instance.children, now: at(seconds) })
}

/** The timers of a status, and the verdict on a renewal. */
function timers(s: Step) {
  const renewal = conditionOf(s.status, 'RenewalAccepted')
  return {
    phase: s.status.phase,
    reason: s.status.reason,
    startedAt: s.status.startedAt,
    lastRenewedAt: s.status.lastRenewedAt,
    expiresAt: s.status.expiresAt,
    renewalsApplied: s.status.renewalsApplied,
    renewal: renewal === undefined ? undefined : `${String(renewal.status)}/${String(renewal.reason)}`,
  }
}

t.test('the hard end is the earlier of spec.deadline and availableUntil, whichever is set', async (t) => {
  // Running at 12:00:30 with a lifetime of 1800 s: 12:30:30, unless a hard end comes first.
  const rows: [string, Json, Json, string, string][] = [
    [
      'availableUntil before the deadline',
      { deadline: '2026-11-22T12:20:00Z' },
      { availableUntil: '2026-11-22T12:10:00Z' },
      '2026-11-22T12:10:00Z',
      'availableUntil',
    ],
    [
      'the deadline before availableUntil',
      { deadline: '2026-11-22T12:10:00Z' },
      { availableUntil: '2026-11-22T12:20:00Z' },
      '2026-11-22T12:10:00Z',
      'deadline',
    ],
    ['availableUntil alone', {}, { availableUntil: '2026-11-22T12:10:00Z' }, '2026-11-22T12:10:00Z', 'availableUntil'],
    [
      'both after the lifetime',
      { deadline: '2026-11-22T13:00:00Z' },
      { availableUntil: '2026-11-22T12:50:00Z' },
      '2026-11-22T12:30:30Z',
      'lifetime',
    ],
  ]
  for (const [what, spec, definition, expiresAt, by] of rows) {
    const instance = runningAt30(spec, definition)
    t.strictSame(
      timers(instance.running),
      {
        phase: 'Running',
        reason: 'Ready',
        startedAt: '2026-11-22T12:00:30Z',
        lastRenewedAt: undefined,
        expiresAt,
        renewalsApplied: 0,
        renewal: undefined,
      },
      `${what}: running until ${expiresAt}`,
    )
    const end = (Date.parse(expiresAt) - Date.parse('2026-11-22T12:00:00Z')) / 1000
    t.equal(later(instance, end - 1).status.phase, 'Running', `${what}: still Running a second before`)
    const ended = later(instance, end)
    t.strictSame(
      [ended.status.phase, ended.status.reason, ended.status.finishedAt],
      ['Deleted', by === 'lifetime' ? 'Expired' : 'PastDeadline', expiresAt],
      `${what}: Deleted at the instant`,
    )
    t.notOk(
      ended.response.children.some((child) => child.kind === 'Service' || child.kind === 'Ingress'),
      `${what}: no traffic path once ended`,
    )
  }
})

t.test('a renewal is capped by availableUntil as by the deadline, and refused once it cannot extend', async (t) => {
  // availableUntil 12:40: a renewal at 12:20 would run to 12:50, and runs to 12:40.
  const capped = later(runningAt30({ renewals: 0 }, { availableUntil: '2026-11-22T12:40:00Z' }), 1200, { renewals: 1 })
  t.strictSame(timers(capped), {
    phase: 'Running',
    reason: 'Ready',
    startedAt: '2026-11-22T12:00:30Z',
    lastRenewedAt: '2026-11-22T12:20:00Z',
    expiresAt: '2026-11-22T12:40:00Z',
    renewalsApplied: 1,
    renewal: 'True/Renewed',
  })
  // availableUntil 12:20 already caps the run (12:30:30 otherwise): nothing to extend.
  const refused = later(runningAt30({}, { availableUntil: '2026-11-22T12:20:00Z' }), 600, { renewals: 1 })
  t.strictSame(timers(refused), {
    phase: 'Running',
    reason: 'Ready',
    startedAt: '2026-11-22T12:00:30Z',
    lastRenewedAt: undefined,
    expiresAt: '2026-11-22T12:20:00Z',
    renewalsApplied: 0,
    renewal: 'False/PastDeadline',
  })
})

t.test('a renewal arriving at the expiring sync is refused: the run is over', async (t) => {
  // Running since 12:00:30 for 1800 s: the sync at 12:30:30 ends it, whatever the spec asks at that instant.
  const lifetime = later(runningAt30({}, {}), 1830, { renewals: 1 })
  t.strictSame(timers(lifetime), {
    phase: 'Deleted',
    reason: 'Expired',
    startedAt: '2026-11-22T12:00:30Z',
    lastRenewedAt: undefined,
    expiresAt: undefined,
    renewalsApplied: 0,
    renewal: 'False/NotRunning',
  })
  t.equal(lifetime.status.message, 'The instance reached the end of its lifetime.')
  t.strictSame(lifetime.status.renewalsSeen, 1, 'the request is acted on (refused) once')
  const deadline = later(runningAt30({ deadline: '2026-11-22T12:10:00Z' }, {}), 600, { renewals: 1 })
  t.strictSame(timers(deadline), {
    phase: 'Deleted',
    reason: 'PastDeadline',
    startedAt: '2026-11-22T12:00:30Z',
    lastRenewedAt: undefined,
    expiresAt: undefined,
    renewalsApplied: 0,
    renewal: 'False/NotRunning',
  })
  // A second before, the same request is accepted: 12:30:29 + 1800 s.
  const before = later(runningAt30({}, {}), 1829, { renewals: 1 })
  t.strictSame(
    [before.status.phase, before.status.expiresAt, timers(before).renewal],
    ['Running', '2026-11-22T13:00:29Z', 'True/Renewed'],
  )
})

t.test("a renewal runs for the Challenge's own lifetime, not the definition's", async (t) => {
  // spec.lifetimeSeconds 600 (the definition says 3600): Running at 12:00:30 until 12:10:30; renewed at 12:05 until 12:15.
  const instance = runningAt30({ lifetimeSeconds: 600 }, { lifetimeSeconds: 3600 })
  t.equal(instance.running.status.expiresAt, '2026-11-22T12:10:30Z')
  const renewed = later(instance, 300, { renewals: 1 })
  t.strictSame(timers(renewed), {
    phase: 'Running',
    reason: 'Ready',
    startedAt: '2026-11-22T12:00:30Z',
    lastRenewedAt: '2026-11-22T12:05:00Z',
    expiresAt: '2026-11-22T12:15:00Z',
    renewalsApplied: 1,
    renewal: 'True/Renewed',
  })
  const after = step(renewed.parent, { related: instance.related, children: instance.children, now: at(900) })
  t.strictSame([after.status.phase, after.status.reason], ['Deleted', 'Expired'], 'and ends then')
})
