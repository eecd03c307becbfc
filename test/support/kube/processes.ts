// The lifetime of the long-running processes a test world starts (a control plane, a node's daemons): each logs to
// <dir>/<name>.log, its pid is appended to <dir>/pids (which a reaper reads), and stopAll() ends them in reverse
// order of start, each with SIGTERM and, after a grace period, SIGKILL.
import { spawn, type ChildProcess } from 'node:child_process'
import { appendFileSync, existsSync, openSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'

export interface LaunchOptions {
  env?: NodeJS.ProcessEnv
  /** SIGTERM to SIGKILL when stopping (default 10 s) */
  graceMs?: number
}

export class Processes {
  readonly pids: number[] = []
  readonly #children: { name: string; child: ChildProcess; graceMs: number; stopping: boolean }[] = []

  /** `detached`: the processes may outlive this one (a CLI that starts a world and exits). */
  constructor(
    readonly dir: string,
    readonly detached = false,
  ) {}

  launch(name: string, command: string, args: string[], options: LaunchOptions = {}): ChildProcess {
    const log = openSync(join(this.dir, `${name}.log`), 'a')
    const child = spawn(command, args, { stdio: ['ignore', log, log], detached: this.detached, env: options.env ?? process.env })
    if (this.detached) child.unref()
    const entry = { name, child, graceMs: options.graceMs ?? 10_000, stopping: false }
    // A daemon that ends by itself (or is killed from outside) explains the failures that follow: say so at once.
    child.once('exit', (code, signal) => {
      if (!entry.stopping && !this.detached) console.error(`# ${name} (pid ${child.pid}) exited unexpectedly at ${new Date().toISOString()}: ${signal ?? `code ${code}`}`)
    })
    this.#children.push(entry)
    this.pids.push(child.pid as number)
    appendFileSync(join(this.dir, 'pids'), `${child.pid}\n`)
    return child
  }

  /** Stops one by name (e.g. the kubelet before the runtime), or every process, last started first. */
  async stop(name?: string): Promise<void> {
    for (const entry of [...this.#children].reverse()) {
      if (name !== undefined && entry.name !== name) continue
      const started = Date.now()
      entry.stopping = true
      await terminate(entry.child, entry.graceMs)
      if (process.env.DEBUG_STOP) console.log(`# stopped ${entry.name} in ${Date.now() - started} ms`)
    }
  }

  /** The last lines of each process's log, for an error message. */
  tail(lines = 15): string {
    return this.#children
      .map(({ name }) => join(this.dir, `${name}.log`))
      .filter((file) => existsSync(file))
      .map((file) => `--- ${file} (last lines) ---\n${readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n')}`)
      .join('\n')
  }
}

export async function terminate(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(timer)
}

/** Polls `ready` every 100 ms until it says yes; fails at once when the process exits, or after `timeoutMs`. */
export async function waitFor(name: string, child: ChildProcess, dir: string, ready: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode} during start (logs in ${dir})`)
    if (await ready().catch(() => false)) return
    if (Date.now() > deadline) throw new Error(`${name} not ready after ${timeoutMs / 1000} s (logs in ${dir})`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/**
 * A detached shell that waits for the owner to die or the dir to disappear (a clean stop), then kills every
 * process listed in <dir>/pids and removes the dir. It is its own process group, so a signal to the test
 * runner's group does not take it along.
 */
export function startReaper(owner: number, dir: string): void {
  const script = `
    while kill -0 ${owner} 2>/dev/null && [ -d "$1" ]; do sleep 0.5; done
    [ -d "$1" ] || exit 0
    pids=$(cat "$1/pids" 2>/dev/null)
    [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
    for i in $(seq 20); do alive=0; for p in $pids; do kill -0 $p 2>/dev/null && alive=1; done; [ $alive = 0 ] && break; sleep 0.25; done
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    rm -rf "$1"`
  spawn('bash', ['-c', script, 'reaper', dir], { detached: true, stdio: 'ignore' }).unref()
}

/** Ports free right now on 127.0.0.1 (the OS picks them; a tiny race remains, as in envtest). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () => new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
      const server = createServer()
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve(server))
    })),
  )
  const ports = servers.map((server) => (server.address() as { port: number }).port)
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
  return ports
}
