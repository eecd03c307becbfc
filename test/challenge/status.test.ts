// What the hook reads back from the status it wrote (src/challenge/status.ts), one row per rule: a status field is
// kept only when it is what the hook itself would have written, and anything else reads as absent.
import t from 'tap'
import { readPreviousStatus, type PreviousStatus } from '../../src/challenge/status.js'

const EMPTY: PreviousStatus = {
  phase: undefined,
  reason: undefined,
  message: '',
  admittedAt: undefined,
  startedAt: undefined,
  lastRenewedAt: undefined,
  finishedAt: undefined,
  renewalsSeen: 0,
  renewalsApplied: 0,
  run: 0,
  cost: undefined,
  definitionAuthor: undefined,
  pool: undefined,
  conditions: [],
}

t.test('readPreviousStatus: nothing usable reads as the empty status', async (t) => {
  for (const value of [undefined, null, 'Running', 42, [], [{ phase: 'Running' }]])
    t.strictSame(readPreviousStatus(value), EMPTY, JSON.stringify(value) ?? 'undefined')
})

t.test('readPreviousStatus: the phase, reason and message', async (t) => {
  const rows: [string, Record<string, unknown>, Partial<PreviousStatus>][] = [
    ...['Pending', 'Running', 'Error', 'Deleted', 'Terminating'].map(
      (phase): [string, Record<string, unknown>, Partial<PreviousStatus>] => [
        phase,
        { phase },
        { phase: phase as PreviousStatus['phase'] },
      ],
    ),
    ['a phase outside the contract', { phase: 'Paused' }, {}],
    ['an empty phase', { phase: '' }, {}],
    ['a phase that is not text', { phase: 1 }, {}],
    ['a reason and a message', { reason: 'Ready', message: 'up' }, { reason: 'Ready', message: 'up' }],
    ['an empty reason', { reason: '' }, {}],
    ['a reason that is not text', { reason: 5, message: 5 }, {}],
  ]
  for (const [what, raw, expected] of rows) t.strictSame(readPreviousStatus(raw), { ...EMPTY, ...expected }, what)
})

t.test('readPreviousStatus: times are RFC 3339 the API server accepts, or absent', async (t) => {
  const rows: [string, unknown, string | undefined][] = [
    ['whole seconds in UTC', '2026-11-26T12:00:00Z', '2026-11-26T12:00:00Z'],
    ['fractions of a second', '2026-11-26T12:00:00.123Z', '2026-11-26T12:00:00.123Z'],
    ['a positive offset', '2026-11-26T12:00:00+01:00', '2026-11-26T12:00:00+01:00'],
    ['a negative offset', '2026-11-26T12:00:00-05:30', '2026-11-26T12:00:00-05:30'],
    ['fractions and an offset', '2026-11-26T12:00:00.5+01:00', '2026-11-26T12:00:00.5+01:00'],
    ['text after the zone', '2026-11-26T12:00:00Zjunk', undefined],
    ['text before the date', 'x2026-11-26T12:00:00Z', undefined],
    ['no zone', '2026-11-26T12:00:00', undefined],
    ['a dot without digits', '2026-11-26T12:00:00.Z', undefined],
    ['an offset of one digit', '2026-11-26T12:00:00+1:00', undefined],
    ['an offset without minutes', '2026-11-26T12:00:00+01', undefined],
    ['an offset with one minute digit', '2026-11-26T12:00:00+01:0', undefined],
    ['letters as offset digits', '2026-11-26T12:00:00+ab:cd', undefined],
    ['a zone letter other than Z', '2026-11-26T12:00:00A01:00', undefined],
    ['the right shape, no real date', '2026-13-45T99:99:99Z', undefined],
    ['a date only', '2026-11-26', undefined],
    ['empty', '', undefined],
    ['a number', 1764158400000, undefined],
  ]
  for (const [what, value, expected] of rows) {
    const read = readPreviousStatus({ admittedAt: value, startedAt: value, lastRenewedAt: value, finishedAt: value })
    t.strictSame(
      [read.admittedAt, read.startedAt, read.lastRenewedAt, read.finishedAt],
      [expected, expected, expected, expected],
      what,
    )
  }
})

t.test(
  'readPreviousStatus: counters are safe non-negative integers, else 0; the cost 0 to 100, else unknown',
  async (t) => {
    const counters: [unknown, number][] = [
      [3, 3],
      [0, 0],
      [2147483647, 2147483647],
      [-1, 0],
      [1.5, 0],
      ['3', 0],
      [2 ** 53, 0],
      [null, 0],
    ]
    for (const [value, expected] of counters) {
      const read = readPreviousStatus({ renewalsSeen: value, renewalsApplied: value, run: value })
      t.strictSame(
        [read.renewalsSeen, read.renewalsApplied, read.run],
        [expected, expected, expected],
        `counter ${String(value)}`,
      )
    }
    const costs: [unknown, number | undefined][] = [
      [0, 0],
      [3, 3],
      [100, 100],
      [101, undefined],
      [-1, undefined],
      [2.5, undefined],
      ['5', undefined],
      [null, undefined],
    ]
    for (const [value, expected] of costs)
      t.equal(readPreviousStatus({ cost: value }).cost, expected, `cost ${String(value)}`)
  },
)

t.test(
  'readPreviousStatus: the definition author is any text, the empty one too; anything else is unrecorded',
  async (t) => {
    const rows: [string, unknown, string | undefined][] = [
      ['a user name', 'alice@example.org', 'alice@example.org'],
      ['the empty string: a definition that names no author', '', ''],
      ['absent', undefined, undefined],
      ['null', null, undefined],
      ['a number', 7, undefined],
      ['a list', ['alice'], undefined],
    ]
    for (const [what, value, expected] of rows)
      t.strictSame(readPreviousStatus({ definitionAuthor: value }), { ...EMPTY, definitionAuthor: expected }, what)
  },
)

t.test('readPreviousStatus: a condition is kept only whole (type, a known status, its time)', async (t) => {
  const time = '2026-11-26T12:00:00Z'
  const whole = { type: 'Ready', status: 'True', reason: 'Available', message: 'up', lastTransitionTime: time }
  const rows: [string, unknown, unknown[]][] = [
    ['a whole condition', [whole], [whole]],
    ['status False', [{ ...whole, status: 'False' }], [{ ...whole, status: 'False' }]],
    ['status Unknown', [{ ...whole, status: 'Unknown' }], [{ ...whole, status: 'Unknown' }]],
    ['a status outside True, False, Unknown', [{ ...whole, status: 'Maybe' }], []],
    ['no status', [{ ...whole, status: undefined }], []],
    ['no type', [{ ...whole, type: undefined }], []],
    ['an empty type', [{ ...whole, type: '' }], []],
    ['no transition time', [{ ...whole, lastTransitionTime: undefined }], []],
    ['a transition time that is no time', [{ ...whole, lastTransitionTime: 'yesterday' }], []],
    ['no reason: an empty one', [{ ...whole, reason: undefined }], [{ ...whole, reason: '' }]],
    ['a message that is not text: an empty one', [{ ...whole, message: 5 }], [{ ...whole, message: '' }]],
    ['an empty message kept as it is', [{ ...whole, message: '' }], [{ ...whole, message: '' }]],
    [
      'only the whole ones of several, in order',
      [{ ...whole, type: 'A' }, 'junk', null, { ...whole, status: 'no' }, { ...whole, type: 'B' }],
      [
        { ...whole, type: 'A' },
        { ...whole, type: 'B' },
      ],
    ],
    ['conditions that are not a list', { Ready: whole }, []],
  ]
  for (const [what, conditions, expected] of rows)
    t.strictSame(readPreviousStatus({ conditions }).conditions, expected, what)
})
