import { once } from 'node:events'
import { Agent, request } from 'node:http'
import type { Socket } from 'node:net'
import t from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { arrivals, listen, postHalf } from './http-client.js'
import { customizeRequest, finalizingRequest, runningRequest } from '../helpers/hook-requests.js'

t.test(
  'markClosing makes /readyz 503 while /healthz stays 200, and hooks still answer with Connection: close',
  async (t) => {
    const app = await buildTestApp(t)
    t.equal((await app.ops.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
    const before = await app.inject({ method: 'POST', url: '/sync', payload: runningRequest() })
    t.equal(before.headers.connection, 'keep-alive', 'before: the connection is kept')
    app.markClosing()
    const ready = await app.ops.inject({ method: 'GET', url: '/readyz' })
    t.equal(ready.statusCode, 503)
    t.strictSame(ready.json(), { error: 'Service Unavailable', message: 'shutting down' })
    t.equal((await app.ops.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
    for (const [url, payload] of [
      ['/sync', runningRequest()],
      ['/finalize', finalizingRequest()],
      ['/customize', customizeRequest()],
      ['/sync', { parent: 1 }],
      ['/nope', {}],
    ] as const) {
      const answer = await app.inject({ method: 'POST', url, payload })
      t.equal(answer.headers.connection, 'close', `${url} ${answer.statusCode}: the connection closes after the answer`)
    }
    t.equal(
      (await app.inject({ method: 'POST', url: '/sync', payload: runningRequest() })).statusCode,
      200,
      'calls are still answered',
    )
  },
)

t.test('while draining, a keep-alive client gets its answer and then a closed connection', async (t) => {
  const app = await buildTestApp(t)
  const port = await listen(app)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  const call = () =>
    new Promise<{ statusCode: number; connection: string | undefined; socket: Socket }>((done, fail) => {
      const body = JSON.stringify(runningRequest())
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/sync',
          agent,
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          res.resume()
          res.on('end', () =>
            done({
              statusCode: res.statusCode as number,
              connection: res.headers.connection,
              socket: req.socket as Socket,
            }),
          )
        },
      )
      req.on('error', fail)
      req.end(body)
    })
  const first = await call()
  const second = await call()
  t.equal(first.socket, second.socket, 'before: one connection for both calls')
  app.markClosing()
  const draining = await call()
  t.equal(draining.statusCode, 200)
  t.equal(draining.connection, 'close')
  await once(draining.socket, 'close')
  t.ok(draining.socket.destroyed, 'the server closed the connection after the answer')
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
