import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { aborts, arrivals, inFlight, listen, post, postHalf } from './http-client.js'
import { customizeRequest, runningRequest } from './worlds.js'

const SYNC = JSON.stringify(runningRequest())
const CUSTOMIZE = JSON.stringify(customizeRequest())

t.test('with maxInFlight 1, a second call while one is in flight is 429 with an integer Retry-After', async (t) => {
  const app = await buildTestApp(t, { maxInFlight: 1 })
  const arrived = arrivals(app)
  const port = await listen(app)

  const first = postHalf(port, '/sync', SYNC)
  await arrived.next()
  t.equal(await inFlight(port), 1, 'the half-sent call is in flight')

  for (const url of ['/sync', '/finalize', '/customize']) {
    const shed = await post(port, url, url === '/customize' ? CUSTOMIZE : SYNC)
    t.equal(shed.statusCode, 429, url)
    t.match(shed.headers['retry-after'], /^[1-9]\d*$/, `${url}: integer Retry-After`)
    t.same(JSON.parse(shed.body), { error: 'Too Many Requests', message: 'More than 1 hook calls in flight; retry after 1 s.' })
  }
  t.equal((await post(port, '/nope', '{}')).statusCode, 404, 'other routes are not shed')
  t.equal(await inFlight(port), 1, 'shed calls never entered the count')

  const answered = await first.finish()
  t.equal(answered.statusCode, 200, 'the call in flight completes')
  t.match(JSON.parse(answered.body), { status: { phase: 'Running' } })
  t.equal(await inFlight(port), 0, 'back to 0 after completion')
  t.equal((await post(port, '/sync', SYNC)).statusCode, 200, 'the next call is served')

  const metrics = (await post(port, '/customize', CUSTOMIZE)).statusCode
  t.equal(metrics, 200)
})

t.test('the shed count is a metric', async (t) => {
  const app = await buildTestApp(t, { maxInFlight: 1 })
  const arrived = arrivals(app)
  const port = await listen(app)
  const first = postHalf(port, '/customize', CUSTOMIZE)
  await arrived.next()
  await post(port, '/customize', CUSTOMIZE)
  await post(port, '/customize', CUSTOMIZE)
  t.equal((await first.finish()).statusCode, 200)
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body
  t.match(text, /challenge_hooks_rejected_total\{cause="overloaded"\} 2/)
})

t.test('a client that aborts mid-body leaves the in-flight count', async (t) => {
  const app = await buildTestApp(t, { maxInFlight: 1 })
  const arrived = arrivals(app)
  const aborted = aborts(app)
  const port = await listen(app)

  const first = postHalf(port, '/sync', SYNC)
  await arrived.next()
  t.equal((await post(port, '/sync', SYNC)).statusCode, 429, 'in flight')
  const seen = aborted.next()
  first.abort()
  await seen
  t.equal(await inFlight(port), 0)
  t.equal((await post(port, '/sync', SYNC)).statusCode, 200, 'the slot is free again')
  t.equal(await inFlight(port), 0)
})

t.test('within the limit, concurrent calls are all served', async (t) => {
  const app = await buildTestApp(t, { maxInFlight: 3 })
  const arrived = arrivals(app)
  const port = await listen(app)
  const held = [postHalf(port, '/sync', SYNC), postHalf(port, '/sync', SYNC)]
  await arrived.next()
  await arrived.next()
  t.equal(await inFlight(port), 2)
  t.equal((await post(port, '/sync', SYNC)).statusCode, 200, 'third of three')
  const answers = await Promise.all(held.map((each) => each.finish()))
  t.same(answers.map((answer) => answer.statusCode), [200, 200])
  t.equal(answers[0]?.body, answers[1]?.body)
  t.equal(await inFlight(port), 0)
})
