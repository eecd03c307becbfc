// The lifetime of the long-running processes a test world starts (a control plane, a node's daemons): each logs to
// <dir>/<name>.log, its pid is appended to <dir>/pids (which a reaper reads), and stopAll() ends them in reverse
// order of start, each with SIGTERM and, after a grace period, SIGKILL.
import { spawn, type ChildProcess } from 'node:child_process'
import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { logTail, spawnLogged, stopChild, waitUntil } from '../processes.js'

export { freePorts } from '../processes.js'

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
    const child = spawnLogged(command, args, {
      logFile: join(this.dir, `${name}.log`),
      detached: this.detached,
      env: options.env ?? process.env,
    })
    if (this.detached) child.unref()
    const entry = { name, child, graceMs: options.graceMs ?? 10_000, stopping: false }
    // A daemon that ends by itself (or is killed from outside) explains the failures that follow: say so at once.
    child.once('exit', (code, signal) => {
      if (!entry.stopping && !this.detached)
        console.error(
          `# ${name} (pid ${child.pid}) exited unexpectedly at ${new Date().toISOString()}: ${signal ?? `code ${code}`}`,
        )
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
      await stopChild(entry.child, entry.graceMs)
      if (process.env.DEBUG_STOP) console.log(`# stopped ${entry.name} in ${Date.now() - started} ms`)
    }
  }

  /** The last lines of each process's log, for an error message. */
  tail(lines = 15): string {
    return this.#children
      .map(({ name }) => join(this.dir, `${name}.log`))
      .map((file) => [file, logTail(file, lines)] as const)
      .filter(([, text]) => text !== '')
      .map(([file, text]) => `--- ${file} (last lines) ---\n${text}`)
      .join('\n')
  }
}

/** Polls `ready` every 100 ms until it says yes; fails at once when the process exits, or after `timeoutMs`. */
export function waitForChild(
  name: string,
  child: ChildProcess,
  dir: string,
  ready: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  return waitUntil(name, ready, { timeoutMs, everyMs: 100, child, detail: () => `logs in ${dir}` })
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
