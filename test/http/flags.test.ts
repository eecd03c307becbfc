// POST /flags/verify on the hook port (src/http/routes/flags.ts): absent without FLAG_VERIFY_TOKEN, refused without
// it, and answering the flag check with it.
import { createHmac } from 'node:crypto'
import t from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { buildTestApp } from '../helpers/app.js'

const TOKEN = 'a-flag-verify-token-for-the-tests-0123456789'
const SECRET = 'a flag secret for the tests'
const flagOf = (id: string) =>
  `flag{${createHmac('sha256', SECRET).update(`challenges/web-login/User/${id}`).digest('hex').slice(0, 32)}}`

const body = (submitted: string) => ({
  namespace: 'challenges',
  definition: 'web-login',
  flag: { mode: 'PerOwner', prefix: 'flag{', suffix: '}' },
  owner: { kind: 'User', id: 'alice' },
  candidates: [{ kind: 'User', id: 'bob' }],
  submitted,
})

t.test('FLAG_VERIFY_TOKEN is read as a secret', async (t) => {
  t.equal(loadConfig({ FLAG_VERIFY_TOKEN: TOKEN }).flagVerifyToken, TOKEN)
  t.equal(loadConfig({}).flagVerifyToken, undefined)
  t.throws(
    () =>
      loadConfig({ NODE_ENV: 'production', FLAG_SECRET: SECRET.repeat(2), HOOK_TOKEN: TOKEN, FLAG_VERIFY_TOKEN: ' ' }),
    {
      message:
        'FLAG_VERIFY_TOKEN: is set but blank; unset it to turn POST /flags/verify off, or generate one: openssl rand -hex 32',
    },
  )
})

t.test('without FLAG_VERIFY_TOKEN the route does not exist', async (t) => {
  const app = await buildTestApp(t, { flagSecret: SECRET })
  const response = await app.inject({ method: 'POST', url: '/flags/verify', payload: body(flagOf('alice')) })
  t.equal(response.statusCode, 404)
})

t.test('with FLAG_VERIFY_TOKEN: refused without it, answered with it', async (t) => {
  const app = await buildTestApp(t, { flagSecret: SECRET, flagVerifyToken: TOKEN })
  const call = (payload: object, authorization?: string) =>
    app.inject({
      method: 'POST',
      url: '/flags/verify',
      payload,
      headers: authorization === undefined ? {} : { authorization },
    })
  for (const authorization of [undefined, 'Bearer wrong', `Basic ${TOKEN}`]) {
    const refused = await call(body(flagOf('alice')), authorization)
    t.equal(refused.statusCode, 401, String(authorization))
    t.strictSame(refused.json(), {
      error: 'Unauthorized',
      message: 'This route needs the header Authorization: Bearer <FLAG_VERIFY_TOKEN>.',
    })
  }
  const bearer = `Bearer ${TOKEN}`
  t.strictSame((await call(body(flagOf('alice')), bearer)).json(), { result: 'correct' })
  t.strictSame((await call(body(flagOf('bob')), bearer)).json(), {
    result: 'anotherOwner',
    owner: { kind: 'User', id: 'bob' },
  })
  t.strictSame((await call(body('flag{nope}'), bearer)).json(), { result: 'incorrect' })
  const bad = await call({ ...body('x'), owner: { kind: 'Robot', id: 'alice' } }, bearer)
  t.equal(bad.statusCode, 400)
  t.strictSame(bad.json(), { error: 'Bad Request', message: 'body.owner.kind must be one of "User", "Team"' })
})
