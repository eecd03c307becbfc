// Times read as the API server reads a `format: date-time` and written as it accepts one. The expectations are the
// API server's (kube-openapi's strfmt.IsDateTime, which the CRDs' format uses: lowercased, split at each "t", a Go
// "2006-01-02" date, then ^HH:MM:SS(.digits)?(z|±HH:MM)$ with HH <= 23), worked out by hand for each row.
import t from 'tap'
import { DATE_TIME } from '../../src/contract/api.js'
import { EARLIEST_TIME, formatTime, LATEST_TIME, readTime } from '../../src/challenge/time.js'

t.test('readTime: what the API server stores, and the instant it names', async (t) => {
  const rows: [string, string | undefined][] = [
    ['2026-11-27T18:00:00Z', '2026-11-27T18:00:00.000Z'],
    ['2099-01-01t00:00:00z', '2099-01-01T00:00:00.000Z'],
    ['2026-11-27T18:00:00+01:00', '2026-11-27T17:00:00.000Z'],
    ['2026-11-27T18:00:00-05:30', '2026-11-27T23:30:00.000Z'],
    // Any two digits make an offset for the API server: +24:00 is a day ahead, +99:99 is 100 h 39 min ahead.
    ['2000-01-01T00:00:00+24:00', '1999-12-31T00:00:00.000Z'],
    ['2000-01-10T00:00:00+99:99', '2000-01-05T19:21:00.000Z'],
    ['9999-12-31T23:59:59-05:00', '+010000-01-01T04:59:59.000Z'],
    ['0000-01-01T00:00:00Z', '0000-01-01T00:00:00.000Z'],
    ['0000-01-01T00:00:00+01:00', '-000001-12-31T23:00:00.000Z'],
    // Go's year is four characters and may carry a sign.
    ['-001-06-15T12:00:00Z', '-000001-06-15T12:00:00.000Z'],
    ['+999-06-15T12:00:00Z', '0999-06-15T12:00:00.000Z'],
    // The years 0-99 are those years, not 1900-1999.
    ['0050-03-01T00:00:00Z', '0050-03-01T00:00:00.000Z'],
    // A fraction, after any character; whole seconds are kept.
    ['2026-11-27T18:00:00.999Z', '2026-11-27T18:00:00.000Z'],
    ['2026-11-27T18:00:00,5Z', '2026-11-27T18:00:00.000Z'],
    ['2026-11-27T18:00:00x123z', '2026-11-27T18:00:00.000Z'],
    // Whatever follows a second "t" is not looked at.
    ['2026-11-27T18:00:00Zthe-end', '2026-11-27T18:00:00.000Z'],
    // Leap days as the Gregorian calendar has them.
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['2000-02-29T00:00:00Z', '2000-02-29T00:00:00.000Z'],
    ['1900-02-29T00:00:00Z', undefined],
    ['2026-02-29T00:00:00Z', undefined],
    ['2026-04-31T00:00:00Z', undefined],
    ['2026-13-01T00:00:00Z', undefined],
    ['2026-00-10T00:00:00Z', undefined],
    ['2026-11-00T00:00:00Z', undefined],
    ['2026-11-27T24:00:00Z', undefined],
    ['2026-11-27T23:60:00Z', undefined],
    ['2026-11-27T23:00:60Z', undefined],
    ['2026-11-27 18:00:00Z', undefined],
    ['2026-11-27T18:00:00', undefined],
    ['2026-11-27T18:00Z', undefined],
    ['2026-11-27T18:00:00+0100', undefined],
    ['26-11-27T18:00:00Z', undefined],
    ['2026-1-27T18:00:00Z', undefined],
    ['x2026-11-27T18:00:00Z', undefined],
    ['', undefined],
    ['2026', undefined],
  ]
  for (const [text, instant] of rows) {
    const read = readTime(text)
    t.equal(read === undefined ? undefined : new Date(read).toISOString(), instant, JSON.stringify(text))
  }
  for (const other of [undefined, null, 20261127, { toString: 1 }, ['2026-11-27T18:00:00Z']]) {
    t.equal(readTime(other), undefined, `not a string: ${JSON.stringify(other)}`)
  }
})

t.test("DATE_TIME: the hook's schema lets through every date-time the API server stores", async (t) => {
  const pattern = new RegExp(DATE_TIME)
  const stored = [
    '2099-01-01t00:00:00z',
    '2000-01-01T00:00:00+24:00',
    '9999-12-31T23:59:59-05:00',
    '-001-06-15T12:00:00Z',
    '2026-11-27T18:00:00,5Z',
    '2026-11-27T18:00:00Zthe-end',
  ]
  for (const text of stored) t.ok(pattern.test(text), text)
  const refused = [
    '2026-11-27T24:00:00Z',
    '2026-11-27 18:00:00Z',
    '2026-11-27T18:00:00',
    '2026-11-27T18:00:00+0100',
    '26-11-27T18:00:00Z',
  ]
  for (const text of refused) t.notOk(pattern.test(text), text)
})

t.test('formatTime: RFC 3339 at whole seconds in UTC, never outside the years the API server accepts', async (t) => {
  t.equal(formatTime(Date.UTC(2026, 10, 27, 18, 0, 0, 999)), '2026-11-27T18:00:00Z')
  t.equal(formatTime(Date.UTC(9999, 11, 31, 23, 59, 59)), '9999-12-31T23:59:59Z')
  t.equal(
    formatTime(Date.UTC(9999, 11, 31, 23, 59, 59) + 1000),
    '9999-12-31T23:59:59Z',
    'the year 10000: the last second of 9999',
  )
  t.equal(formatTime(readTime('9999-12-31T23:59:59-05:00') as number), '9999-12-31T23:59:59Z')
  t.equal(formatTime(8.64e15), '9999-12-31T23:59:59Z', "JavaScript's last instant")
  t.equal(
    formatTime(readTime('0000-01-01T00:00:00+01:00') as number),
    '0000-01-01T00:00:00Z',
    'before the year 0: its first second',
  )
  t.equal(formatTime(-8.64e15), '0000-01-01T00:00:00Z')
  t.equal(new Date(EARLIEST_TIME).toISOString(), '0000-01-01T00:00:00.000Z')
  t.equal(new Date(LATEST_TIME).toISOString(), '9999-12-31T23:59:59.000Z')
})

t.test(
  'readTime: both parts whole (the date ends at the t, the time of day starts there), the 29th day only in February',
  async (t) => {
    const rows: [string, string, number | undefined][] = [
      ['a longer day than two digits', '2026-01-011T12:00:00Z', undefined],
      ['something before the time of day', '2026-01-01Tx12:00:00Z', undefined],
      ['the 31st of January in a leap year', '2024-01-31T00:00:00Z', Date.parse('2024-01-31T00:00:00Z')],
      ['the 30th of April in a leap year', '2024-04-30T23:59:59Z', Date.parse('2024-04-30T23:59:59Z')],
      ['the 29th of February in a leap year', '2024-02-29T00:00:00Z', Date.parse('2024-02-29T00:00:00Z')],
    ]
    for (const [what, text, instant] of rows) t.equal(readTime(text), instant, what)
  },
)
