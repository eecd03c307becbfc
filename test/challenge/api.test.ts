// The Challenge's spec as the contract writes it (src/contract/api.ts, ChallengeSpecSchema; the HTTP layer checks
// every request against it), one row per rule: a valid spec, then specs that each break one rule. The checker is
// the hooks' own (src/contract/validator.ts), the one the HTTP layer and definition.ts use.
import t from 'tap'
import { compileSchema } from '../../src/contract/validator.js'
import { Bounds, ChallengeSpecSchema, MAX_COUNTER } from '../../src/contract/api.js'

const check = compileSchema(ChallengeSpecSchema)
const valid = { definitionRef: { name: 'web-login' }, owner: { kind: 'Team', id: 'alice' } }
const spec = (changes: Record<string, unknown>) => ({ ...valid, ...changes })

t.test('ChallengeSpecSchema: what a Challenge may say', async (t) => {
  const rows: [string, Record<string, unknown>][] = [
    ['the least spec', valid],
    ['a User owner', spec({ owner: { kind: 'User', id: 'u-1' } })],
    [
      'every optional field',
      spec({
        desiredState: 'Stopped',
        stopReason: 'Solved',
        lifetimeSeconds: 60,
        deadline: '2026-11-26T12:00:00Z',
        renewals: 0,
        restarts: MAX_COUNTER,
        parameters: { LEVEL: 'hard', _seed: '' },
      }),
    ],
    ['Running', spec({ desiredState: 'Running' })],
    ['the longest lifetime', spec({ lifetimeSeconds: 86400 })],
    ['a deadline with fractions and an offset', spec({ deadline: '2026-11-26T12:00:00.123+01:00' })],
    ['fields the contract does not know, kept', spec({ futureField: { any: 'thing' } })],
    [
      'sixteen parameters',
      spec({ parameters: Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`P${i}`, 'x'])) }),
    ],
    ['a parameter value at its bound', spec({ parameters: { P: 'x'.repeat(Bounds.text) } })],
    // As the API server counts: characters, not UTF-16 units (each of these is two).
    ['a stopReason of 64 characters outside the BMP', spec({ stopReason: '🏁'.repeat(64) })],
  ]
  for (const [what, value] of rows) t.ok(check(value), what, { errors: check.errors })
})

t.test('ChallengeSpecSchema: each rule refuses', async (t) => {
  const rows: [string, Record<string, unknown>][] = [
    ['no definitionRef', { owner: valid.owner }],
    ['an empty definition name', spec({ definitionRef: { name: '' } })],
    ['a definition name of 254 characters', spec({ definitionRef: { name: 'd'.repeat(254) } })],
    ['no owner', { definitionRef: valid.definitionRef }],
    ['an owner kind outside User and Team', spec({ owner: { kind: 'Group', id: 'alice' } })],
    ['an empty owner kind', spec({ owner: { kind: '', id: 'alice' } })],
    ['an owner id that is no label value', spec({ owner: { kind: 'Team', id: 'Alice!' } })],
    ['an owner id of 64 characters', spec({ owner: { kind: 'Team', id: 'a'.repeat(64) } })],
    ['an empty owner id', spec({ owner: { kind: 'Team', id: '' } })],
    ['a desiredState outside Running and Stopped', spec({ desiredState: 'Paused' })],
    ['an empty desiredState', spec({ desiredState: '' })],
    ['a stopReason of 65 characters', spec({ stopReason: 'r'.repeat(65) })],
    ['a lifetime under a minute', spec({ lifetimeSeconds: 59 })],
    ['a lifetime over a day', spec({ lifetimeSeconds: 86401 })],
    ['a lifetime that is not an integer', spec({ lifetimeSeconds: 60.5 })],
    ['a deadline that is not a date-time', spec({ deadline: 'tomorrow' })],
    ['a date without a time', spec({ deadline: '2026-11-26' })],
    ['a deadline without a zone', spec({ deadline: '2026-11-26T12:00:00' })],
    ['a deadline of 65 characters', spec({ deadline: `2026-11-26T12:00:00.${'1'.repeat(44)}Z` })],
    ['negative renewals', spec({ renewals: -1 })],
    ['renewals past int32', spec({ renewals: MAX_COUNTER + 1 })],
    ['negative restarts', spec({ restarts: -1 })],
    ['restarts past int32', spec({ restarts: MAX_COUNTER + 1 })],
    ['a parameter name that is no env var name', spec({ parameters: { 'not-a-name': 'x' } })],
    ['a parameter name starting with a digit', spec({ parameters: { '1ST': 'x' } })],
    ['a parameter value that is not a string', spec({ parameters: { P: 1 } })],
    ['a parameter value past its bound', spec({ parameters: { P: 'x'.repeat(Bounds.text + 1) } })],
    [
      'seventeen parameters',
      spec({ parameters: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`P${i}`, 'x'])) }),
    ],
  ]
  for (const [what, value] of rows) t.notOk(check(value), what)
})
