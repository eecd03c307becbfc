// Running vs reachable: when a reader first saw Running, and when a path first carried a connection, per instance.
import { connect, type Socket } from 'node:net'
import { NODE_IP, podFailure, type Json, type Scenario } from './harness.js'

export interface Sample {
  instance: string
  /** ms from create to the first status read that said Running */
  running: number
  /** ms from create to the first connection that got the app's answer */
  reachable: number
}

/** Reads the Challenge every 20 ms (a player refreshing fast) until it is Running; when, and the status. */
export async function whenRunning(s: Scenario, name: string, since: number): Promise<{ at: number; status: Json }> {
  const deadline = since + 90_000
  for (;;) {
    const status = await s.status(name)
    if (status.phase === 'Running') return { at: Date.now() - since, status }
    if (Date.now() > deadline || status.phase === 'Error')
      throw new Error(`${name} not Running: ${JSON.stringify(status)}`)
    // After 15 s: the kubelet saying the pod cannot start ends the wait (see harness.ts, running).
    const failure = Date.now() > since + 15_000 ? await podFailure(s, name) : undefined
    if (failure !== undefined)
      throw new Error(`${name} not Running (${status.phase}/${status.reason}): its pod cannot start: ${failure}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

export function table(samples: Sample[]): string {
  const rows = samples.map(
    (x) =>
      `  ${x.instance.padEnd(22)} Running ${String(x.running).padStart(5)} ms   reachable ${String(x.reachable).padStart(5)} ms   ${x.reachable > x.running ? `Running ${x.reachable - x.running} ms early` : 'reachable first'}`,
  )
  return rows.join('\n')
}

/** One TCP connection: the first line the service sends, or the error. */
export function banner(host: string, port: number): Promise<string> {
  return firstLine(connect({ host, port, timeout: 1000 }))
}

/** The first line a connection (plain or TLS) receives, or its error: the connection is closed after it. */
export function firstLine(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      text += chunk
      if (text.includes('\n')) socket.destroy()
    })
    socket.on('timeout', () => socket.destroy(new Error('timeout')))
    socket.on('error', (error) => resolve(`error: ${error.message}`))
    socket.on('close', () => resolve(text.trim()))
  })
}

/**
 * From the moment the instance's Service has a node port: a connection to the node's address started every 20 ms,
 * each on its own (one that waits for its timeout must not hide the moment the path opens), until one gets
 * `answer`; ms from `since` to when that one started.
 */
export async function firstAnswerThroughNodePort(
  s: Scenario,
  name: string,
  since: number,
  answer: string,
  timeoutMs = 90_000,
): Promise<number> {
  const deadline = since + timeoutMs
  let port: number | undefined
  let first: number | undefined
  while (first === undefined && Date.now() < deadline) {
    if (port === undefined) {
      const service = await s.suite.rest.find<{ spec: { ports: { nodePort?: number }[] } }>(
        `/api/v1/namespaces/${s.ns}/services/${name}`,
      )
      port = service?.spec.ports[0]?.nodePort
    } else {
      const startedAt = Date.now()
      void banner(NODE_IP, port).then((got) => {
        if (got === answer && (first === undefined || startedAt < first)) first = startedAt
      })
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  if (first === undefined) throw new Error(`${name}: no answer through the node port`)
  return first - since
}
