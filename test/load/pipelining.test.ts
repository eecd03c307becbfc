// Clients that pipeline GET /metrics without ever reading the answers cannot starve another client's probes,
// and the server's memory stays bounded.
import t from 'tap'
import type { Socket } from 'node:net'
import { probe, sleep, sockets, startServer } from '../support/load/harness.js'

const CLIENTS = 5
const FLOOD_MS = 10_000
const PROBE_WITHIN_MS = 1000
const MAX_RSS_MIB = 400

/** Writes pipelined requests as fast as the connection takes them and never reads: stops when the server stops reading. */
function flood(socket: Socket, request: string, until: number): { written: () => number } {
  const batch = Buffer.from(request.repeat(256))
  let written = 0
  socket.pause() // never read the answers
  socket.on('error', () => {})
  const write = () => {
    while (performance.now() < until && !socket.destroyed) {
      written += 256
      if (!socket.write(batch)) return void socket.once('drain', write)
    }
  }
  write()
  return { written: () => written }
}

t.test(
  `${CLIENTS} clients pipelining GET /metrics without reading: probes answered within ${PROBE_WITHIN_MS} ms, memory bounded`,
  async (t) => {
    const server = await startServer(t)
    const open = sockets(t)
    const health = probe(t, server.opsPort, '/healthz')
    const readiness = probe(t, server.opsPort, '/readyz')
    await sleep(500)
    const until = performance.now() + FLOOD_MS
    const floods: { written: () => number }[] = []
    for (let i = 0; i < CLIENTS; i++) {
      floods.push(flood(await open.open(server.opsPort), 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', until))
    }
    await sleep(FLOOD_MS)
    const [healthz, readyz] = await Promise.all([health.stop(), readiness.stop()])
    const peak = server.peakRssMiB()
    const written = floods.reduce((sum, each) => sum + each.written(), 0)

    t.equal(healthz.failed, 0, `no /healthz probe failed ${healthz.firstFailure ?? ''}`)
    t.equal(readyz.failed, 0, `no /readyz probe failed ${readyz.firstFailure ?? ''}`)
    t.ok(
      healthz.max < PROBE_WITHIN_MS,
      `/healthz within ${PROBE_WITHIN_MS} ms: p50 ${healthz.p50.toFixed(1)}, p99 ${healthz.p99.toFixed(1)}, max ${healthz.max.toFixed(1)} ms (${healthz.count} probes)`,
    )
    t.ok(
      readyz.max < PROBE_WITHIN_MS,
      `/readyz within ${PROBE_WITHIN_MS} ms: p50 ${readyz.p50.toFixed(1)}, p99 ${readyz.p99.toFixed(1)}, max ${readyz.max.toFixed(1)} ms (${readyz.count} probes)`,
    )
    t.ok(peak < MAX_RSS_MIB, `peak RSS ${peak.toFixed(0)} MiB < ${MAX_RSS_MIB} MiB`)
    t.ok(written > 1000, `the clients pipelined requests (${written} written)`)
    t.strictSame(server.errors(), [], 'nothing logged at level error')
    t.comment(
      `measured: /healthz p99 ${healthz.p99.toFixed(1)} ms max ${healthz.max.toFixed(1)} ms, /readyz p99 ${readyz.p99.toFixed(1)} ms; peak RSS ${peak.toFixed(0)} MiB; ${written} pipelined requests written`,
    )
  },
)
