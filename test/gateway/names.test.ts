// Owners and Challenge names (src/gateway/names.ts): the expected names computed here from the documented rule,
// and the collision of the `<definition>-u-<id>` scheme that this one cannot have.
import { createHash } from 'node:crypto'
import t from 'tap'
import { challengeName, ownerText, parseOwner, sameOwner } from '../../src/gateway/names.js'

const hex16 = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16)

t.test('the name is <definition>-<16 hex of SHA-256 over ["kind","id"]>', async (t) => {
  t.equal(challengeName('web-login', { kind: 'User', id: 'alice' }), `web-login-${hex16('["User","alice"]')}`)
  t.equal(challengeName('web-login', { kind: 'Team', id: 'alice' }), `web-login-${hex16('["Team","alice"]')}`)
  const longest = challengeName('d'.repeat(63), { kind: 'Team', id: 'x'.repeat(63) })
  t.equal(longest.length, 80)
  t.match(longest, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
})

t.test("the guide's scheme collides; this one does not", async (t) => {
  const guide = (definition: string, id: string) => `${definition}-u-${id}`
  t.equal(guide('web-u-a', 'b'), guide('web', 'a-u-b'), 'two owners, one name under <definition>-u-<id>')
  t.not(challengeName('web-u-a', { kind: 'User', id: 'b' }), challengeName('web', { kind: 'User', id: 'a-u-b' }))
  t.not(challengeName('web', { kind: 'User', id: 'a' }), challengeName('web', { kind: 'Team', id: 'a' }))
})

t.test('parseOwner: <kind>:<id>, each refusal named', async (t) => {
  t.strictSame(parseOwner('User:alice'), { owner: { kind: 'User', id: 'alice' } })
  t.strictSame(parseOwner('Team:red-7'), { owner: { kind: 'Team', id: 'red-7' } })
  const kind = (text: string) => ({
    problem: `must be <kind>:<id> with kind User or Team, got ${JSON.stringify(text)}`,
  })
  t.strictSame(parseOwner('alice'), kind('alice'))
  t.strictSame(parseOwner('user:alice'), kind('user:alice'))
  t.strictSame(parseOwner(':alice'), kind(':alice'))
  const id = (value: string) => ({
    problem: `the owner id must be a DNS label (lowercase letters, digits and -, at most 63), got ${JSON.stringify(value)}`,
  })
  t.strictSame(parseOwner('User:Alice'), id('Alice'))
  t.strictSame(parseOwner('User:'), id(''))
  t.strictSame(parseOwner('User:a:b'), id('a:b'))
  t.strictSame(parseOwner(`User:${'a'.repeat(64)}`), id('a'.repeat(64)))
})

t.test('ownerText and sameOwner', async (t) => {
  t.equal(ownerText({ kind: 'Team', id: 'red' }), 'Team:red')
  t.equal(sameOwner({ kind: 'User', id: 'a' }, { kind: 'User', id: 'a' }), true)
  t.equal(sameOwner({ kind: 'User', id: 'a' }, { kind: 'Team', id: 'a' }), false)
  t.equal(sameOwner({ kind: 'User', id: 'a' }, { kind: 'User', id: 'b' }), false)
  t.equal(sameOwner({ kind: 'User', id: 'a' }, undefined), false)
})
