import { orderProblem } from '../helpers/order.js'
import t from 'tap'
import { createServer } from 'node:net'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { EX_CONFIG, start } from '../../src/main.js'
import { fakeProcess } from './fake-process.js'
import { get, post, postHalf } from './http-client.js'
import { newRequest } from '../helpers/hook-requests.js'

const SECRET = 'f'.repeat(64)

function portOf(app: FastifyInstance): number {
  return (app.server.address() as AddressInfo).port
}

t.test('a bad configuration stops the start: exit 78 and a message naming the variable', async (t) => {
  for (const [variable, value] of [
    ['PORT', 'eighty'],
    ['LOG_LEVEL', 'verbose'],
    ['BODY_LIMIT', '8 parsecs'],
  ] as const) {
    const fake = fakeProcess({ [variable]: value })
    const app = await start(fake.ports)
    t.equal(app, undefined, variable)
    t.strictSame(fake.exits, [EX_CONFIG], variable)
    t.equal(EX_CONFIG, 78)
    t.match(
      fake.stderr(),
      new RegExp(`^challenge-hooks: invalid configuration: ${variable}: .*${value}.*\\n$`),
      variable,
    )
    t.equal(fake.log.text(), '', 'nothing was started, nothing logged')
  }
  const production = fakeProcess({ NODE_ENV: 'production' })
  t.equal(await start(production.ports), undefined)
  t.strictSame(production.exits, [EX_CONFIG])
  t.match(production.stderr(), /FLAG_SECRET: is required when NODE_ENV=production/)
  // The review's case: a blank token in production used to start with a warning and answer unauthenticated calls.
  const blankToken = fakeProcess({
    NODE_ENV: 'production',
    FLAG_SECRET: 'c4ca4238a0b923820dcc509a6f75849b',
    HOOK_TOKEN: ' ',
  })
  t.equal(await start(blankToken.ports), undefined, 'a blank HOOK_TOKEN in production: not started')
  t.strictSame(blankToken.exits, [EX_CONFIG])
  t.match(
    blankToken.stderr(),
    /^challenge-hooks: invalid configuration: HOOK_TOKEN: is required \(non-blank\) when NODE_ENV=production/,
  )
})

t.test('start listens and serves; SIGTERM fails readiness, drains, closes and exits 0', async (t) => {
  // No shedding on event-loop delay: on a busy machine (load 16, other suites) the loop's delay after start-up made
  // the first /sync a 429, which this test is not about (test/http/overload.test.ts is).
  const fake = fakeProcess({ SHUTDOWN_DRAIN_MS: '2500', SHUTDOWN_TIMEOUT_MS: '4000', MAX_EVENT_LOOP_DELAY_MS: '0' })
  const app = (await start(fake.ports)) as FastifyInstance
  t.ok(app, 'started')
  t.teardown(() => app.close())
  const port = portOf(app)
  const opsPort = portOf(app.ops)
  t.not(opsPort, port, 'probes and metrics have a port of their own')
  t.equal((await get(opsPort, '/readyz')).statusCode, 200)
  t.equal((await get(port, '/readyz')).statusCode, 404, 'not on the hook port')
  t.equal((await post(port, '/sync', JSON.stringify(newRequest()))).statusCode, 200)

  const warnings = fake.log
    .entries()
    .filter((entry) => entry.level === 40)
    .map((entry) => entry.msg)
  t.match(
    warnings,
    [
      /FLAG_SECRET is not set/,
      /HOOK_TOKEN is not set/,
      /^PUBLIC_HOST is 127\.0\.0\.1, a loopback address/,
      /network\.egress Internet with CLUSTER_CIDRS unset/,
    ],
    'development defaults are warned about',
  )
  t.match(
    fake.log.entries().find((entry) => entry.opsPort !== undefined),
    { port, opsPort, msg: 'serving hook calls on port, probes and metrics on opsPort' },
  )

  const stopping = fake.shutdown({ signal: 'SIGTERM' })
  t.equal(fake.drains.length, 1, 'draining')
  t.equal(fake.drains[0]?.ms, 2500, 'for SHUTDOWN_DRAIN_MS')
  const ready = await get(opsPort, '/readyz')
  t.equal(ready.statusCode, 503, 'readiness fails first')
  t.strictSame(JSON.parse(ready.body), { error: 'Service Unavailable', message: 'shutting down' })
  t.equal((await get(opsPort, '/healthz')).statusCode, 200, 'liveness stays')
  const during = await post(port, '/sync', JSON.stringify(newRequest()))
  t.equal(during.statusCode, 200, 'calls are still served while draining')
  t.equal(during.headers.connection, 'close', 'each answer closes its connection')
  t.strictSame(fake.exits, [], 'not exited while draining')

  fake.drains[0]?.release()
  await stopping
  t.equal(fake.drains[1]?.ms, 1500, 'the calls in flight had until SHUTDOWN_TIMEOUT_MS')
  t.strictSame(fake.exits, [0])
  t.equal(app.server.listening, false, 'closed')
  t.equal(app.ops.server.listening, false, 'both ports')
  const messages = fake.log.entries().map((entry) => entry.msg)
  t.match(messages, [
    /FLAG_SECRET/,
    /HOOK_TOKEN/,
    /PUBLIC_HOST/,
    /CLUSTER_CIDRS/,
    /^Server listening at http:\/\/127\.0\.0\.1:/,
    /^Server listening at http:\/\/127\.0\.0\.1:/,
    /^serving hook calls/,
    /hook answered/,
    /shutting down/,
    /hook answered/,
    /closed/,
  ])
  t.match(
    fake.log.entries().find((entry) => entry.msg === String(messages[8])),
    { signal: 'SIGTERM' },
  )
})

t.test(
  'SIGTERM with calls in flight: they finish, or are cut at SHUTDOWN_TIMEOUT_MS, and the exit code is 0',
  async (t) => {
    const fake = fakeProcess({ SHUTDOWN_DRAIN_MS: '1000', SHUTDOWN_TIMEOUT_MS: '3000' })
    const app = (await start(fake.ports)) as FastifyInstance
    t.teardown(() => app.close())
    const port = portOf(app)
    let arrived = 0
    app.server.on('request', () => (arrived += 1))
    const finishing = postHalf(port, '/sync', JSON.stringify(newRequest()))
    const endless = postHalf(port, '/sync', JSON.stringify(newRequest()))
    const cut = new Promise<void>((done) => endless.request.once('close', done))
    while (arrived < 2) await new Promise((tick) => setImmediate(tick))

    const stopping = fake.shutdown({ signal: 'SIGTERM' })
    fake.drains[0]?.release()
    while (app.server.listening) await new Promise((tick) => setImmediate(tick))
    const answer = await finishing.finish()
    t.equal(answer.statusCode, 200, 'a call in flight when the port closed is answered')
    t.equal(answer.headers.connection, 'close')
    t.strictSame(fake.exits, [], 'still waiting for the other one')
    t.equal(fake.drains[1]?.ms, 2000, 'until SHUTDOWN_TIMEOUT_MS after the signal')
    fake.drains[1]?.release()
    await stopping
    await cut
    t.ok(endless.request.destroyed, 'the upload that never ends is cut')
    t.strictSame(fake.exits, [0], 'a cut call is not an error: Metacontroller retries it')
    const messages = fake.log.entries().map((entry) => String(entry.msg))
    // Each order holds only when both messages were logged (an index of -1 would pass on its own).
    const cutMessage = 'shutdown deadline (SHUTDOWN_TIMEOUT_MS): cutting the calls still in flight'
    t.equal(orderProblem(messages, 'hook answered', cutMessage), undefined, 'answered, then cut')
    t.equal(orderProblem(messages, cutMessage, 'closed'), undefined, 'cut, then closed')
  },
)

t.test('PUBLIC_HOST unset: one warning line at start that names it and what players will see', async (t) => {
  const token = '0cc175b9c0f1b6a831c399e269772661'
  const fake = fakeProcess({
    NODE_ENV: 'production',
    FLAG_SECRET: 'c4ca4238a0b923820dcc509a6f75849b',
    HOOK_TOKEN: token,
    CLUSTER_CIDRS: '203.0.113.0/24',
  })
  const app = (await start(fake.ports)) as FastifyInstance
  t.teardown(() => app.close())
  t.equal(fake.stderr(), '', 'started')
  t.strictSame(
    fake.log
      .entries()
      .filter((entry) => (entry.level as number) >= 40)
      .map((entry) => [entry.level, entry.msg]),
    [
      [
        40,
        'PUBLIC_HOST is 127.0.0.1, a loopback address (127.0.0.1 is its default, when unset): NodePort endpoints will say 127.0.0.1, so players will see "nc 127.0.0.1 <nodePort>", which reaches nothing from their machines. Set PUBLIC_HOST to a node\'s public name or address.',
      ],
    ],
    'production with everything else set: that warning, and only it',
  )
})

t.test('with FLAG_SECRET, HOOK_TOKEN, PUBLIC_HOST and CLUSTER_CIDRS set there is nothing to warn about', async (t) => {
  const fake = fakeProcess({
    FLAG_SECRET: SECRET,
    HOOK_TOKEN: 'a-token',
    PUBLIC_HOST: 'play.ctf.example.org',
    CLUSTER_CIDRS: '203.0.113.0/24',
  })
  const app = (await start(fake.ports)) as FastifyInstance
  t.teardown(() => app.close())
  t.strictSame(
    fake.log.entries().filter((entry) => (entry.level as number) >= 40),
    [],
  )
  t.equal((await post(portOf(app), '/sync', JSON.stringify(newRequest()))).statusCode, 401, 'the token is required')
  t.equal(
    (await post(portOf(app), '/sync', JSON.stringify(newRequest()), { authorization: 'Bearer a-token' })).statusCode,
    200,
  )
})

t.test('a shutdown after a fatal error logs it and exits 1', async (t) => {
  const fake = fakeProcess({})
  const app = (await start(fake.ports)) as FastifyInstance
  t.teardown(() => app.close())
  const stopping = fake.shutdown({ err: new Error('boom') })
  fake.drains[0]?.release()
  await stopping
  t.strictSame(fake.exits, [1])
  const failure = fake.log.entries().find((entry) => entry.level === 50)
  t.match(failure, { msg: 'closing after an unexpected error', err: { message: 'boom' } })
})

t.test(
  'a port in use (the hook port or the operations port): the error is logged and the process exits 1',
  async (t) => {
    const blocker = createServer()
    blocker.listen(0, '127.0.0.1')
    await once(blocker, 'listening')
    t.teardown(() => void blocker.close())
    const busy = (blocker.address() as AddressInfo).port
    for (const variable of ['PORT', 'OPS_PORT']) {
      const fake = fakeProcess({ [variable]: String(busy) })
      t.equal(await start(fake.ports), undefined, variable)
      t.strictSame(fake.exits, [1], variable)
      t.match(
        fake.log.entries().find((entry) => entry.level === 50),
        {
          msg: `cannot listen on 127.0.0.1:${busy}`,
          err: { code: 'EADDRINUSE' },
        },
      )
    }
  },
)

t.test('without logger options the configuration decides the level', async (t) => {
  const fake = fakeProcess({ LOG_LEVEL: 'silent' })
  delete fake.ports.logger
  const app = (await start(fake.ports)) as FastifyInstance
  t.teardown(() => app.close())
  t.equal(app.log.level, 'silent')
  t.equal((await post(portOf(app), '/sync', JSON.stringify(newRequest()))).statusCode, 200, 'the real clock is used')
})
