// Reading JSON the hook did not write (src/challenge/untrusted.ts): each reader gives what its contract names, and reads
// anything else as absent.
import t from 'tap'
import { cut, list, quote, record } from '../../src/challenge/untrusted.js'

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

t.test('cut: never between the two halves of a character outside the BMP (a surrogate pair)', async (t) => {
  // '🚩' is two UTF-16 units, \ud83d\udea9.
  t.equal(cut('ab🚩cd', 4), 'ab…', 'the pair would straddle the cut: it goes whole')
  t.equal(cut('a🚩bcd', 4), 'a🚩…', 'the pair fits before the cut: it stays whole')
  t.equal(cut('abc🚩d', 4), 'abc…')
  t.equal(cut('ab🚩', 4), 'ab🚩', 'as long as the length: whole')
  t.equal(quote('ab🚩cd', 4), '"ab…"')
  // The first and the last high surrogates: U+10000 and U+10FFFF.
  t.equal(cut('ab\u{10000}cd', 4), 'ab…')
  t.equal(cut('ab\u{10FFFF}cd', 4), 'ab…')
})
