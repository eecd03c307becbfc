/**
 * A flood of hook calls, run as its own process (test/load/overload.test.ts spawns it) so that its CPU is not the
 * test's: FLOOD_CONNECTIONS keep-alive connections, each sending POST /sync with FLOOD_BODY the moment the previous
 * answer has arrived, for FLOOD_MS; Retry-After is not honoured (the worst case), though FLOOD_BACKOFF_MS makes a
 * connection wait that long after a 429 (bench/shedding/). Raw sockets and a minimal response parser keep the
 * client's own cost per call small. Prints one JSON line with what it got, then exits.
 *
 *   FLOOD_PORT, FLOOD_TOKEN, FLOOD_BODY (a file), FLOOD_CONNECTIONS, FLOOD_MS, FLOOD_BACKOFF_MS (default 0)
 */
import { readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'

const port = Number(process.env.FLOOD_PORT)
const connections = Number(process.env.FLOOD_CONNECTIONS)
const durationMs = Number(process.env.FLOOD_MS)
const backoffMs = Number(process.env.FLOOD_BACKOFF_MS ?? 0)
const body = readFileSync(process.env.FLOOD_BODY as string)
const head = Buffer.from(
  `POST /sync HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${process.env.FLOOD_TOKEN}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
)
const call = Buffer.concat([head, body])

const statuses: Record<string, number> = {}
let retryAfterMissing = 0
let retryAfterSeen = ''
const latencies: number[] = []
let reconnects = 0
let errors = 0
const until = performance.now() + durationMs

function run(): void {
  const socket: Socket = connect(port, '127.0.0.1')
  let buffered: Buffer = Buffer.alloc(0)
  let sentAt = 0
  const next = () => {
    if (performance.now() >= until) return void socket.end()
    sentAt = performance.now()
    socket.write(call)
  }
  socket.on('connect', next)
  socket.on('data', (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk])
    for (;;) {
      const end = buffered.indexOf('\r\n\r\n')
      if (end < 0) return
      const headers = buffered.subarray(0, end).toString('latin1')
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(headers)?.[1] ?? 0)
      if (buffered.length < end + 4 + length) return
      buffered = buffered.subarray(end + 4 + length)
      const status = headers.slice(9, 12)
      statuses[status] = (statuses[status] ?? 0) + 1
      latencies.push(performance.now() - sentAt)
      if (status === '429') {
        const retryAfter = /\r\nretry-after: ([^\r]*)/i.exec(headers)?.[1]
        if (retryAfter === undefined) retryAfterMissing += 1
        else retryAfterSeen = retryAfter
      }
      if (/\r\nconnection: close/i.test(headers)) return void socket.destroy()
      if (status === '429' && backoffMs > 0) setTimeout(next, backoffMs)
      else next()
    }
  })
  socket.on('error', () => (errors += 1))
  socket.on('close', () => {
    if (performance.now() < until) {
      reconnects += 1
      run()
    }
  })
}

for (let i = 0; i < connections; i++) run()
setTimeout(() => {
  const sorted = latencies.sort((a, b) => a - b)
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0
  process.stdout.write(
    `${JSON.stringify({ statuses, retryAfterMissing, retryAfterSeen, reconnects, errors, answers: sorted.length, p50: at(50), p99: at(99) })}\n`,
    () => process.exit(0),
  )
}, durationMs + 500)
