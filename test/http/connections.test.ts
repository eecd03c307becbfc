// What happens on a connection before a request reaches the routes: bodies that do not arrive in time, bytes that
// are not HTTP, headers too large, and clients that pipeline without reading the answers.
import t from 'tap'
import { connect, type Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { clientErrorHandler } from '../../src/http/errors.js'
import { MAX_PIPELINED, timeoutCheckInterval } from '../../src/http/http-server.js'
import { buildTestApp } from '../helpers/app.js'
import { listen } from './http-client.js'
import { runningRequest } from '../helpers/hook-requests.js'

const SYNC = JSON.stringify(runningRequest())

interface Raw {
  socket: Socket
  /** Everything received until the server closed the connection, and when it closed (ms after opening). */
  closed: Promise<{ text: string; afterMs: number }>
}

function raw(t: { teardown(fn: () => unknown): void }, port: number): Raw {
  const socket = connect(port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  const opened = performance.now()
  let text = ''
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')))
  socket.on('error', () => {})
  // A reset (the server closed with bytes of ours unread) is a close too.
  const closed = new Promise<{ text: string; afterMs: number }>((done) =>
    socket.once('close', () => done({ text, afterMs: performance.now() - opened })),
  )
  return { socket, closed }
}

function parts(text: string): { head: string; body: unknown } {
  const [head = '', body = ''] = text.split('\r\n\r\n')
  return { head, body: JSON.parse(body) as unknown }
}

async function opsPort(app: FastifyInstance): Promise<number> {
  await app.ops.listen({ port: 0, host: '127.0.0.1' })
  return (app.ops.server.address() as { port: number }).port
}

t.test(
  'a body that does not arrive within REQUEST_TIMEOUT_MS: 408 {error, message}, Connection: close, closed',
  async (t) => {
    const app = await buildTestApp(t, { requestTimeoutMs: 1000 })
    const port = await listen(app)
    const slow = raw(t, port)
    slow.socket.write(
      `POST /sync HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${SYNC.length}\r\n\r\n{`,
    )
    const trickle = setInterval(() => slow.socket.write(' '), 100)
    t.teardown(() => clearInterval(trickle))
    const { text, afterMs } = await slow.closed
    const { head, body } = parts(text)
    t.match(head, /^HTTP\/1\.1 408 Request Timeout\r\n/)
    t.match(head, /\r\nConnection: close\r\n/)
    t.match(head, /\r\nContent-Type: application\/json; charset=utf-8\r\n/)
    t.strictSame(body, {
      error: 'Request Timeout',
      message: 'The request did not arrive in time (REQUEST_TIMEOUT_MS); the connection is closed.',
    })
    t.ok(afterMs >= 1000 && afterMs < 1000 + timeoutCheckInterval(1000) + 1000, `cut after ${afterMs.toFixed(0)} ms`)
    const metrics = (await app.ops.inject({ method: 'GET', url: '/metrics' })).body
    t.match(metrics, /challenge_hooks_rejected_total\{cause="timeout"\} 1/)
  },
)

t.test('headers that never end get the same 408, on the hook port and on the operations port', async (t) => {
  const app = await buildTestApp(t, { requestTimeoutMs: 1000 })
  for (const port of [await listen(app), await opsPort(app)]) {
    const slow = raw(t, port)
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n')
    const { text } = await slow.closed
    t.match(text, /^HTTP\/1\.1 408 Request Timeout\r\n/)
  }
})

t.test('bytes that are not HTTP: 400; headers too large: 431; both close the connection', async (t) => {
  const app = await buildTestApp(t)
  const port = await listen(app)
  const garbage = raw(t, port)
  garbage.socket.write('HELLO THERE\r\n\r\n')
  const bad = parts((await garbage.closed).text)
  t.match(bad.head, /^HTTP\/1\.1 400 Bad Request\r\n/)
  t.strictSame(bad.body, { error: 'Bad Request', message: 'The request is not valid HTTP.' })

  const huge = raw(t, port)
  huge.socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`)
  const large = parts((await huge.closed).text)
  t.match(large.head, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/)
  t.strictSame(large.body, { error: 'Request Header Fields Too Large', message: 'The request headers are too large.' })
})

t.test('the client error handler writes nothing on a connection already answering, or already gone', async (t) => {
  const app = await buildTestApp(t)
  const written: string[] = []
  let destroyed = 0
  const socket = (state: { writable: boolean; destroyed: boolean; answering?: boolean }) =>
    ({
      writable: state.writable,
      destroyed: state.destroyed,
      _httpMessage: state.answering === undefined ? null : { headersSent: state.answering },
      write: (text: string) => void written.push(text),
      destroy: () => void (destroyed += 1),
    }) as unknown as Socket
  const handle = clientErrorHandler().bind(app)
  const timeout = Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' })
  handle(Object.assign(new Error('reset'), { code: 'ECONNRESET' }), socket({ writable: true, destroyed: false }))
  handle(timeout, socket({ writable: false, destroyed: true }))
  t.strictSame([written.length, destroyed], [0, 0], 'a reset or a destroyed socket: nothing to do')
  handle(timeout, socket({ writable: true, destroyed: false, answering: true }))
  t.strictSame(
    [written.length, destroyed],
    [0, 1],
    'an answer has begun: not interrupted by another, the connection is closed',
  )
  handle(timeout, socket({ writable: false, destroyed: false }))
  t.strictSame([written.length, destroyed], [0, 2], 'not writable: closed')
  handle(timeout, socket({ writable: true, destroyed: false, answering: false }))
  t.equal(written.length, 1, 'a response queued but not begun: the 408 is written')
  t.match(written[0], /^HTTP\/1\.1 408 Request Timeout\r\n/)
  handle(new Error('an error without a code'), socket({ writable: true, destroyed: false }))
  t.match(written[1], /^HTTP\/1\.1 400 Bad Request\r\n/, 'any other error: 400')
})

t.test(`a connection with more than ${MAX_PIPELINED} requests waiting for their answers is closed`, async (t) => {
  const app = await buildTestApp(t)
  for (const port of [await listen(app), await opsPort(app)]) {
    const flood = raw(t, port)
    flood.socket.pause() // never reads the answers
    const request = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
    flood.socket.write(request.repeat(5000))
    flood.socket.resume()
    const { text } = await flood.closed
    const answered = text.split('HTTP/1.1 ').length - 1
    t.ok(answered <= MAX_PIPELINED, `closed after at most ${MAX_PIPELINED} answers (${answered}), not 5000`)
  }
})

t.test('one request at a time on a keep-alive connection is never limited', async (t) => {
  const app = await buildTestApp(t)
  const port = await opsPort(app)
  const client = raw(t, port)
  let text = ''
  client.socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')))
  for (let i = 1; i <= MAX_PIPELINED * 3; i++) {
    client.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
    while (text.split('HTTP/1.1 200 OK').length - 1 < i && !client.socket.destroyed)
      await new Promise((tick) => setImmediate(tick))
  }
  t.equal(text.split('HTTP/1.1 200 OK').length - 1, MAX_PIPELINED * 3, 'every answer on one connection')
  t.notOk(client.socket.destroyed)
})
