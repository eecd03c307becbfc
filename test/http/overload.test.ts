import t, { type Test } from 'tap'
import { connect, type Socket } from 'node:net'
import { setImmediate as nextTurn } from 'node:timers/promises'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import { delayRefusal, holdUntilNextTurn, sheddingChecks, turnClock } from '../../src/http/load-shedding.js'
import { errorBody, errorHandlers, RetryLaterError } from '../../src/http/errors.js'
import { jsonBody } from '../../src/http/json-body.js'
import { createMetrics } from '../../src/http/metrics.js'
import { buildApp, loggerOptions } from '../../src/http/app.js'
import { buildTestApp, testConfig } from '../helpers/app.js'
import { logCapture } from './log-capture.js'
import { aborts, arrivals, holds, inFlight, listen, post, postHalf } from './http-client.js'
import { customizeRequest, runningRequest } from '../helpers/hook-requests.js'

const SYNC = JSON.stringify(runningRequest())
const CUSTOMIZE = JSON.stringify(customizeRequest())

t.test('with maxInFlight 1, a second call while one is in flight is 429 with an integer Retry-After', async (t) => {
  const app = await buildTestApp(t, { maxInFlight: 1 })
  const held = holds(app)
  const port = await listen(app)

  const first = post(port, '/sync', SYNC)
  await held.next()
  t.equal(await inFlight(app), 1, 'the call whose body has arrived is in flight')

  for (const url of ['/sync', '/finalize', '/customize']) {
    const shed = await post(port, url, url === '/customize' ? CUSTOMIZE : SYNC)
    t.equal(shed.statusCode, 429, url)
    t.match(shed.headers['retry-after'], /^[1-9]\d*$/, `${url}: integer Retry-After`)
    t.strictSame(JSON.parse(shed.body), {
      error: 'Too Many Requests',
      message: 'More than 1 hook calls in flight; retry after 1 s.',
    })
  }
  t.equal((await post(port, '/nope', '{}')).statusCode, 404, 'other routes are not shed')
  t.equal((await app.ops.inject({ method: 'GET', url: '/readyz' })).statusCode, 200, 'probes are not shed')
  t.equal(await inFlight(app), 1, 'shed calls never entered the count')

  held.release()
  const answered = await first
  t.equal(answered.statusCode, 200, 'the call in flight completes')
  t.match(JSON.parse(answered.body), { status: { phase: 'Running' } })
  t.equal(await inFlight(app), 0, 'back to 0 after completion')
  const next = post(port, '/sync', SYNC)
  await held.next()
  held.release()
  t.equal((await next).statusCode, 200, 'the next call is served')
})

t.test(
  'uploads still arriving hold no slot: with maxInFlight 1, half-sent bodies do not stop a whole call',
  async (t) => {
    const app = await buildTestApp(t, { maxInFlight: 1 })
    const arrived = arrivals(app)
    const port = await listen(app)
    const slow = [postHalf(port, '/sync', SYNC), postHalf(port, '/sync', SYNC), postHalf(port, '/customize', CUSTOMIZE)]
    for (const _ of slow) await arrived.next()
    t.equal(await inFlight(app), 0, 'three bodies on the way, none in flight')
    t.equal((await post(port, '/sync', SYNC)).statusCode, 200, 'a whole call is served meanwhile')
    const finished = await Promise.all(slow.map((each) => each.finish()))
    t.strictSame(
      finished.map((answer) => answer.statusCode),
      [200, 200, 200],
      'and the slow ones once their bodies are in',
    )
  },
)

t.test('a call admitted before its body is refused once the body is in, if the cap filled meanwhile', async (t) => {
  const app = await buildTestApp(t, { maxInFlight: 1 })
  const arrived = arrivals(app)
  const held = holds(app)
  const port = await listen(app)
  const slow = postHalf(port, '/sync', SYNC)
  await arrived.next()
  const whole = post(port, '/sync', SYNC)
  await arrived.next()
  await held.next()
  t.equal(await inFlight(app), 1, 'the whole call holds the slot')
  const refused = await slow.finish()
  t.equal(refused.statusCode, 429)
  t.equal(refused.headers['retry-after'], '1')
  held.release()
  t.equal((await whole).statusCode, 200)
  const text = (await app.ops.inject({ method: 'GET', url: '/metrics' })).body
  t.match(text, /challenge_hooks_rejected_total\{cause="overloaded"\} 1/)
  t.notMatch(text, /code="429"/, 'a refused call is counted as rejected, not as an answer')
})

t.test('the shed count is a metric, and a burst of refusals is one log line', async (t) => {
  const config = testConfig({ maxInFlight: 1 })
  const log = logCapture()
  const app = await buildApp(config, { logger: { ...loggerOptions(config), stream: log.stream } })
  t.teardown(() => app.close())
  const held = holds(app)
  const port = await listen(app)
  const first = post(port, '/customize', CUSTOMIZE)
  await held.next()
  t.equal((await post(port, '/customize', CUSTOMIZE)).statusCode, 429)
  t.equal((await post(port, '/customize', CUSTOMIZE)).statusCode, 429)
  held.release()
  t.equal((await first).statusCode, 200)
  const text = (await app.ops.inject({ method: 'GET', url: '/metrics' })).body
  t.match(text, /challenge_hooks_rejected_total\{cause="overloaded"\} 2/)
  const warnings = log.entries().filter((entry) => entry.level === 40)
  t.match(
    warnings,
    [{ cause: 'overloaded', refused: 1, msg: 'overloaded: More than 1 hook calls in flight' }],
    'the first refusal is logged, the second only counted',
  )
})

t.test('a client that aborts leaves the in-flight count, whether its body had arrived or not', async (t) => {
  const app = await buildTestApp(t, { maxInFlight: 1 })
  const arrived = arrivals(app)
  const aborted = aborts(app)
  const held = holds(app)
  const port = await listen(app)

  const halfSent = postHalf(port, '/sync', SYNC)
  await arrived.next()
  const seen = aborted.next()
  halfSent.abort()
  await seen
  t.equal(await inFlight(app), 0, 'a half-sent call was never counted')

  const whole = postHalf(port, '/sync', SYNC)
  await arrived.next()
  const done = whole.finish().catch(() => undefined)
  await held.next()
  t.equal(await inFlight(app), 1)
  t.equal((await post(port, '/sync', SYNC)).statusCode, 429, 'in flight')
  whole.abort()
  await done
  // Fastify reports no abort once the body is in: the answer's 'close' frees the slot, while the handler still runs.
  const deadline = performance.now() + 5000
  while ((await inFlight(app)) !== 0 && performance.now() < deadline) await nextTurn()
  t.equal(await inFlight(app), 0, 'the slot is free again')
  held.release()
})

t.test('within the limit, concurrent calls are all served', async (t) => {
  const app = await buildTestApp(t, { maxInFlight: 3 })
  const held = holds(app)
  const port = await listen(app)
  const waiting = [post(port, '/sync', SYNC), post(port, '/sync', SYNC)]
  await held.next()
  await held.next()
  t.equal(await inFlight(app), 2)
  const third = post(port, '/sync', SYNC)
  await held.next()
  held.release()
  const answers = await Promise.all([...waiting, third])
  t.strictSame(
    answers.map((answer) => answer.statusCode),
    [200, 200, 200],
  )
  t.equal(answers[0]?.body, answers[1]?.body)
  t.equal(await inFlight(app), 0)
})

/** Opens a keep-alive connection and waits until the server has answered one call on it (it is accepted). */
async function warmConnection(port: number): Promise<{ socket: Socket; answers: string[] }> {
  const socket = connect(port, '127.0.0.1')
  const answers: string[] = []
  socket.on('data', (chunk: Buffer) => answers.push(chunk.toString('utf8')))
  await new Promise<void>((ready) => socket.once('connect', ready))
  socket.write('POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}')
  while (answers.length === 0) await nextTurn()
  answers.length = 0
  return { socket, answers }
}

t.test(
  'calls arriving in one turn of the event loop are refused once that turn has run past MAX_EVENT_LOOP_DELAY_MS',
  async (t) => {
    const app = await buildTestApp(t, { maxEventLoopDelayMs: 30 })
    // The hook itself is slow: 60 ms of CPU per call.
    app.addHook('preHandler', async (request) => {
      if (request.method !== 'POST') return
      const until = performance.now() + 60
      while (performance.now() < until);
    })
    const port = await listen(app)
    const clients = [await warmConnection(port), await warmConnection(port), await warmConnection(port)]
    t.teardown(() => clients.forEach((client) => client.socket.destroy()))
    const call = `POST /sync HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(SYNC)}\r\n\r\n${SYNC}`
    // A quiet moment first, so that under-pressure's reading of the loop's delay is low.
    await new Promise((quiet) => setTimeout(quiet, 300))
    // Written in one go, the three calls are in the kernel's buffers before the loop looks again: one turn sees all.
    for (const client of clients) client.socket.write(call)
    while (clients.some((client) => !client.answers.join('').includes('\r\n\r\n{'))) await nextTurn()
    const statuses = clients.map((client) => client.answers.join('').slice(9, 12)).sort()
    t.strictSame(statuses, ['200', '429', '429'], 'the first call of the turn is answered, the others refused')
    const refusal = clients
      .map((client) => client.answers.join(''))
      .find((text) => text.startsWith('HTTP/1.1 429')) as string
    t.match(refusal, /\r\nretry-after: 1\r\n/i)
    t.match(refusal, /"message":"This turn of the event loop has run \d+ ms; retry after 1 s."/)
    const text = (await app.ops.inject({ method: 'GET', url: '/metrics' })).body
    t.match(text, /challenge_hooks_rejected_total\{cause="eventLoopDelay"\} 2/)
  },
)

t.test('with MAX_EVENT_LOOP_DELAY_MS 0, nothing is refused on delay', async (t) => {
  const app = await buildTestApp(t, { maxEventLoopDelayMs: 0 })
  const until = performance.now() + 150
  while (performance.now() < until);
  const answers = await Promise.all(
    [1, 2, 3].map(() => app.inject({ method: 'POST', url: '/sync', payload: runningRequest() })),
  )
  t.strictSame(
    answers.map((answer) => answer.statusCode),
    [200, 200, 200],
  )
})

t.test(
  'a loop that keeps running late (under-pressure) refuses calls, naming the delay, and they go no further',
  async (t) => {
    const config = testConfig({ maxEventLoopDelayMs: 10 })
    const log = logCapture()
    const app = await buildApp(config, { logger: { ...loggerOptions(config), stream: log.stream } })
    t.teardown(() => app.close())
    let handled = 0
    app.addHook('preHandler', async () => {
      handled += 1
    })
    await app.ready()
    // 600 ms of a loop that is 30 ms late at every turn.
    const until = performance.now() + 600
    const refused: Awaited<ReturnType<typeof app.inject>>[] = []
    let calls = 0
    while (performance.now() < until) {
      const busy = performance.now() + 30
      while (performance.now() < busy);
      await new Promise((tick) => setTimeout(tick, 1))
      const attempt = await app.inject({ method: 'POST', url: '/customize', payload: customizeRequest() })
      calls += 1
      if (attempt.statusCode === 429) refused.push(attempt)
    }
    const onReading = refused.filter((answer) => answer.json().message.startsWith('The event loop runs'))
    t.ok(onReading.length > 0, `calls were refused on under-pressure's reading (${onReading.length} of ${calls})`)
    t.match(onReading[0]?.json(), {
      error: 'Too Many Requests',
      message: /^The event loop runs \d+ ms late; retry after 1 s\.$/,
    })
    t.equal(onReading[0]?.headers['retry-after'], '1')
    t.equal(handled, calls - refused.length, 'a refused call never reaches its handler')
    t.strictSame(
      log.entries().filter((entry) => (entry.level as number) >= 50),
      [],
      'no error logged',
    )
    t.notMatch(log.text(), /already sent/)
  },
)

t.test(
  "delayRefusal: the time spent in this turn, then under-pressure's reading; Infinity is no reading; 0 turns it off",
  async (t) => {
    const cases: [number, number, number, ReturnType<typeof delayRefusal>][] = [
      [100, 20, 30, undefined],
      [100, 100, 100, undefined],
      [100, 140.4, 0, { cause: 'eventLoopDelay', message: 'This turn of the event loop has run 140 ms' }],
      [100, 140, 300, { cause: 'eventLoopDelay', message: 'This turn of the event loop has run 140 ms' }],
      [100, 5, 153.6, { cause: 'eventLoopDelay', message: 'The event loop runs 154 ms late' }],
      [100, 5, Number.POSITIVE_INFINITY, undefined],
      [0, 5000, 5000, undefined],
    ]
    for (const [max, spent, reading, expected] of cases) {
      t.strictSame(delayRefusal(max, spent, reading), expected, `max ${max}, this turn ${spent}, reading ${reading}`)
    }
  },
)

/** Counts the calls that reach the app (its onRequest hooks). Must be called before the app is ready. */
function reaching(app: FastifyInstance): { count: number } {
  const seen = { count: 0 }
  app.addHook('onRequest', async () => {
    seen.count += 1
  })
  return seen
}

/**
 * A hook app whose load shedding reads the loop's delay from the test instead of under-pressure's sampler: what the
 * gate does with a delay, whatever the machine's load (how late the loop really runs is measured by the test above
 * and by the load suite). MAX_EVENT_LOOP_DELAY_MS is 1 s, so that no turn of the loop on a busy machine runs past it
 * and refuses on its own.
 */
async function appWithDelay(t: Test, delay: { ms: number }) {
  const app = await buildApp(testConfig({ maxEventLoopDelayMs: 1000 }), {
    logger: false,
    eventLoopDelay: () => delay.ms,
  })
  t.teardown(() => app.close())
  return app
}

t.test(
  'the gate answers before Fastify: a hook call refused on delay never reaches the app; other paths are not gated',
  async (t) => {
    const delay = { ms: 1500 }
    const app = await appWithDelay(t, delay)
    const seen = reaching(app)
    const port = await listen(app)
    const body = JSON.stringify({
      error: 'Too Many Requests',
      message: 'The event loop runs 1500 ms late; retry after 1 s.',
    })
    for (const url of ['/sync', '/finalize', '/customize']) {
      const refused = await post(port, url, url === '/customize' ? CUSTOMIZE : SYNC)
      t.equal(refused.statusCode, 429, `${url}: refused`)
      t.equal(refused.body, body, `${url}: the delay named, and when to retry`)
      t.match(refused.headers, {
        'content-type': 'application/json; charset=utf-8',
        'retry-after': '1',
        'content-length': String(Buffer.byteLength(body)),
        connection: 'keep-alive',
      })
    }
    t.equal(seen.count, 0, 'no refused call reached the app (its onRequest hooks)')
    t.equal((await post(port, '/nope', '{}')).statusCode, 404, 'a path that is no hook is never gated')
    t.equal(seen.count, 1, 'it reached the app')
    const text = (await app.ops.inject({ method: 'GET', url: '/metrics' })).body
    t.match(text, /challenge_hooks_rejected_total\{cause="eventLoopDelay"\} 3\n/)
    delay.ms = 20
    t.equal((await post(port, '/sync', SYNC)).statusCode, 200, 'once the loop is on time, the next call is served')
    t.equal(seen.count, 2)
  },
)

t.test("while shutting down, the gate's answers close their connection too", async (t) => {
  const app = await appWithDelay(t, { ms: 1500 })
  const seen = reaching(app)
  const port = await listen(app)
  app.markClosing()
  const refused = await post(port, '/sync', SYNC)
  t.equal(refused.statusCode, 429)
  t.equal(refused.headers.connection, 'close')
  t.equal(seen.count, 0, 'refused by the gate')
})

t.test('turnClock: time since the first call of this turn of the loop, from 0 again in the next turn', async (t) => {
  let now = 1000
  const spent = turnClock(() => now)
  t.equal(spent(), 0, 'the first call starts the turn')
  now = 1030
  t.equal(spent(), 30, 'a later call in the same turn')
  await nextTurn()
  now = 1100
  t.equal(spent(), 0, 'a new turn')
  now = 1105
  t.equal(spent(), 5)
})

t.test('a body that arrives in a turn already past the limit is refused before it is parsed', async (t) => {
  const metrics = createMetrics()
  // A loop that is not late across turns: only the time spent in this turn counts.
  const config = testConfig({ maxEventLoopDelayMs: 30 })
  const shedding = sheddingChecks({
    config,
    metrics,
    state: { closing: false },
    hookPaths: ['/sync'],
    reading: () => 0,
    log: () => Fastify().log,
  })
  const request = (url: string) => ({ url }) as FastifyRequest
  t.equal(shedding.beforeParse(request('/sync')), undefined, 'the first body of the turn is parsed')
  const until = performance.now() + 40
  while (performance.now() < until);
  const refusal = shedding.beforeParse(request('/sync'))
  t.ok(refusal instanceof RetryLaterError, 'the next one, 40 ms later in the same turn, is refused')
  t.equal(refusal?.statusCode, 429)
  t.equal(refusal?.retryAfterSeconds, 1)
  t.match(refusal?.body, {
    error: 'Too Many Requests',
    message: /^This turn of the event loop has run \d+ ms; retry after 1 s\.$/,
  })
  t.equal(shedding.beforeParse(request('/nope')), undefined, 'a path that is no hook is never refused')
  t.match(
    await metrics.registry.metrics(),
    /challenge_hooks_rejected_total\{cause="eventLoopDelay"\} 1/,
    'counted as shed',
  )
})

t.test(
  'the JSON parser answers the refusal of beforeParse: 429 and Retry-After, and the body is never parsed',
  async (t) => {
    const app = Fastify()
    t.teardown(() => app.close())
    await app.register(errorHandlers)
    let refuse = true
    const refusal = () => (refuse ? new RetryLaterError(errorBody(429, 'Busy; retry after 2 s.'), 2) : undefined)
    await app.register(jsonBody, { beforeParse: refusal })
    app.post('/sync', async (request) => ({ got: request.body }))
    // Not JSON: parsing it would be a 400, so a 429 proves the body was never parsed.
    const refused = await app.inject({
      method: 'POST',
      url: '/sync',
      headers: { 'content-type': 'application/json' },
      payload: '{not json',
    })
    t.equal(refused.statusCode, 429)
    t.equal(refused.headers['retry-after'], '2')
    t.strictSame(refused.json(), { error: 'Too Many Requests', message: 'Busy; retry after 2 s.' })
    refuse = false
    const parsed = await app.inject({ method: 'POST', url: '/sync', payload: { a: 1 } })
    t.strictSame(parsed.json(), { got: { a: 1 } }, 'without a refusal the body is parsed as before')
  },
)

/** A connection as holdUntilNextTurn sees it: its handle's reading flag and calls, Node's own pause, destroyed. */
function fakeConnection(handle: { reading?: boolean; readStop?: unknown } | null = { reading: true }) {
  const calls: string[] = []
  const withMethods =
    handle === null
      ? null
      : { readStop: () => calls.push('readStop'), readStart: () => calls.push('readStart'), ...handle }
  const socket = { _handle: withMethods, destroyed: false, _paused: false }
  return { socket, calls, handle: withMethods, asSocket: socket as unknown as Socket }
}

t.test(
  'holdUntilNextTurn stops reading a connection for the rest of the turn and reads it again in the next',
  async (t) => {
    const held = fakeConnection()
    holdUntilNextTurn(held.asSocket)
    t.strictSame(held.calls, ['readStop'], 'reading stopped at once')
    t.equal(held.handle?.reading, false)
    holdUntilNextTurn(held.asSocket)
    t.strictSame(held.calls, ['readStop'], 'a connection already held is left as it is')
    await nextTurn()
    t.strictSame(held.calls, ['readStop', 'readStart'], 'read again in the next turn')
    t.equal(held.handle?.reading, true)

    for (const [what, change] of [
      ['closed meanwhile', (c: ReturnType<typeof fakeConnection>) => (c.socket.destroyed = true)],
      [
        'paused by Node meanwhile (an answer its client does not read)',
        (c: ReturnType<typeof fakeConnection>) => (c.socket._paused = true),
      ],
      [
        'read again by Node meanwhile',
        (c: ReturnType<typeof fakeConnection>) => c.handle !== null && (c.handle.reading = true),
      ],
    ] as const) {
      const connection = fakeConnection()
      holdUntilNextTurn(connection.asSocket)
      change(connection)
      await nextTurn()
      t.strictSame(connection.calls, ['readStop'], `not restarted when ${what}`)
    }
    for (const [what, handle] of [
      ['no handle (closed)', null],
      ['not reading', { reading: false }],
      ['a handle that cannot stop reading', { reading: true, readStop: undefined }],
    ] as const) {
      const connection = fakeConnection(handle)
      holdUntilNextTurn(connection.asSocket)
      await nextTurn()
      t.strictSame(connection.calls, [], `left alone: ${what}`)
    }
  },
)
