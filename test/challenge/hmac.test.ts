import { createHmac } from 'node:crypto'
import t from 'tap'
import { flagSecretPart, instanceId, ownerMessage } from '../../src/challenge/hmac.js'

const key = { namespace: 'challenges', definition: 'web-login', ownerKind: 'User', ownerId: 'alice' }

t.test('the PerOwner flag is the contract formula, recomputable by a platform', async (t) => {
  const expected = createHmac('sha256', 's3cret').update('challenges/web-login/User/alice').digest('hex').slice(0, 32)
  t.equal(ownerMessage(key), 'challenges/web-login/User/alice')
  t.equal(flagSecretPart('s3cret', ownerMessage(key)), expected)
  t.not(flagSecretPart('other', ownerMessage(key)), expected, 'depends on the secret')
})

t.test('the instance id is the contract formula (16 hex), and never a prefix of the flag', async (t) => {
  const id = instanceId('s3cret', key)
  // docs/api.md: hex(HMAC-SHA256(FLAG_SECRET, "instance:<namespace>/<definition>/<owner.kind>/<owner.id>"))[0:16]
  t.equal(
    id,
    createHmac('sha256', 's3cret').update('instance:challenges/web-login/User/alice').digest('hex').slice(0, 16),
  )
  t.match(id, /^[0-9a-f]{16}$/)
  t.not(instanceId('s3cret', { ...key, ownerKind: 'Team' }), id, 'User and Team with the same id differ')
  t.not(instanceId('s3cret', { ...key, namespace: 'ctf-finals' }), id, 'the same key in another namespace differs')
  t.notOk(flagSecretPart('s3cret', ownerMessage(key)).startsWith(id))
})

t.test('each secret gives the contract HMAC, whichever secret came before', async (t) => {
  const contract = (secret: string, message: string) =>
    createHmac('sha256', secret).update(message).digest('hex').slice(0, 32)
  const message = ownerMessage(key)
  // Alternating, repeating, empty and non-ASCII secrets: the key is the secret's UTF-8 bytes, as createHmac takes a string.
  for (const secret of ['s3cret', 'other', 'other', 's3cret', '', 'sécret-ü-🎉', 's3cret']) {
    t.equal(flagSecretPart(secret, message), contract(secret, message), JSON.stringify(secret))
  }
})
