import t from 'tap'
import { request as httpRequest } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { bearerMatcher } from '../../src/http/auth.js'
import { buildTestApp } from '../helpers/app.js'
import { customizeRequest, newRequest, runningRequest } from '../helpers/hook-requests.js'

const TOKEN = 'n3v3r-l0g-th1s-t0k3n-4b9d7e2f1c'

t.test('bearerMatcher: one token', async (t) => {
  const cases: [string | undefined, string, boolean][] = [
    [`Bearer ${TOKEN}`, TOKEN, true],
    [`bearer ${TOKEN}`, TOKEN, true],
    [`BEARER ${TOKEN}`, TOKEN, true],
    [`Bearer ${TOKEN}  `, TOKEN, true],
    [undefined, TOKEN, false],
    ['', TOKEN, false],
    ['Bearer', TOKEN, false],
    ['Bearer ', TOKEN, false],
    [TOKEN, TOKEN, false],
    [`Basic ${TOKEN}`, TOKEN, false],
    [`Token ${TOKEN}`, TOKEN, false],
    [`Bearer${TOKEN}`, TOKEN, false],
    [`Bearer ${TOKEN.slice(0, -1)}`, TOKEN, false],
    [`Bearer ${TOKEN}x`, TOKEN, false],
    [`Bearer ${TOKEN.toUpperCase()}`, TOKEN, false],
    [`Bearer ${TOKEN} ${TOKEN}`, TOKEN, false],
    ['Bearer ', '', false],
    ['', '', false],
  ]
  for (const [header, token, expected] of cases) {
    t.equal(bearerMatcher([token])(header), expected, `${JSON.stringify(header)} vs ${JSON.stringify(token)}`)
  }
})

t.test('with HOOK_TOKEN set, a hook call needs the right bearer token', async (t) => {
  const app = await buildTestApp(t, { hookToken: TOKEN })
  const refusals: [string, Record<string, string>][] = [
    ['no header', {}],
    ['wrong scheme', { authorization: `Basic ${Buffer.from(`user:${TOKEN}`).toString('base64')}` }],
    ['token without scheme', { authorization: TOKEN }],
    ['wrong token', { authorization: 'Bearer not-the-token' }],
    ['empty token', { authorization: 'Bearer ' }],
  ]
  for (const url of ['/sync', '/finalize', '/customize']) {
    const payload = url === '/customize' ? customizeRequest() : runningRequest()
    for (const [what, headers] of refusals) {
      const response = await app.inject({ method: 'POST', url, payload, headers })
      t.equal(response.statusCode, 401, `${url} ${what}`)
      t.equal(response.headers['www-authenticate'], 'Bearer', `${url} ${what}`)
      t.strictSame(
        response.json(),
        { error: 'Unauthorized', message: 'This hook needs the header Authorization: Bearer <HOOK_TOKEN>.' },
        `${url} ${what}`,
      )
      t.notMatch(response.body, TOKEN)
    }
    const ok = await app.inject({ method: 'POST', url, payload, headers: { authorization: `Bearer ${TOKEN}` } })
    t.equal(ok.statusCode, 200, `${url} right token`)
  }
  const metrics = await app.ops.inject({ method: 'GET', url: '/metrics' })
  t.match(metrics.body, /challenge_hooks_rejected_total\{cause="unauthorized"\} 15/)
  t.match(metrics.body, /challenge_hooks_hook_duration_seconds_count\{hook="sync",code="200"\} 1/)
  t.notMatch(metrics.body, /code="401"/, 'refused calls are counted as rejected, not as answers')
})

t.test('during a rotation both the new and the previous token are accepted, nothing else', async (t) => {
  const app = await buildTestApp(t, { hookToken: TOKEN, hookTokenPrevious: 'the-old-token' })
  const call = (authorization: string) =>
    app.inject({ method: 'POST', url: '/sync', payload: runningRequest(), headers: { authorization } })
  t.equal((await call(`Bearer ${TOKEN}`)).statusCode, 200, 'the new token')
  t.equal((await call('Bearer the-old-token')).statusCode, 200, 'the previous token')
  t.equal((await call('Bearer another-token')).statusCode, 401, 'any other token')
  t.equal((await call(`Bearer ${TOKEN},the-old-token`)).statusCode, 401, 'not both at once')
})

t.test('health, readiness, metrics and 404 stay open with HOOK_TOKEN set', async (t) => {
  const app = await buildTestApp(t, { hookToken: TOKEN })
  for (const url of ['/healthz', '/readyz', '/metrics']) {
    t.equal((await app.ops.inject({ method: 'GET', url })).statusCode, 200, url)
  }
  t.equal((await app.inject({ method: 'GET', url: '/nope' })).statusCode, 404)
  t.equal((await app.ops.inject({ method: 'GET', url: '/nope' })).statusCode, 404)
})

t.test('without HOOK_TOKEN, no header is needed', async (t) => {
  const app = await buildTestApp(t, { hookToken: undefined })
  t.equal((await app.inject({ method: 'POST', url: '/sync', payload: newRequest() })).statusCode, 200)
})

t.test('the token is checked before the body is parsed', async (t) => {
  const app = await buildTestApp(t, { hookToken: TOKEN, bodyLimit: 2048 })
  const wrong = { authorization: 'Bearer wrong' }
  const cases: [string, string, string][] = [
    ['invalid JSON', 'not json at all', 'application/json'],
    ['empty body', '', 'application/json'],
    ['schema violation', '{"parent": 1}', 'application/json'],
    ['wrong content type', 'a=b', 'application/x-www-form-urlencoded'],
    ['body over the limit', JSON.stringify({ padding: 'x'.repeat(4096) }), 'application/json'],
    ['a __proto__ key', '{"__proto__": {}}', 'application/json'],
  ]
  for (const [what, payload, contentType] of cases) {
    const response = await app.inject({
      method: 'POST',
      url: '/sync',
      payload,
      headers: { ...wrong, 'content-type': contentType },
    })
    t.equal(response.statusCode, 401, what)
    const right = await app.inject({
      method: 'POST',
      url: '/sync',
      payload,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': contentType },
    })
    t.ok(
      right.statusCode >= 400 && right.statusCode < 500 && right.statusCode !== 401,
      `${what} with the token: ${right.statusCode}`,
    )
  }
})

t.test('over HTTP, a caller without the token is answered 401 without sending its body', async (t) => {
  const app = await buildTestApp(t, { hookToken: TOKEN })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const request = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/sync',
    headers: { 'content-type': 'application/json', 'content-length': String(5 * 1024 * 1024) },
  })
  request.on('error', () => {}) // the server may close the connection: the body never came
  request.flushHeaders()
  const [response] = (await once(request, 'response')) as [import('node:http').IncomingMessage]
  t.equal(response.statusCode, 401)
  t.equal(response.headers['www-authenticate'], 'Bearer')
  response.resume()
  request.destroy()
})
