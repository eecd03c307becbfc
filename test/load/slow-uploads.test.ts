// 80 authenticated uploads trickling 1 byte/s hold no slot: a normal /sync is answered 200 within 2 s all along,
// and every trickling body is answered 408 and its connection closed once REQUEST_TIMEOUT_MS has passed.
import t from 'tap'
import type { Socket } from 'node:net'
import { AUTH, percentile, send, sleep, sockets, startServer, SYNC_BODY, TOKEN } from '../support/load/harness.js'

const UPLOADS = 80
const REQUEST_TIMEOUT_MS = 5000 // the default
/** Node checks for expired requests every second at most (timeoutCheckInterval). */
const CUT_WITHIN_MS = REQUEST_TIMEOUT_MS + 1000 + 1000
const TRICKLE_MS = 15_000
const NORMAL_EVERY_MS = 500
const NORMAL_WITHIN_MS = 2000

interface Trickle {
  socket: Socket
  started: number
  /** What the server wrote back, and when the connection closed (ms after the upload began). */
  received: string
  closedAfterMs?: number
}

function trickle(socket: Socket): Trickle {
  const upload: Trickle = { socket, started: performance.now(), received: '' }
  socket.write(
    `POST /sync HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${SYNC_BODY.length}\r\n\r\n`,
  )
  let sent = 0
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(SYNC_BODY.subarray(sent, ++sent))
  }, 1000)
  socket.on('data', (chunk: Buffer) => (upload.received += chunk.toString('utf8')))
  socket.on('error', () => {})
  socket.on('close', () => {
    clearInterval(timer)
    upload.closedAfterMs = performance.now() - upload.started
  })
  return upload
}

t.test(`${UPLOADS} uploads at 1 byte/s: normal calls are served, the slow bodies get 408 and are closed`, async (t) => {
  const server = await startServer(t)
  const open = sockets(t)
  const uploads: Trickle[] = []
  for (let i = 0; i < UPLOADS; i++) uploads.push(trickle(await open.open(server.port)))
  await sleep(500)

  const normal: { statusCode: number; ms: number }[] = []
  const began = performance.now()
  while (performance.now() - began < TRICKLE_MS && uploads.some((upload) => upload.closedAfterMs === undefined)) {
    const answer = await send(server.port, 'POST', '/sync', {
      body: SYNC_BODY,
      headers: AUTH,
      timeoutMs: 10_000,
    }).catch((error: Error) => ({
      statusCode: 0,
      ms: Number.POSITIVE_INFINITY,
      body: error.message,
    }))
    normal.push({ statusCode: answer.statusCode, ms: answer.ms })
    await sleep(NORMAL_EVERY_MS)
  }

  const slowest = Math.max(...normal.map((answer) => answer.ms))
  t.ok(normal.length >= 8, `normal calls were made all along (${normal.length})`)
  t.strictSame(new Set(normal.map((answer) => answer.statusCode)), new Set([200]), 'every normal /sync got 200')
  t.ok(
    slowest < NORMAL_WITHIN_MS,
    `every normal /sync within ${NORMAL_WITHIN_MS} ms: slowest ${slowest.toFixed(0)} ms, p50 ${percentile(
      normal.map((a) => a.ms).sort((a, b) => a - b),
      50,
    ).toFixed(0)} ms`,
  )

  const cut = uploads.map((upload) => upload.closedAfterMs ?? Number.POSITIVE_INFINITY).sort((a, b) => a - b)
  t.ok(
    (cut.at(-1) as number) < CUT_WITHIN_MS,
    `every slow upload closed within ${CUT_WITHIN_MS} ms: first ${cut[0]?.toFixed(0)} ms, last ${cut.at(-1)?.toFixed(0)} ms`,
  )
  t.ok((cut[0] as number) >= REQUEST_TIMEOUT_MS - 100, 'and not before REQUEST_TIMEOUT_MS')
  const answered408 = uploads.filter((upload) => upload.received.startsWith('HTTP/1.1 408 Request Timeout\r\n'))
  t.equal(answered408.length, UPLOADS, 'each got 408')
  const [head = '', body = ''] = (answered408[0]?.received ?? '').split('\r\n\r\n')
  t.match(head, /\r\nConnection: close\r\n/i)
  t.strictSame(JSON.parse(body), {
    error: 'Request Timeout',
    message: 'The request did not arrive in time (REQUEST_TIMEOUT_MS); the connection is closed.',
  })
  t.strictSame(server.errors(), [], 'nothing logged at level error')
  t.comment(
    `measured: normal /sync slowest ${slowest.toFixed(0)} ms (${normal.length} calls, all 200); slow uploads 408 and closed after ${cut[0]?.toFixed(0)}-${cut.at(-1)?.toFixed(0)} ms`,
  )
})
