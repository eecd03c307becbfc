import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { arrivals, listen, postHalf } from './http-client.js'
import { runningRequest } from './worlds.js'

t.test('markClosing makes /readyz 503 while /healthz stays 200 and hooks still answer', async (t) => {
  const app = await buildTestApp(t)
  t.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
  app.markClosing()
  const ready = await app.inject({ method: 'GET', url: '/readyz' })
  t.equal(ready.statusCode, 503)
  t.same(ready.json(), { error: 'Service Unavailable', message: 'shutting down' })
  t.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/sync', payload: runningRequest() })).statusCode, 200)
})

t.test('app.close() lets a call in flight complete, then closes', async (t) => {
  const app = await buildTestApp(t)
  const arrived = arrivals(app)
  const port = await listen(app)
  const held = postHalf(port, '/sync', JSON.stringify(runningRequest()))
  await arrived.next()

  let closed = false
  const closing = app.close().then(() => {
    closed = true
  })
  const answer = await held.finish()
  t.equal(answer.statusCode, 200, 'the call in flight is answered')
  t.match(JSON.parse(answer.body), { status: { phase: 'Running' } })
  await closing
  t.ok(closed)
  t.equal(app.server.listening, false)
})
