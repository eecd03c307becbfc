/**
 * A closed-loop load generator on node:http keep-alive: `concurrency` callers, each sending its next request as
 * soon as the previous answer is read (like Metacontroller's workers). A warm-up, then a fixed measuring window;
 * only answers that complete inside the window count. Bytes are counted as they go over the wire (status line,
 * headers, body), both ways.
 */
import { Agent, request } from 'node:http'

export interface LoadOptions {
  port: number
  path: string
  body: Buffer
  headers: Record<string, string>
  concurrency: number
  warmupMs: number
  durationMs: number
  /** the status every answer should have (200; 304 when sending a matching If-None-Match) */
  expectStatus: number
  /** called when the measuring window opens and closes (CPU and memory sampling of the server) */
  onWindow?: (event: 'start' | 'end') => void
}

export interface LoadResult {
  requests: number
  seconds: number
  rps: number
  p50Ms: number
  p99Ms: number
  meanMs: number
  maxMs: number
  /** answers with another status than expected, and transport errors, in the window */
  unexpected: number
  statuses: Record<string, number>
  errors: number
  firstError?: string
  /** wire bytes per request in the window */
  sentPerRequest: number
  receivedPerRequest: number
  /** CPU the load generator itself used in the window, as a share of one core */
  clientCpu: number
  /** every latency in the window, ms, sorted */
  latencies: Float64Array
  /** wire bytes received in the window */
  receivedBytes: number
}

interface Outcome {
  status: number
  ms: number
  received: number
  error?: string
}

const TIMEOUT_MS = 10_000

function requestHead(options: LoadOptions): number {
  const lines = [`POST ${options.path} HTTP/1.1`, `host: 127.0.0.1:${options.port}`, 'connection: keep-alive']
  for (const [name, value] of Object.entries(options.headers)) lines.push(`${name}: ${value}`)
  lines.push(`content-length: ${options.body.length}`)
  return Buffer.byteLength(`${lines.join('\r\n')}\r\n\r\n`)
}

function once(agent: Agent, options: LoadOptions): Promise<Outcome> {
  return new Promise((resolve) => {
    const start = process.hrtime.bigint()
    const elapsed = () => Number(process.hrtime.bigint() - start) / 1e6
    const req = request(
      {
        host: '127.0.0.1',
        port: options.port,
        path: options.path,
        method: 'POST',
        agent,
        headers: { ...options.headers, 'content-length': String(options.body.length) },
      },
      (res) => {
        let received = Buffer.byteLength(`HTTP/1.1 ${res.statusCode} ${res.statusMessage}\r\n\r\n`)
        for (let i = 0; i < res.rawHeaders.length; i += 2)
          received += Buffer.byteLength(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}\r\n`)
        res.on('data', (chunk: Buffer) => (received += chunk.length))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: elapsed(), received }))
        res.on('error', (error) => resolve({ status: 0, ms: elapsed(), received, error: error.message }))
      },
    )
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)))
    req.on('error', (error) => resolve({ status: 0, ms: elapsed(), received: 0, error: error.message }))
    req.end(options.body)
  })
}

export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
}

export async function load(options: LoadOptions): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency })
  const t0 = performance.now()
  const windowStart = t0 + options.warmupMs
  const windowEnd = windowStart + options.durationMs
  const latencies: number[] = []
  const statuses: Record<string, number> = {}
  let errors = 0
  let firstError: string | undefined
  let received = 0
  let state: 'warm-up' | 'open' | 'closed' = 'warm-up'
  let cpuAtStart = process.cpuUsage()
  let cpu = { user: 0, system: 0 }
  const openWindow = () => {
    if (state !== 'warm-up') return
    state = 'open'
    cpuAtStart = process.cpuUsage()
    options.onWindow?.('start')
  }
  const closeWindow = () => {
    if (state !== 'open') return
    state = 'closed'
    cpu = process.cpuUsage(cpuAtStart)
    options.onWindow?.('end')
  }
  const startTimer = setTimeout(openWindow, options.warmupMs)
  const endTimer = setTimeout(closeWindow, options.warmupMs + options.durationMs)

  const caller = async () => {
    while (performance.now() < windowEnd) {
      const outcome = await once(agent, options)
      const done = performance.now()
      if (done < windowStart || done > windowEnd) continue
      latencies.push(outcome.ms)
      statuses[String(outcome.status)] = (statuses[String(outcome.status)] ?? 0) + 1
      received += outcome.received
      if (outcome.error !== undefined) {
        errors += 1
        firstError ??= outcome.error
      }
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, caller))
  // The callers may all finish (past the window's end) before the timer fires.
  closeWindow()
  clearTimeout(startTimer)
  clearTimeout(endTimer)
  agent.destroy()

  const sorted = Float64Array.from(latencies).sort()
  const requests = sorted.length
  const seconds = options.durationMs / 1000
  const sum = latencies.reduce((a, b) => a + b, 0)
  return {
    requests,
    seconds,
    rps: requests / seconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    meanMs: requests ? sum / requests : Number.NaN,
    maxMs: requests ? (sorted[requests - 1] as number) : Number.NaN,
    unexpected: requests - (statuses[String(options.expectStatus)] ?? 0),
    statuses,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    sentPerRequest: requestHead(options) + options.body.length,
    receivedPerRequest: requests ? received / requests : Number.NaN,
    clientCpu: (cpu.user + cpu.system) / 1e6 / seconds,
    latencies: sorted,
    receivedBytes: received,
  }
}
