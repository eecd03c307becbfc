/**
 * The load suite's harness: the real server as the pod runs it (`node dist/server.js`, production mode, a bearer
 * token, the default settings unless a test says otherwise) on 127.0.0.1, clients over loopback, and measurements
 * of what a kubelet would see. Everything started here is stopped in the test's teardown, even on failure:
 * sockets destroyed, child processes killed.
 *
 * `npm run test:load` builds dist/ first and runs these files one at a time (tap --jobs 1), so no other test file
 * competes for the two cores while the figures are taken.
 */
import type { ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { request, type IncomingHttpHeaders } from 'node:http'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { exitOf, killOnExit, running, sleep, spawnLogged, waitFor } from '../processes.js'

export { sleep }

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')
export const TOKEN = 'load-test-token-0123456789abcdef0123456789abcdef'
export const AUTH = { authorization: `Bearer ${TOKEN}` }
/** A Running web instance as Metacontroller sends it (managedFields, related pods and definitions): 81 KB. */
export const SYNC_BODY = readFileSync(join(repoRoot, 'test/fixtures/sync-running.json'))

export interface Teardown {
  teardown(fn: () => unknown): void
}

export interface Server {
  child: ChildProcess
  pid: number
  /** The hook port (PORT) and the operations port (OPS_PORT: probes, metrics). */
  port: number
  opsPort: number
  /** The log lines written so far (JSON per line). */
  log(): string[]
  /** The lines logged at level error or fatal: a load must never produce one. */
  errors(): string[]
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  exited: Promise<number | string>
  /** Peak resident memory of the process so far (VmHWM), MiB. */
  peakRssMiB(): number
}

/** The environment of a production pod, with the listen addresses of a test. */
function serverEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    FLAG_SECRET: 'load-0123456789abcdef0123456789abcdef0123456789abcdef',
    HOOK_TOKEN: TOKEN,
    HOST: '127.0.0.1',
    PORT: '0',
    OPS_PORT: '0',
    LOG_LEVEL: 'info',
    ...extra,
  }
}

/**
 * Starts `node dist/server.js` (or `where.entry`, in `where.cwd`) and waits for its "serving" line; killed at the
 * test's teardown. Its log goes to a file, as a container runtime collects it: a pipe that the test process drained
 * late would block the server's synchronous log writes, and the figures would be the test's, not the server's.
 */
export async function startServer(
  t: Teardown,
  extra: Record<string, string> = {},
  where: { entry?: string; cwd?: string } = {},
): Promise<Server> {
  const entry = where.entry ?? join(repoRoot, 'dist/server.js')
  if (!existsSync(entry))
    throw new Error('dist/server.js is missing: run the load suite with `npm run test:load` (it builds first)')
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-load-'))
  const logFile = join(dir, 'server.log')
  const child = spawnLogged(process.execPath, [entry], { cwd: where.cwd ?? repoRoot, env: serverEnv(extra), logFile })
  // Also when the test process ends without its teardown (tap's timeout): no server outlives the suite.
  const letGo = killOnExit(child)
  t.teardown(() => {
    if (running(child)) child.kill('SIGKILL')
    letGo()
    rmSync(dir, { recursive: true, force: true })
  })
  const exited = exitOf(child)
  const log = () =>
    readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
  const serving = await waitFor(
    'the server to serve',
    () => {
      const line = log().find((each) => each.includes('"opsPort"'))
      return line === undefined ? undefined : (JSON.parse(line) as { port: number; opsPort: number })
    },
    { timeoutMs: 15_000, everyMs: 20, child, detail: () => `\n${log().join('\n')}` },
  )
  return {
    child,
    pid: child.pid as number,
    port: serving.port,
    opsPort: serving.opsPort,
    log,
    errors: () => log().filter((line) => /"level":(50|60)/.test(line)),
    exited,
    peakRssMiB() {
      const text = readFileSync(`/proc/${child.pid}/status`, 'utf8')
      return Number(/^VmHWM:\s+(\d+) kB/m.exec(text)?.[1]) / 1024
    },
  }
}

export interface Answer {
  statusCode: number
  headers: IncomingHttpHeaders
  body: string
  ms: number
}

/** One request on a connection of its own (as the kubelet probes: no keep-alive), with a deadline. */
export function send(
  port: number,
  method: 'GET' | 'POST',
  path: string,
  options: { body?: Buffer; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Answer> {
  const started = performance.now()
  return new Promise((done, fail) => {
    const headers: Record<string, string> = { connection: 'close', ...options.headers }
    if (options.body)
      Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(options.body.length) })
    const req = request({ host: '127.0.0.1', port, method, path, agent: false, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () =>
        done({
          statusCode: res.statusCode as number,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          ms: performance.now() - started,
        }),
      )
      res.on('error', fail)
    })
    req.setTimeout(options.timeoutMs ?? 10_000, () =>
      req.destroy(new Error(`${method} ${path}: no answer within ${options.timeoutMs ?? 10_000} ms`)),
    )
    req.on('error', fail)
    req.end(options.body)
  })
}

export interface ProbeStats {
  count: number
  failed: number
  p50: number
  p99: number
  max: number
  firstFailure?: string
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
}

/**
 * Probes `path` as the kubelet does until `stop()`: a new connection for each probe, one probe at a time (the
 * next starts `everyMs` after the previous one ended, as the kubelet's prober does with periodSeconds), each
 * latency recorded, and every probe that did not get a 200 (or nothing within `timeoutMs`) counted as a failure.
 * (Node accepts one connection per turn of its event loop, so probes fired at a fixed rate faster than that would
 * measure their own queue in the listener's backlog, not the server.)
 */
export function probe(
  t: Teardown,
  port: number,
  path: string,
  everyMs = 100,
  timeoutMs = 5000,
): { stop(): Promise<ProbeStats> } {
  const latencies: number[] = []
  let failed = 0
  let firstFailure: string | undefined
  let stopped = false
  t.teardown(() => {
    stopped = true
  })
  const loop = (async () => {
    while (!stopped) {
      const answer = await send(port, 'GET', path, { timeoutMs }).catch((error: Error) => ({
        statusCode: 0,
        ms: timeoutMs,
        body: error.message,
      }))
      latencies.push(answer.ms)
      if (answer.statusCode !== 200) {
        failed += 1
        firstFailure ??= `${path}: ${answer.statusCode} ${answer.body}`
      }
      if (!stopped) await sleep(everyMs)
    }
  })()
  return {
    async stop() {
      stopped = true
      await loop
      const sorted = [...latencies].sort((a, b) => a - b)
      return {
        count: sorted.length,
        failed,
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        max: sorted.at(-1) ?? Number.NaN,
        firstFailure,
      }
    },
  }
}

/** Raw sockets, destroyed at the test's teardown whatever happened. */
export function sockets(t: Teardown): { open(port: number): Promise<Socket> } {
  const opened = new Set<Socket>()
  t.teardown(() => {
    for (const socket of opened) socket.destroy()
  })
  return {
    open(port) {
      return new Promise((ready, fail) => {
        const socket = connect(port, '127.0.0.1')
        opened.add(socket)
        socket.once('connect', () => ready(socket))
        socket.once('error', fail)
      })
    },
  }
}

/** The value of a Prometheus sample line (`name{labels} value`), 0 when absent. */
export function sample(metricsText: string, series: string): number {
  const line = metricsText.split('\n').find((each) => each.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

const hookServerManifest = () => readFileSync(join(repoRoot, 'manifests/hook-server.yaml'), 'utf8')

/** The manifest's terminationGracePeriodSeconds: the time Kubernetes gives a pod between SIGTERM and SIGKILL. */
export function terminationGracePeriodSeconds(): number {
  return Number(/terminationGracePeriodSeconds: (\d+)/.exec(hookServerManifest())?.[1])
}

/** The shortest probe timeout of the hook server's Deployment (timeoutSeconds), in ms: what the kubelet waits. */
export function probeTimeoutMs(): number {
  return Math.min(
    ...[...hookServerManifest().matchAll(/timeoutSeconds: (\d+)/g)].map((match) => Number(match[1]) * 1000),
  )
}
