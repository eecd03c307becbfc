// POST /v1/flags/verify end to end on loopback: the gateway (no FLAG_SECRET) asks the hook server's
// POST /flags/verify, with the owners of the definition's Challenges as candidates. The expected flags are computed
// here from the contract's formula.
import { createHmac } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import t, { type Test as Tap } from 'tap'
import { flagChecker } from '../../src/gateway/flag-client.js'
import { challengeName } from '../../src/gateway/names.js'
import { buildTestApp } from '../helpers/app.js'
import { startFakeApiServer, type Json } from './fake-apiserver.js'
import { CTFD_KEY, definition, gatewayApp, mint } from './support.js'

const SECRET = 'the hook server flag secret, never in the gateway'
const TOKEN = 'flag-verify-token-0123456789abcdef0123456789'
const flagOf = (id: string, kind = 'User', prefix = 'flag{', suffix = '}') =>
  `${prefix}${createHmac('sha256', SECRET).update(`challenges/web/${kind}/${id}`).digest('hex').slice(0, 32)}${suffix}`
const asKey = (owner = 'User:alice') => ({ authorization: `Bearer ${CTFD_KEY}`, 'challenge-owner': owner })

async function setup(t: Tap, flag: Json = {}) {
  const hook = await buildTestApp(t, { flagSecret: SECRET, flagVerifyToken: TOKEN })
  await hook.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(hook.server.address() as AddressInfo).port}/flags/verify`
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake, {}, { checkFlag: flagChecker(url, TOKEN, 2000) })
  definition(fake, 'web', { flag })
  for (const owner of ['User:alice', 'User:bob'])
    await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey(owner) })
  const verify = (payload: Json, headers: Record<string, string> = asKey()) =>
    app.inject({ method: 'POST', url: '/v1/flags/verify', headers, payload })
  return { fake, app, verify, hook }
}

t.test('PerOwner: correct, another owner named to the platform, incorrect; after the record is gone too', async (t) => {
  const { fake, verify } = await setup(t)
  t.strictSame((await verify({ definition: 'web', flag: flagOf('alice') })).json(), { result: 'correct' })
  t.strictSame((await verify({ definition: 'web', flag: flagOf('bob') })).json(), {
    result: 'anotherOwner',
    owner: { kind: 'User', id: 'bob' },
  })
  t.strictSame((await verify({ definition: 'web', flag: 'flag{nope}' })).json(), { result: 'incorrect' })
  t.strictSame(
    (
      await verify(
        { definition: 'web', flag: flagOf('carol'), owner: 'User:carol' },
        { authorization: `Bearer ${CTFD_KEY}` },
      )
    ).json(),
    { result: 'correct' },
    'an owner with no record at all, named in the body',
  )
  fake.objects.delete(`challenges/challenges/${challengeName('web', { kind: 'User', id: 'alice' })}`)
  t.strictSame(
    (await verify({ definition: 'web', flag: flagOf('alice') })).json(),
    { result: 'correct' },
    'after the record is deleted',
  )
})

t.test("a player's token: its own owner only, and never told whose flag it holds", async (t) => {
  const { verify } = await setup(t)
  const player = { authorization: `Bearer ${await mint({ sub: 'User:alice' })}` }
  t.strictSame((await verify({ definition: 'web', flag: flagOf('alice') }, player)).json(), { result: 'correct' })
  t.strictSame((await verify({ definition: 'web', flag: flagOf('bob') }, player)).json(), { result: 'incorrect' })
  const other = await verify({ definition: 'web', flag: flagOf('bob'), owner: 'User:bob' }, player)
  t.strictSame(
    [other.statusCode, other.json().message],
    [403, 'This token acts for User:alice only; body.owner names User:bob.'],
  )
  const bad = await verify({ definition: 'web', flag: 'x', owner: 'bob' })
  t.strictSame(
    [bad.statusCode, bad.json().message],
    [400, 'body.owner must be <kind>:<id> with kind User or Team, got "bob"'],
  )
})

t.test("stopOnCorrect stops the owner's instance as Solved; a wrong flag stops nothing", async (t) => {
  const { fake, verify } = await setup(t)
  const key = `challenges/challenges/${challengeName('web', { kind: 'User', id: 'alice' })}`
  await verify({ definition: 'web', flag: 'flag{wrong}', stopOnCorrect: true })
  t.equal(((fake.objects.get(key) as Json).spec as Json).desiredState, undefined)
  await verify({ definition: 'web', flag: flagOf('alice'), stopOnCorrect: true })
  t.strictSame((fake.objects.get(key) as Json).spec, {
    definitionRef: { name: 'web' },
    owner: { kind: 'User', id: 'alice' },
    desiredState: 'Stopped',
    stopReason: 'Solved',
  })
})

t.test('PerInstance while the record exists; Static refused; no definition; the check unreachable', async (t) => {
  const { fake, verify, hook } = await setup(t, { mode: 'PerInstance', prefix: 'CTF[', suffix: ']' })
  const uid = `uid-${challengeName('web', { kind: 'User', id: 'alice' })}`
  const perInstance = `CTF[${createHmac('sha256', SECRET).update(uid).digest('hex').slice(0, 32)}]`
  t.strictSame((await verify({ definition: 'web', flag: perInstance })).json(), { result: 'correct' })
  fake.objects.delete(`challenges/challenges/${challengeName('web', { kind: 'User', id: 'alice' })}`)
  t.strictSame((await verify({ definition: 'web', flag: perInstance })).json(), {
    result: 'unverifiable',
    message:
      "A PerInstance flag is made from the Challenge's uid, and this owner's Challenge record is gone: it cannot be checked any more.",
  })
  definition(fake, 'web', { flag: { mode: 'Static', staticSecretRef: { name: 's', key: 'k' } } })
  const stat = await verify({ definition: 'web', flag: 'x' })
  t.strictSame(
    [stat.statusCode, stat.json().message],
    [409, "The flag of web is Static: the author's Secret, which the gateway may not read. Check it in the platform."],
  )
  const none = await verify({ definition: 'nothing', flag: 'x' })
  t.strictSame([none.statusCode, none.json().message], [404, 'There is no challenge nothing in challenges.'])
  definition(fake, 'web')
  await hook.close()
  const away = await verify({ definition: 'web', flag: 'x' })
  t.strictSame([away.statusCode, away.headers['retry-after']], [503, '1'])
})

t.test('PerInstance served from a warm pool: made from the pooled flag Secret’s uid the status records', async (t) => {
  const { fake, verify } = await setup(t, { mode: 'PerInstance' })
  const perInstance = (uid: string) => `flag{${createHmac('sha256', SECRET).update(uid).digest('hex').slice(0, 32)}}`
  const key = (id: string) => `challenges/challenges/${challengeName('web', { kind: 'User', id })}`
  const served = (id: string, pool: Json) => {
    const record = fake.objects.get(key(id)) as Json
    fake.objects.set(key(id), { ...record, status: { ...(record.status as Json | undefined), pool } })
  }
  served('alice', { state: 'Claimed', run: 0, pod: 'web.pool-3', flagUid: 'pool-secret-uid-3' })
  served('bob', { state: 'Released', run: 0, pod: 'web.pool-4', flagUid: 'pool-secret-uid-4' })
  t.strictSame((await verify({ definition: 'web', flag: perInstance('pool-secret-uid-3') })).json(), {
    result: 'correct',
  })
  t.strictSame(
    (
      await verify({
        definition: 'web',
        flag: perInstance(`uid-${challengeName('web', { kind: 'User', id: 'alice' })}`),
      })
    ).json(),
    { result: 'incorrect' },
    'not the flag its own uid would make: its pod never held that one',
  )
  t.strictSame((await verify({ definition: 'web', flag: perInstance('pool-secret-uid-4') })).json(), {
    result: 'anotherOwner',
    owner: { kind: 'User', id: 'bob' },
  })
  // A run that waited, or went cold, is made from the Challenge's own uid; a record without a usable uid too.
  served('alice', { state: 'Cold', run: 0, flagUid: 'pool-secret-uid-3' })
  const own = perInstance(`uid-${challengeName('web', { kind: 'User', id: 'alice' })}`)
  t.strictSame((await verify({ definition: 'web', flag: own })).json(), { result: 'correct' })
  served('alice', { state: 'Claimed', run: 0, flagUid: '' })
  t.strictSame((await verify({ definition: 'web', flag: own })).json(), { result: 'correct' })
})

t.test('a gateway without FLAG_VERIFY_URL; a check that answers an error', async (t) => {
  const fake = await startFakeApiServer(t)
  definition(fake, 'web')
  const off = await gatewayApp(t, fake)
  const answer = await off.inject({
    method: 'POST',
    url: '/v1/flags/verify',
    headers: asKey(),
    payload: { definition: 'web', flag: 'x' },
  })
  t.strictSame(
    [answer.statusCode, answer.json().message],
    [404, 'Flag checks are not configured on this gateway (FLAG_VERIFY_URL).'],
  )
  const hook = await buildTestApp(t, { flagSecret: SECRET, flagVerifyToken: TOKEN })
  await hook.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(hook.server.address() as AddressInfo).port}/flags/verify`
  await t.rejects(flagChecker(url, 'the-wrong-token', 2000)({}), {
    name: 'Unavailable',
    message:
      'the flag check answered 401: {"error":"Unauthorized","message":"This route needs the header Authorization: Bearer <FLAG_VERIFY_TOKEN>."}',
  })
})
