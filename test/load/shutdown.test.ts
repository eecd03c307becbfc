// SIGTERM to the real process while uploads are in flight: readiness fails at once, answers during the drain carry
// Connection: close, a call in flight finishes, an upload that never ends is cut at the deadline, and the process
// exits 0 well inside the pod's terminationGracePeriodSeconds.
import t from 'tap'
import type { Socket } from 'node:net'
import {
  AUTH,
  send,
  sleep,
  sockets,
  startServer,
  SYNC_BODY,
  terminationGracePeriodSeconds,
  TOKEN,
  type Server,
} from '../support/load/harness.js'

/** SHUTDOWN_DRAIN_MS + REQUEST_TIMEOUT_MS, both at their defaults. */
const DEFAULT_SHUTDOWN_TIMEOUT_MS = 5000 + 5000
const HEAD = `POST /sync HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${SYNC_BODY.length}\r\n\r\n`

interface Upload {
  socket: Socket
  /** What came back, and when the connection closed (ms after SIGTERM). */
  received: () => string
  closed: Promise<number>
}

function upload(socket: Socket, since: () => number): Upload {
  let received = ''
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')))
  socket.on('error', () => {})
  const closed = new Promise<number>((done) => socket.once('close', () => done(since())))
  socket.write(HEAD)
  socket.write(SYNC_BODY.subarray(0, 100))
  return { socket, received: () => received, closed }
}

/** Polls /readyz until it fails (for 5 s at most); the time from the signal to the first 503. */
async function readinessFails(server: Server, signalledAt: number): Promise<number> {
  while (performance.now() - signalledAt < 5000) {
    const answer = await send(server.opsPort, 'GET', '/readyz', { timeoutMs: 2000 })
    if (answer.statusCode === 503) return performance.now() - signalledAt
    await sleep(10)
  }
  return Number.POSITIVE_INFINITY
}

t.test('SIGTERM with uploads in flight: drained, the rest cut at SHUTDOWN_TIMEOUT_MS, exit code 0', async (t) => {
  const drainMs = 2000
  const deadlineMs = 5000
  const server = await startServer(t, {
    SHUTDOWN_DRAIN_MS: String(drainMs),
    SHUTDOWN_TIMEOUT_MS: String(deadlineMs),
    REQUEST_TIMEOUT_MS: '30000',
  })
  const open = sockets(t)
  let signalledAt = Number.NaN
  const since = () => performance.now() - signalledAt
  const endless = upload(await open.open(server.port), since)
  const finishing = upload(await open.open(server.port), since)
  const trickle = setInterval(() => endless.socket.write(' '), 1000)
  t.teardown(() => clearInterval(trickle))
  await sleep(300)

  signalledAt = performance.now()
  server.child.kill('SIGTERM')
  const readinessFailedAfter = await readinessFails(server, signalledAt)
  t.ok(readinessFailedAfter < 250, `readiness failed at once (${readinessFailedAfter.toFixed(0)} ms after the signal)`)
  t.equal((await send(server.opsPort, 'GET', '/healthz')).statusCode, 200, 'liveness stays')

  const during = await send(server.port, 'POST', '/sync', {
    body: SYNC_BODY,
    headers: { ...AUTH, connection: 'keep-alive' },
  })
  t.equal(during.statusCode, 200, 'a call during the drain is answered')
  t.equal(during.headers.connection, 'close', 'with Connection: close')

  await sleep(drainMs + 500 - since())
  const refused = await send(server.port, 'POST', '/sync', { body: SYNC_BODY, headers: AUTH }).catch(
    (error: Error & { code?: string }) => error.code,
  )
  t.equal(refused, 'ECONNREFUSED', 'after the drain, the hook port takes no new connection')
  finishing.socket.write(SYNC_BODY.subarray(100))
  const finishedAt = await finishing.closed
  t.match(finishing.received(), /^HTTP\/1\.1 200 OK\r\n/, 'the call in flight finished')
  t.match(finishing.received(), /\r\nconnection: close\r\n/i)

  const cutAt = await endless.closed
  const exit = await server.exited
  const exitedAt = since()
  t.equal(endless.received(), '', 'the upload that never ends got no answer')
  t.ok(
    cutAt >= deadlineMs - 100 && cutAt < deadlineMs + 1000,
    `and was cut at the deadline (${cutAt.toFixed(0)} ms after the signal)`,
  )
  t.equal(exit, 0, 'exit code 0')
  t.ok(exitedAt < deadlineMs + 1000, `exited ${exitedAt.toFixed(0)} ms after the signal`)
  t.match(server.log().join('\n'), /shutdown deadline \(SHUTDOWN_TIMEOUT_MS\): cutting the calls still in flight/)
  t.strictSame(server.errors(), [], 'nothing logged at level error')
  t.comment(
    `measured: readiness failed ${readinessFailedAfter.toFixed(0)} ms after SIGTERM; the finishing call answered at ${finishedAt.toFixed(0)} ms; ` +
      `the endless upload cut at ${cutAt.toFixed(0)} ms; exit 0 at ${exitedAt.toFixed(0)} ms`,
  )
})

t.test(
  'SIGTERM with the settings the manifests deploy: exit code 0 well inside terminationGracePeriodSeconds',
  async (t) => {
    const grace = terminationGracePeriodSeconds() * 1000
    const server = await startServer(t)
    const open = sockets(t)
    let signalledAt = Number.NaN
    const slow = upload(await open.open(server.port), () => performance.now() - signalledAt)
    const trickle = setInterval(() => slow.socket.write(' '), 1000)
    t.teardown(() => clearInterval(trickle))
    await sleep(300)
    signalledAt = performance.now()
    server.child.kill('SIGTERM')
    const readinessFailedAfter = await readinessFails(server, signalledAt)
    const exit = await server.exited
    const exitedAt = performance.now() - signalledAt
    const cutAt = await slow.closed
    t.ok(readinessFailedAfter < 250, `readiness failed at once (${readinessFailedAfter.toFixed(0)} ms)`)
    t.ok(
      cutAt < DEFAULT_SHUTDOWN_TIMEOUT_MS + 1000,
      `the slow upload was ended by the deadline (${cutAt.toFixed(0)} ms)`,
    )
    t.equal(exit, 0, 'exit code 0')
    t.ok(
      exitedAt < grace / 2,
      `exited after ${exitedAt.toFixed(0)} ms, well inside terminationGracePeriodSeconds (${grace / 1000} s)`,
    )
    t.comment(
      `measured (defaults): readiness failed ${readinessFailedAfter.toFixed(0)} ms after SIGTERM; exit 0 at ${exitedAt.toFixed(0)} ms; grace ${grace / 1000} s`,
    )
  },
)
