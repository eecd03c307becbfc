import t from 'tap'
import { connect, type Socket } from 'node:net'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { onPressure, turnClock } from '../../src/http/load-shedding.js'
import { buildApp, loggerOptions } from '../../src/http/app.js'
import { buildTestApp, testConfig } from '../helpers/app.js'
import { logCapture } from './log-capture.js'
import { aborts, arrivals, holds, inFlight, listen, post, postHalf } from './http-client.js'
import { customizeRequest, runningRequest } from './worlds.js'

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
    t.same(JSON.parse(shed.body), { error: 'Too Many Requests', message: 'More than 1 hook calls in flight; retry after 1 s.' })
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

t.test('uploads still arriving hold no slot: with maxInFlight 1, half-sent bodies do not stop a whole call', async (t) => {
  const app = await buildTestApp(t, { maxInFlight: 1 })
  const arrived = arrivals(app)
  const port = await listen(app)
  const slow = [postHalf(port, '/sync', SYNC), postHalf(port, '/sync', SYNC), postHalf(port, '/customize', CUSTOMIZE)]
  for (const _ of slow) await arrived.next()
  t.equal(await inFlight(app), 0, 'three bodies on the way, none in flight')
  t.equal((await post(port, '/sync', SYNC)).statusCode, 200, 'a whole call is served meanwhile')
  const finished = await Promise.all(slow.map((each) => each.finish()))
  t.same(finished.map((answer) => answer.statusCode), [200, 200, 200], 'and the slow ones once their bodies are in')
})

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
  t.match(warnings, [{ cause: 'overloaded', refused: 1, msg: 'overloaded: More than 1 hook calls in flight' }], 'the first refusal is logged, the second only counted')
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
  t.same(answers.map((answer) => answer.statusCode), [200, 200, 200])
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

t.test('calls arriving in one turn of the event loop are refused once that turn has run past MAX_EVENT_LOOP_DELAY_MS', async (t) => {
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
  t.same(statuses, ['200', '429', '429'], 'the first call of the turn is answered, the others refused')
  const refusal = clients.map((client) => client.answers.join('')).find((text) => text.startsWith('HTTP/1.1 429')) as string
  t.match(refusal, /\r\nretry-after: 1\r\n/i)
  t.match(refusal, /"message":"This turn of the event loop has run \d+ ms; retry after 1 s."/)
  const text = (await app.ops.inject({ method: 'GET', url: '/metrics' })).body
  t.match(text, /challenge_hooks_rejected_total\{cause="eventLoopDelay"\} 2/)
})

t.test('with MAX_EVENT_LOOP_DELAY_MS 0, nothing is refused on delay', async (t) => {
  const app = await buildTestApp(t, { maxEventLoopDelayMs: 0 })
  const until = performance.now() + 150
  while (performance.now() < until);
  const answers = await Promise.all([1, 2, 3].map(() => app.inject({ method: 'POST', url: '/sync', payload: runningRequest() })))
  t.same(answers.map((answer) => answer.statusCode), [200, 200, 200])
})

t.test('a loop that keeps running late (under-pressure) refuses calls, naming the delay', async (t) => {
  const app = await buildTestApp(t, { maxEventLoopDelayMs: 10 })
  await app.ready()
  // 600 ms of a loop that is 30 ms late at every turn.
  const until = performance.now() + 600
  let answer: Awaited<ReturnType<typeof app.inject>> | undefined
  while (performance.now() < until) {
    const busy = performance.now() + 30
    while (performance.now() < busy);
    await new Promise((tick) => setTimeout(tick, 1))
    const attempt = await app.inject({ method: 'POST', url: '/customize', payload: customizeRequest() })
    if (attempt.statusCode === 429 && attempt.json().message.startsWith('The event loop runs')) answer = attempt
  }
  t.ok(answer, 'a call was refused on the measured delay')
  t.match(answer?.json(), { error: 'Too Many Requests', message: /^The event loop runs \d+ ms late; retry after 1 s\.$/ })
  t.equal(answer?.headers['retry-after'], '1')
})

t.test('onPressure: a reading refuses the call; no reading (Infinity) lets it through', async (t) => {
  const refusals: string[][] = []
  const handle = onPressure((_request, _reply, cause, message) => void refusals.push([cause, message]))
  const request = {} as FastifyRequest
  const reply = {} as FastifyReply
  handle(request, reply, 'eventLoopDelay', 153.4)
  handle(request, reply, 'eventLoopDelay', Number.POSITIVE_INFINITY)
  t.same(refusals, [['eventLoopDelay', 'The event loop runs 153 ms late']])
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
