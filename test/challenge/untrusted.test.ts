// Reading JSON the hook did not write (src/challenge/untrusted.ts): each reader gives what its contract names, and reads
// anything else as absent.
import t from 'tap'
import { list, quote, record } from '../../src/challenge/untrusted.js'

t.test('record: an object as it is; null, an array or a scalar reads as absent', async (t) => {
  const object = { type: 'Ready' }
  t.equal(record(object), object)
  for (const value of [null, undefined, [], [object], 'Ready', 7, true])
    t.equal(record(value), undefined, String(value))
})

t.test('list: an array as it is; anything else is an empty list', async (t) => {
  const array = [{ type: 'Ready' }]
  t.equal(list(array), array)
  for (const value of [undefined, null, 'conditions', 7, { 0: 'a', length: 1 }])
    t.strictSame(list(value), [], String(value))
})

t.test(
  'quote: a text of at most 128 characters is quoted whole, a longer one is cut to 127 and an ellipsis',
  async (t) => {
    t.equal(quote('a'.repeat(128)), `"${'a'.repeat(128)}"`)
    t.equal(quote('a'.repeat(129)), `"${'a'.repeat(127)}…"`)
    t.equal(quote('abc', 3), '"abc"', 'a text as long as the given length')
    t.equal(quote('abcd', 3), '"ab…"')
  },
)
