// Who is calling (src/gateway/identity.ts): every refusal with its status and words, each kind of credential
// accepted, and the platforms file's checks.
import { SignJWT, exportSPKI, exportJWK } from 'jose'
import t from 'tap'
import { authenticate, loadPlatforms, namespaceOf, type Caller } from '../../src/gateway/identity.js'
import {
  AUDIENCE,
  CTFD_KEY,
  CTFD_NEXT_KEY,
  ED_PUBLIC_PEM,
  edKeys,
  esKeys,
  HS_SECRET,
  mint,
  NOW,
  OTHER_KEY,
  platforms,
} from './support.js'

const seconds = Math.floor(NOW.getTime() / 1000)
const auth = (authorization: string | undefined, ownerHeader?: string) =>
  authenticate({ authorization, ownerHeader }, platforms, AUDIENCE, NOW)
const bearer = (token: string) => `Bearer ${token}`
const summary = (caller: Caller | { statusCode: number; message: string }) =>
  'statusCode' in caller
    ? caller
    : { platform: caller.platform.name, via: caller.via, owner: caller.owner, admin: caller.admin }

t.test('accepted: each key of a platform, a token of each kind', async (t) => {
  t.strictSame(summary(await auth(bearer(CTFD_KEY), 'Team:red')), {
    platform: 'ctfd',
    via: 'key',
    owner: { kind: 'Team', id: 'red' },
    admin: true,
  })
  t.strictSame(summary(await auth(bearer(CTFD_NEXT_KEY))), {
    platform: 'ctfd',
    via: 'key',
    owner: undefined,
    admin: true,
  })
  t.strictSame(summary(await auth(bearer(OTHER_KEY))), { platform: 'other', via: 'key', owner: undefined, admin: true })
  t.strictSame(summary(await auth(bearer(await mint({ sub: 'User:alice' })))), {
    platform: 'ctfd',
    via: 'token',
    owner: { kind: 'User', id: 'alice' },
    admin: false,
  })
  t.strictSame(summary(await auth(bearer(await mint({ sub: 'User:alice' }, { iss: 'other' })))), {
    platform: 'other',
    via: 'token',
    owner: { kind: 'User', id: 'alice' },
    admin: false,
  })
  t.strictSame(summary(await auth(bearer(await mint({ sub: 'User:alice', admin: true })), 'User:bob')), {
    platform: 'ctfd',
    via: 'token',
    owner: { kind: 'User', id: 'bob' },
    admin: true,
  })
  t.strictSame(((await auth(bearer(await mint({ sub: 'User:alice' })), 'User:alice')) as Caller).owner, {
    kind: 'User',
    id: 'alice',
  })
})

t.test('refused, each with its words', async (t) => {
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(
    JSON.stringify({ sub: 'User:alice', aud: AUDIENCE, iss: 'ctfd', exp: seconds + 60 }),
  ).toString('base64url')}.`
  // The key confusion: an HS256 token whose HMAC key is the public key's PEM, sent to a platform of EdDSA tokens.
  const confused = await mint(
    { sub: 'User:alice' },
    { iss: 'other', alg: 'HS256', key: new TextEncoder().encode(ED_PUBLIC_PEM) },
  )
  const rows: [string, Promise<unknown>, number, string][] = [
    ['no header', auth(undefined), 401, 'Send Authorization: Bearer <a platform key, or a token the platform minted>.'],
    [
      'another scheme',
      auth(`Basic ${CTFD_KEY}`),
      401,
      'Send Authorization: Bearer <a platform key, or a token the platform minted>.',
    ],
    ['an unknown key', auth(bearer('x'.repeat(40))), 401, 'The bearer is not a key of any platform of this gateway.'],
    ['not a JWT', auth(bearer('a.b.c')), 401, 'The bearer is not a JWT: Invalid Token or Protected Header formatting.'],
    ['alg none', auth(bearer(unsigned)), 401, 'The token is not signed (alg none).'],
    [
      'HS/public key confusion',
      auth(bearer(confused)),
      401,
      "The token's alg is not accepted from platform other (accepted: EdDSA).",
    ],
    [
      'an EdDSA token to an HS256 platform',
      auth(bearer(await mint({ sub: 'User:alice' }, { alg: 'EdDSA', key: edKeys.privateKey }))),
      401,
      "The token's alg is not accepted from platform ctfd (accepted: HS256).",
    ],
    [
      'a wrong HS256 key',
      auth(
        bearer(
          await mint({ sub: 'User:alice' }, { key: new TextEncoder().encode('another key, 32 characters or more') }),
        ),
      ),
      401,
      "The token's signature does not verify.",
    ],
    ['expired', auth(bearer(await mint({ sub: 'User:alice', exp: seconds - 1 }))), 401, 'The token has expired (exp).'],
    [
      'not yet valid',
      auth(bearer(await mint({ sub: 'User:alice', nbf: seconds + 60 }))),
      401,
      'The token is not valid yet (nbf).',
    ],
    [
      'wrong aud',
      auth(bearer(await mint({ sub: 'User:alice', aud: 'https://elsewhere' }))),
      401,
      `The token's aud is not this gateway's audience "${AUDIENCE}".`,
    ],
    ['no sub', auth(bearer(await mint({}))), 401, 'The token has no sub claim.'],
    [
      'an exp that is no number',
      auth(bearer(await mint({ sub: 'User:alice', exp: 'soon' as unknown as number }))),
      401,
      'The token\'s exp claim is not valid: "exp" claim must be a number.',
    ],
    [
      'a sub that is no owner',
      auth(bearer(await mint({ sub: 'alice' }))),
      401,
      'The token\'s sub must be <kind>:<id> with kind User or Team, got "alice".',
    ],
    [
      'longer than 10 minutes',
      auth(bearer(await mint({ sub: 'User:alice' }, { exp: seconds + 601 }))),
      401,
      "The token's exp is more than 10 minutes ahead; mint shorter-lived tokens.",
    ],
    [
      'an unknown issuer',
      auth(bearer(await mint({ sub: 'User:alice' }, { iss: 'nobody' }))),
      401,
      "The token's iss names no platform of this gateway.",
    ],
    [
      "replayed for another owner's instance",
      auth(bearer(await mint({ sub: 'User:alice' })), 'User:bob'),
      403,
      'This token acts for User:alice only; the header Challenge-Owner names User:bob.',
    ],
    [
      'a header that is no owner',
      auth(bearer(CTFD_KEY), 'bob'),
      403,
      'The header Challenge-Owner must be <kind>:<id> with kind User or Team, got "bob".',
    ],
  ]
  for (const [what, refusal, statusCode, message] of rows) t.strictSame(await refusal, { statusCode, message }, what)
})

t.test("a platform's namespaces: its first by default, another of its own, never another's", async (t) => {
  const ctfd = (await auth(bearer(CTFD_KEY))) as Caller
  t.strictSame(namespaceOf(ctfd, undefined), { namespace: 'challenges' })
  t.strictSame(namespaceOf(ctfd, 'finals'), { namespace: 'finals' })
  t.strictSame(namespaceOf(ctfd, 'other'), {
    statusCode: 403,
    message: "Platform ctfd's credentials are scoped to the namespaces challenges, finals, not other.",
  })
})

t.test('a platform without tokens, ES256 with a public key, and a JWKS', async (t) => {
  const es = await exportSPKI(esKeys.publicKey)
  const jwk = { ...(await exportJWK(edKeys.publicKey)), kid: 'one' }
  const list = await loadPlatforms(
    JSON.stringify({
      platforms: [
        { name: 'keys-only', namespaces: ['a'], keys: [CTFD_KEY.replace('ctfd', 'kkkk')] },
        { name: 'es', namespaces: ['a'], tokens: { publicKey: es, algorithm: 'ES256' } },
        { name: 'jwks', namespaces: ['a'], tokens: { jwks: { keys: [jwk] } } },
      ],
    }),
  )
  const token = async (iss: string, alg: string, key: Parameters<SignJWT['sign']>[0], kid?: string) =>
    new SignJWT({ sub: 'Team:red', aud: AUDIENCE, iss })
      .setProtectedHeader({ alg, ...(kid === undefined ? {} : { kid }) })
      .setExpirationTime(seconds + 60)
      .sign(key)
  const call = async (authorization: string) => {
    const caller = await authenticate({ authorization, ownerHeader: undefined }, list, AUDIENCE, NOW)
    return 'statusCode' in caller ? caller : caller.platform.name
  }
  t.equal(await call(bearer(await token('es', 'ES256', esKeys.privateKey))), 'es')
  t.equal(await call(bearer(await token('jwks', 'EdDSA', edKeys.privateKey, 'one'))), 'jwks')
  t.strictSame(await call(bearer(await token('keys-only', 'ES256', esKeys.privateKey))), {
    statusCode: 401,
    message: 'Platform keys-only has no token key on this gateway.',
  })
  t.strictSame(await call(bearer(await token('jwks', 'EdDSA', edKeys.privateKey, 'two'))), {
    statusCode: 401,
    message: 'The token cannot be verified: no applicable key found in the JSON Web Key Set.',
  })
})

t.test('the platforms file: each problem named', async (t) => {
  const problems: [string, string][] = [
    ['[', 'GATEWAY_PLATFORMS_FILE: is not YAML or JSON'],
    ['platforms: []', 'GATEWAY_PLATFORMS_FILE: must hold a list `platforms` of at least one platform'],
    ['- a list', 'GATEWAY_PLATFORMS_FILE: must hold a list `platforms` of at least one platform'],
    ['platforms: [{namespaces: [a]}]', 'GATEWAY_PLATFORMS_FILE: platforms[0] needs a name of its own'],
    [
      `platforms: [{name: p, namespaces: [a], keys: [${CTFD_KEY}]}, {name: p}]`,
      'GATEWAY_PLATFORMS_FILE: platforms[1] needs a name of its own',
    ],
    [
      'platforms: [{name: p, namespaces: [A]}]',
      'GATEWAY_PLATFORMS_FILE: platform p: namespaces must list namespace names',
    ],
    [
      'platforms: [{name: p, namespaces: [a], keys: [short]}]',
      'GATEWAY_PLATFORMS_FILE: platform p: each key must be at least 32 characters',
    ],
    ['platforms: [{name: p, namespaces: [a]}]', 'GATEWAY_PLATFORMS_FILE: platform p has neither keys nor tokens'],
    [
      'platforms: [{name: p, namespaces: [a], tokens: [x]}]',
      'GATEWAY_PLATFORMS_FILE: platform p: tokens must be a map',
    ],
    [
      'platforms: [{name: p, namespaces: [a], tokens: {hs256: short}}]',
      'GATEWAY_PLATFORMS_FILE: platform p: tokens.hs256 must be at least 32 characters',
    ],
    [
      'platforms: [{name: p, namespaces: [a], tokens: {publicKey: x}}]',
      'GATEWAY_PLATFORMS_FILE: platform p: tokens.algorithm must be EdDSA or ES256 beside publicKey',
    ],
    [
      'platforms: [{name: p, namespaces: [a], tokens: {publicKey: x, algorithm: EdDSA}}]',
      'GATEWAY_PLATFORMS_FILE: platform p: tokens.publicKey',
    ],
    [
      'platforms: [{name: p, namespaces: [a], tokens: {jwks: {keys: [1]}}}]',
      'GATEWAY_PLATFORMS_FILE: platform p: tokens.jwks',
    ],
    [
      'platforms: [{name: p, namespaces: [a], tokens: {rs256: x}}]',
      'GATEWAY_PLATFORMS_FILE: platform p: tokens needs hs256, publicKey with algorithm, or jwks',
    ],
    [
      `platforms: [{name: p, namespaces: [a], keys: [${CTFD_KEY}], deadline: tomorrow}]`,
      'GATEWAY_PLATFORMS_FILE: platform p: deadline must be an RFC 3339 time such as 2026-11-29T18:00:00Z, got "tomorrow"',
    ],
    [
      `platforms: [{name: p, namespaces: [a], keys: [${CTFD_KEY}], deadline: 2026-13-01T00:00:00Z}]`,
      'GATEWAY_PLATFORMS_FILE: platform p: deadline must be an RFC 3339 time such as 2026-11-29T18:00:00Z, got "2026-13-01T00:00:00Z"',
    ],
    [
      `platforms: [{name: p, namespaces: [a], keys: [${CTFD_KEY}], deadline: 5}]`,
      'GATEWAY_PLATFORMS_FILE: platform p: deadline must be an RFC 3339 time such as 2026-11-29T18:00:00Z, got 5',
    ],
  ]
  for (const [text, message] of problems) {
    await t.rejects(loadPlatforms(text), { name: 'ConfigError' }, text)
    const error = await loadPlatforms(text).catch((caught: Error) => caught)
    t.ok((error as Error).message.startsWith(message), `${text}: ${(error as Error).message}`)
  }
  t.equal((await loadPlatforms(`platforms: [{name: p, namespaces: [a], tokens: {hs256: "${HS_SECRET}"}}]`)).length, 1)
})
