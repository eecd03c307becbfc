/**
 * The lifetime of the child processes the suites and the benchmarks start (the built server, Metacontroller, the
 * control plane's components, a load generator): free ports to give them, their output in a log file, waiting
 * until they answer, stopping them, and killing whatever is left should this process end first. Nothing a run
 * starts may outlive it.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { eventually } from './eventually.js'

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))

/** Ports free right now on 127.0.0.1 (the OS picks them; a tiny race remains, as in envtest). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer()
          server.once('error', reject)
          server.listen(0, '127.0.0.1', () => resolve(server))
        }),
    ),
  )
  const ports = servers.map((server) => (server.address() as { port: number }).port)
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
  return ports
}

export async function freePort(): Promise<number> {
  return (await freePorts(1))[0] as number
}

/** Whether the child has neither exited nor been ended by a signal. */
export function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null
}

/** Resolves with the exit code, or the signal's name, once the child has exited. */
export function exitOf(child: ChildProcess): Promise<number | string> {
  if (!running(child)) return Promise.resolve(child.exitCode ?? String(child.signalCode))
  return new Promise((done) => child.once('exit', (code, signal) => done(code ?? String(signal))))
}

/** SIGTERM, then SIGKILL if it still runs after `graceMs`; resolves once it has exited. */
export async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  if (!running(child)) return
  const exited = exitOf(child)
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(timer)
}

const doomed = new Set<ChildProcess>()
let watchingExit = false

/**
 * SIGKILLs the child should this process exit before it (a test's timeout, an uncaught error, process.exit).
 * Returns the function that lets it go (once it is stopped some other way). One 'exit' listener serves them all.
 */
export function killOnExit(child: ChildProcess): () => void {
  doomed.add(child)
  child.once('exit', () => doomed.delete(child))
  if (!watchingExit) {
    watchingExit = true
    process.on('exit', () => {
      for (const each of doomed) if (running(each)) each.kill('SIGKILL')
    })
  }
  return () => doomed.delete(child)
}

export interface LoggedSpawnOptions extends Omit<SpawnOptions, 'stdio'> {
  /** The file its stdout and stderr are appended to, as a container runtime collects a log. */
  logFile: string
}

/**
 * Starts a process whose output goes to a file. A pipe the parent drained late would block the child's
 * synchronous writes (a server's log lines), and its figures would be the parent's, not its own.
 */
export function spawnLogged(
  command: string,
  args: readonly string[],
  { logFile, ...options }: LoggedSpawnOptions,
): ChildProcess {
  const out = openSync(logFile, 'a')
  try {
    return spawn(command, args, { ...options, stdio: ['ignore', out, out] })
  } finally {
    closeSync(out)
  }
}

/** The last `lines` lines of a log file ('' when there is none). */
export function logTail(file: string, lines = 10): string {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n') : ''
}

export interface WaitOptions {
  timeoutMs: number
  everyMs?: number
  /** Fail at once when this child exits before it is ready. */
  child?: ChildProcess
  /** Added to the failure's message (where its log is, the log's end). */
  detail?: () => string
}

/**
 * Polls `probe` until it gives a value, and returns it (undefined or an error: not yet); fails after `timeoutMs`,
 * or at once when `child` exits first.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  options: WaitOptions,
): Promise<T> {
  const child = options.child
  return eventually(what, probe, options.detail, {
    timeoutMs: options.timeoutMs,
    intervalMs: options.everyMs ?? 200,
    stopIf: () =>
      child === undefined || running(child)
        ? undefined
        : `the process exited (${child.exitCode ?? child.signalCode}) before it was ready`,
  })
}

/** Polls `ready` until it is true, as waitFor. */
export async function waitUntil(
  what: string,
  ready: () => Promise<boolean> | boolean,
  options: WaitOptions,
): Promise<void> {
  await waitFor(what, async () => ((await ready()) ? true : undefined), options)
}

/** Runs a command to its end and resolves with its stdout; rejects when it exits other than 0. */
export function output(command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'] })
    let text = ''
    child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()))
    child.on('error', reject)
    child.on('close', (code) =>
      code === 0 ? resolve(text) : reject(new Error(`${command} ${args.join(' ')}: exit ${code}`)),
    )
  })
}

/** Running, and not a zombie waiting to be reaped (a detached process whose parent exited is reaped by init). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : ''
  return !/^\d+ \(.*\) Z/.test(stat)
}

/** Processes known only by their ids (another process started them): SIGTERM, then SIGKILL after `graceMs`. */
export async function stopPids(pids: readonly number[], graceMs = 10_000): Promise<void> {
  for (const pid of [...pids].reverse()) if (isAlive(pid)) process.kill(pid, 'SIGTERM')
  for (let waited = 0; waited < graceMs && pids.some(isAlive); waited += 250) await sleep(250)
  for (const pid of pids) if (isAlive(pid)) process.kill(pid, 'SIGKILL')
}
