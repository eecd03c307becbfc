/**
 * The load suite's harness: the real server as the pod runs it (`node dist/server.js`, production mode, a bearer
 * token, the default settings unless a test says otherwise) on 127.0.0.1, clients over loopback, and measurements
 * of what a kubelet would see. Everything started here is stopped in the test's teardown, even on failure:
 * sockets destroyed, child processes killed.
 *
 * `npm run test:load` builds dist/ first and runs these files one at a time (tap --jobs 1), so no other test file
 * competes for the two cores while the figures are taken.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { request, type IncomingHttpHeaders } from 'node:http'
import { connect, type Socket } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
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
  /** The log lines written so far (JSON per line), for assertions and failure messages. */
  log(): string[]
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  exited: Promise<number | string>
  /** Peak resident memory of the process so far (VmHWM), MiB. */
  peakRssMiB(): number
}

/** The environment of a production pod, with the listen addresses of a test. */
export function serverEnv(extra: Record<string, string> = {}): Record<string, string> {
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

/** Starts `node dist/server.js` and waits for its "serving" line; killed at the test's teardown. */
export async function startServer(t: Teardown, extra: Record<string, string> = {}): Promise<Server> {
  const entry = join(repoRoot, 'dist/server.js')
  if (!existsSync(entry)) throw new Error('dist/server.js is missing: run the load suite with `npm run test:load` (it builds first)')
  const child = spawn(process.execPath, [entry], { cwd: repoRoot, env: serverEnv(extra), stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  const lines: string[] = []
  let partial = ''
  const exited = new Promise<number | string>((done) => child.once('exit', (code, signal) => done(code ?? String(signal))))
  const serving = new Promise<{ port: number; opsPort: number }>((ready, fail) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      const text = partial + chunk.toString('utf8')
      const complete = text.split('\n')
      partial = complete.pop() as string
      for (const line of complete) {
        // Keep the log bounded: the first lines (start-up) and the last ones.
        if (lines.length > 4000) lines.splice(100, 1000)
        lines.push(line)
        if (line.includes('"opsPort"')) ready(JSON.parse(line) as { port: number; opsPort: number })
      }
    })
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)))
    void exited.then((code) => fail(new Error(`the server exited (${code}) before serving: ${stderr}${lines.join('\n')}`)))
  })
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  const { port, opsPort } = await serving.finally(() => clearTimeout(timer))
  return {
    child,
    pid: child.pid as number,
    port,
    opsPort,
    log: () => [...lines],
    exited,
    peakRssMiB() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
      return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]) / 1024
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
    if (options.body) Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(options.body.length) })
    const req = request({ host: '127.0.0.1', port, method, path, agent: false, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () =>
        done({ statusCode: res.statusCode as number, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started }),
      )
      res.on('error', fail)
    })
    req.setTimeout(options.timeoutMs ?? 10_000, () => req.destroy(new Error(`${method} ${path}: no answer within ${options.timeoutMs ?? 10_000} ms`)))
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
 * Probes `path` as the kubelet does (a new connection each time, every `everyMs`) until `stop()`: each latency,
 * and every probe that did not get a 200 (or nothing within `timeoutMs`) as a failure.
 */
export function probe(t: Teardown, port: number, path: string, everyMs = 100, timeoutMs = 5000): { stop(): Promise<ProbeStats> } {
  const latencies: number[] = []
  let failed = 0
  let firstFailure: string | undefined
  const pending = new Set<Promise<void>>()
  const once = () => {
    const attempt = send(port, 'GET', path, { timeoutMs })
      .then((answer) => {
        latencies.push(answer.ms)
        if (answer.statusCode !== 200) {
          failed += 1
          firstFailure ??= `${path}: ${answer.statusCode} ${answer.body}`
        }
      })
      .catch((error: Error) => {
        latencies.push(timeoutMs)
        failed += 1
        firstFailure ??= `${path}: ${error.message}`
      })
      .finally(() => pending.delete(attempt))
    pending.add(attempt)
  }
  once()
  const timer = setInterval(once, everyMs)
  t.teardown(() => clearInterval(timer))
  return {
    async stop() {
      clearInterval(timer)
      await Promise.all(pending)
      const sorted = [...latencies].sort((a, b) => a - b)
      return { count: sorted.length, failed, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? Number.NaN, firstFailure }
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

/** The manifest's terminationGracePeriodSeconds: the time Kubernetes gives a pod between SIGTERM and SIGKILL. */
export function terminationGracePeriodSeconds(): number {
  const manifest = readFileSync(join(repoRoot, 'manifests/hook-server.yaml'), 'utf8')
  return Number(/terminationGracePeriodSeconds: (\d+)/.exec(manifest)?.[1])
}

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))
