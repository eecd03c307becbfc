/**
 * The bench's servers as child processes: spawned on free loopback ports, polled until they answer, stopped, and
 * all killed whatever happens to the bench (its exit, Ctrl-C, or a run past the hard stop). Their lifetime is
 * test/support/processes.ts's, as for every process the suites start.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { request } from 'node:http'
import { join } from 'node:path'
import { freePort, killOnExit, running, sleep, stopChild } from '../../test/support/processes.js'

/**
 * Ends the bench on Ctrl-C or SIGTERM, or once it runs past `hardStopMs`; every server it started dies with it
 * (killOnExit).
 */
export function superviseChildren(hardStopMs: number): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130))
  setTimeout(() => {
    console.error(`bench: still running after ${hardStopMs / 1000} s; stopping`)
    process.exit(1)
  }, hardStopMs).unref()
}

export interface Running {
  name: string
  child: ChildProcess
  pid: number
  port: number
  stderr: () => string
}

export interface Answer {
  status: number
  headers: Record<string, string>
  body: Buffer
}

export interface ServerOptions {
  /** The repository (the servers' working directory). */
  root: string
  /** Where the compiled bench lives (the baselines' scripts). */
  here: string
  /** The servers' environment. */
  env: Record<string, string>
  /** Headers of every call (content type, bearer token). */
  headers: Record<string, string>
  /** Extra node options for the real server. */
  realNodeArgs: string[]
}

export function serverProcesses(options: ServerOptions) {
  function spawnNode(name: string, args: string[], extraEnv: Record<string, string>, port: number): Running {
    const child = spawn(process.execPath, args, {
      cwd: options.root,
      env: { PATH: process.env.PATH ?? '', ...options.env, ...extraEnv, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    killOnExit(child)
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)))
    child.stdout?.resume()
    return { name, child, pid: child.pid as number, port, stderr: () => stderr }
  }

  const stop = (server: Running): Promise<void> => stopChild(server.child, 5000)

  function post(port: number, body: Buffer, headers: Record<string, string> = options.headers): Promise<Answer> {
    return new Promise((resolveAnswer, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/sync',
          method: 'POST',
          agent: false,
          headers: { ...headers, 'content-length': String(body.length) },
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('end', () =>
            resolveAnswer({
              status: res.statusCode ?? 0,
              headers: res.headers as Record<string, string>,
              body: Buffer.concat(chunks),
            }),
          )
          res.on('error', reject)
        },
      )
      req.setTimeout(10_000, () => req.destroy(new Error('timeout')))
      req.on('error', reject)
      req.end(body)
    })
  }

  /** Spawns the real server and polls /sync with `probe` until it answers 200; returns the time that took. */
  async function startReal(probe: Buffer, nodeArgs: string[] = []): Promise<{ server: Running; firstOkMs: number }> {
    const port = await freePort()
    const t0 = performance.now()
    const server = spawnNode('real', [...options.realNodeArgs, ...nodeArgs, 'dist/server.js'], {}, port)
    for (;;) {
      if (!running(server.child))
        throw new Error(
          `the real server exited (${server.child.exitCode ?? server.child.signalCode}): ${server.stderr()}`,
        )
      if (performance.now() - t0 > 15_000)
        throw new Error(`the real server did not answer 200 within 15 s: ${server.stderr()}`)
      const answer = await post(port, probe).catch(() => undefined)
      if (answer?.status === 200) return { server, firstOkMs: performance.now() - t0 }
      if (answer !== undefined)
        throw new Error(`the real server answered ${answer.status}: ${answer.body.toString().slice(0, 300)}`)
      await sleep(2)
    }
  }

  async function startBaseline(name: 'io' | 'sync', extraEnv: Record<string, string>): Promise<Running> {
    const port = await freePort()
    const server = spawnNode(
      name,
      [join(options.here, name === 'io' ? 'baseline-io.js' : 'baseline-sync.js')],
      { ...extraEnv, BENCH_ROOT: options.root },
      port,
    )
    await new Promise<void>((ready, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name} baseline not ready: ${server.stderr()}`)), 15_000)
      server.child.stdout?.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('ready')) {
          clearTimeout(timer)
          ready()
        }
      })
      server.child.once('exit', (code) => reject(new Error(`${name} baseline exited with ${code}: ${server.stderr()}`)))
    })
    return server
  }

  return { post, startReal, startBaseline, stop }
}
