// Running vs reachable: when a reader first saw Running, and when a path first carried a connection, per instance.
import { podFailure, type Json, type Scenario } from './harness.js'

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
    if (Date.now() > deadline || status.phase === 'Error') throw new Error(`${name} not Running: ${JSON.stringify(status)}`)
    // After 15 s: the kubelet saying the pod cannot start ends the wait (see harness.ts, running).
    const failure = Date.now() > since + 15_000 ? await podFailure(s, name) : undefined
    if (failure !== undefined) throw new Error(`${name} not Running (${status.phase}/${status.reason}): its pod cannot start: ${failure}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

export function table(samples: Sample[]): string {
  const rows = samples.map((x) => `  ${x.instance.padEnd(22)} Running ${String(x.running).padStart(5)} ms   reachable ${String(x.reachable).padStart(5)} ms   ${x.reachable > x.running ? `Running ${x.reachable - x.running} ms early` : 'reachable first'}`)
  return rows.join('\n')
}

