// Every time the hook writes is one the API server accepts, whatever the times it reads: a status the CRD refuses
// is never written (the platform then shows None, admittedAt is recomputed at every sync, siblings see no cost).
// The oracle is the API server's own check of a `format: date-time` (kube-openapi strfmt.IsDateTime), written here
// from its source, not from the hook's.
import t from 'tap'
import { at, prepared, step } from '../helpers/drive.js'
import { challenge, readyWorld, webDefinition, type Json } from '../helpers/world.js'

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** strfmt.IsDateTime: lowercase, split at "t", a Go "2006-01-02" date, then the time-of-day pattern. */
function apiServerAccepts(value: string): boolean {
  if (value.length < 4) return false
  const [date = '', time, ...rest] = value.toLowerCase().split('t')
  void rest
  const d = /^(\d{4}|[+-]\d{3})-(\d\d)-(\d\d)$/.exec(date)
  if (!d || time === undefined) return false
  const [year, month, day] = [Number(d[1]), Number(d[2]), Number(d[3])]
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  if (month < 1 || month > 12 || day < 1 || day > (month === 2 && leap ? 29 : (DAYS[month - 1] as number))) return false
  const m = /^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$/.exec(time)
  return m !== null && (m[1] as string) <= '23' && (m[2] as string) <= '59' && (m[3] as string) <= '59'
}

/** Every time field of a status, the conditions' included. */
function writtenTimes(status: Json): string[] {
  const times = ['admittedAt', 'startedAt', 'lastRenewedAt', 'expiresAt', 'finishedAt'].flatMap((field) =>
    typeof status[field] === 'string' ? [status[field]] : [],
  )
  for (const condition of (status.conditions ?? []) as Json[]) times.push(condition.lastTransitionTime as string)
  return times
}

const EXTREMES = [
  '9999-12-31T23:59:59-05:00',
  '9999-12-31T23:59:59-99:99',
  '9999-12-31t23:59:59z',
  '0000-01-01T00:00:00+01:00',
  '0000-01-01T00:00:00+99:99',
  '-999-01-01T00:00:00Z',
  '2000-01-01T00:00:00+24:00',
  '2100-02-28T23:59:59.999999999Z',
]

t.test('the extremes of every time field: every time written is one the API server accepts', async (t) => {
  for (const extreme of EXTREMES) {
    const worlds: [string, Json, Json][] = [
      ['availableUntil', { availableUntil: extreme }, {}],
      ['availableFrom', { availableFrom: extreme }, {}],
      ['deadline', {}, { deadline: extreme }],
      ['all three', { availableFrom: extreme, availableUntil: extreme }, { deadline: extreme }],
    ]
    for (const [field, definitionSpec, challengeSpec] of worlds) {
      const related = [webDefinition(definitionSpec)]
      const what = `${field} ${extreme}`
      const first = prepared(challenge({ spec: challengeSpec }), { related, now: at(0) })
      const running = step(first.parent, { related, children: readyWorld(first.response.children), now: at(10) })
      const renewed = step(
        { ...running.parent, spec: { ...running.parent.spec, renewals: 1 } },
        { related, children: readyWorld(first.response.children), now: at(20) },
      )
      for (const { status } of [first, running, renewed]) {
        for (const time of writtenTimes(status))
          t.ok(apiServerAccepts(time), `${what}: ${String(status.phase)} writes ${time}`)
        t.notMatch(
          String(status.message),
          /[+-]0\d{5}-|NaN|Invalid Date/,
          `${what}: the message names a time people can read`,
        )
      }
    }
  }
})

t.test('a definition open until the last second of 9999 west of UTC: expiresAt is that second in UTC', async (t) => {
  const related = [webDefinition({ availableUntil: '9999-12-31T23:59:59-05:00' })]
  const first = prepared(challenge(), { related })
  t.equal(first.status.expiresAt, '9999-12-31T23:59:59Z', 'clamped to the last second the API server accepts')
  t.equal(first.status.phase, 'Pending')
  const running = step(first.parent, { related, children: readyWorld(first.response.children), now: at(10) })
  t.hasStrict(running.status, { phase: 'Running', expiresAt: '2026-11-22T12:30:10Z' }, 'the lifetime ends first')
})

t.test('a lowercase deadline and a +24:00 offset are read, not ignored', async (t) => {
  const related = [webDefinition()]
  const lower = prepared(challenge({ spec: { deadline: '2026-11-22t12:10:00z' } }), { related })
  t.equal(lower.status.expiresAt, '2026-11-22T12:10:00Z')
  const ahead = prepared(challenge({ spec: { deadline: '2026-11-23T12:10:00+24:00' } }), { related })
  t.equal(ahead.status.expiresAt, '2026-11-22T12:10:00Z', 'a day ahead of UTC')
  const past = step(challenge({ spec: { deadline: '2026-11-23T11:00:00+24:00' } }), { related })
  t.hasStrict(past.status, { phase: 'Deleted', reason: 'PastDeadline' }, 'a deadline already past is past, not absent')
})
