// The processes of a rush run besides the control plane: the hook server and Metacontroller, each tracked so that
// the control plane's reaper kills it should the benchmark die first; scraping, profiling, waiting. Their lifetime
// is test/support/processes.ts's, as for every process the suites start.
import { spawnSync, type ChildProcess } from 'node:child_process'
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { repoRoot, type ControlPlane } from '../../test/support/kube/controlplane.js'
import { metacontrollerRest, writeMetacontrollerKubeconfig } from '../../test/support/kube/controllers.js'
import type { ClusterEnv } from '../../test/support/kube/install.js'
import { exitOf, freePort, logTail, output, spawnLogged, stopChild, waitUntil } from '../../test/support/processes.js'
import { parseMetrics, type Sample } from './measure.js'
import type { RushSettings } from './settings.js'

/** What the processes share with the run: its control plane, its cleanups (run in reverse at the end), its log. */
export interface RunContext {
  plane: ControlPlane
  cleanups: Array<() => Promise<void> | void>
  log: (text: string) => void
  /** bench/out/rush */
  out: string
}

export interface HookServer {
  url: string
  metricsUrl: string
  pid: number
  sizesFile: string
  port: number
  /** SIGTERM, as the kubelet stops a pod: the server drains (SHUTDOWN_DRAIN_MS), then exits */
  stop(): Promise<void>
}

export interface HookServerOptions {
  token: string
  budget: number
  budgetScope?: string
  /** every replica of a run shares it, as the Deployment's Secret gives it to each pod */
  flagSecret: string
  /** names its log file (hook-server-<name>.log); the first is hook-server.log */
  name?: string
  /** settings of the hook server's own beyond the budget's (POOL_MAX_PODS for large pools) */
  env?: Record<string, string>
}

/** `node dist/server.js` as in production (NODE_ENV=production, LOG_LEVEL=warn, the installed HOOK_TOKEN). */
export async function startHookServer(
  { plane, cleanups }: RunContext,
  { token, budget, budgetScope = 'Namespace', flagSecret, name, env = {} }: HookServerOptions,
): Promise<HookServer> {
  const [port, opsPort] = [await freePort(), await freePort()]
  // Every replica appends to the one file (whole lines, once a second each).
  const sizesFile = join(plane.dir, 'request-sizes.txt')
  const logFile = join(plane.dir, name === undefined ? 'hook-server.log' : `hook-server-${name}.log`)
  const child = spawnLogged(
    process.execPath,
    ['--import', join(repoRoot, 'bench/rush/request-sizes.mjs'), join(repoRoot, 'dist/server.js')],
    {
      env: {
        ...process.env,
        ...env,
        NODE_ENV: 'production',
        LOG_LEVEL: 'warn',
        HOOK_TOKEN: token,
        FLAG_SECRET: flagSecret,
        OWNER_BUDGET: String(budget),
        OWNER_BUDGET_SCOPE: budgetScope,
        PORT: String(port),
        OPS_PORT: String(opsPort),
        RUSH_SIZES_FILE: sizesFile,
      },
      logFile,
    },
  )
  const expectExit = track(plane, cleanups, child, `hook server${name === undefined ? '' : ` ${name}`}`, logFile)
  const server = {
    url: `http://127.0.0.1:${port}`,
    metricsUrl: `http://127.0.0.1:${opsPort}/metrics`,
    pid: child.pid as number,
    sizesFile,
    port,
    async stop() {
      expectExit()
      await stopChild(child, 30_000)
    },
  }
  await waitUntil(
    'the hook server',
    async () => (await fetch(`http://127.0.0.1:${opsPort}/readyz`).catch(() => undefined))?.ok === true,
    { timeoutMs: 30_000 },
  )
  return server
}

export interface Metacontroller {
  /** the running process's (it changes when killed and started again) */
  readonly pid: number
  metricsUrl: string
  /** SIGKILL, then wait for the process to be gone */
  kill(): Promise<void>
  /** started again with the same flags and ports (its log: metacontroller-<n>.log) */
  restart(): Promise<void>
  version: string
  /** a CPU profile over the next `seconds`, summarised with `go tool pprof` */
  profile(seconds: number): Promise<ProfileSummary | undefined>
}

export interface ProfileSummary {
  seconds: number
  /** cumulative share of the samples under each function of interest */
  shares: Record<string, number>
  top: string
}

/** Functions whose cumulative share of Metacontroller's CPU the results report. */
const PROFILED = [
  'findRelatedParents',
  'matchesRelatedRule',
  'LabelSelectorAsSelector',
  'processNextWorkItem',
  'syncParentObject',
  'callSyncHook',
  'Webhook).Call',
  'ProcessDeltas',
  'json.Unmarshal',
  'runtime.gcBgMarkWorker',
]

/** Metacontroller out of cluster as its service account (as the cluster suite runs it), metrics and pprof on loopback. */
export async function startMetacontroller(
  { plane, cleanups, log, out }: RunContext,
  env: ClusterEnv,
  s: RushSettings,
): Promise<Metacontroller> {
  const identity = await metacontrollerRest(env)
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-mc-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  const kubeconfig = writeMetacontrollerKubeconfig(env, identity.token, dir)
  const [metricsPort, pprofPort] = [await freePort(), await freePort()]
  const args = [
    `--kubeconfig=${kubeconfig}`,
    `--metrics-address=127.0.0.1:${metricsPort}`,
    `--pprof-address=127.0.0.1:${pprofPort}`,
    '--health-probe-bind-address=0',
    ...s.metacontrollerArgs,
  ]
  let starts = 0
  const spawnOne = () => {
    starts++
    const logFile = join(plane.dir, starts === 1 ? 'metacontroller.log' : `metacontroller-${starts}.log`)
    const child = spawnLogged(s.metacontroller, args, { logFile })
    return { child, expectExit: track(plane, cleanups, child, 'metacontroller', logFile) }
  }
  let current = spawnOne()
  // A binary built from a source archive carries no version in its build info: METACONTROLLER_VERSION names it.
  const version = process.env.METACONTROLLER_VERSION ?? (await versionOf(s.metacontroller))
  return {
    get pid() {
      return current.child.pid as number
    },
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    version,
    async kill() {
      current.expectExit()
      const exited = exitOf(current.child)
      current.child.kill('SIGKILL')
      await exited
    },
    async restart() {
      current = spawnOne()
    },
    async profile(seconds) {
      const file = join(dir, 'cpu.pprof')
      try {
        mkdirSync(out, { recursive: true })
        const response = await fetch(
          `http://127.0.0.1:${pprofPort}/debug/pprof/profile?seconds=${Math.round(seconds)}`,
          { signal: AbortSignal.timeout((seconds + 30) * 1000) },
        )
        writeFileSync(file, Buffer.from(await response.arrayBuffer()))
        writeFileSync(join(out, `${s.label}-${s.challenges}.cpu.pprof`), readFileSync(file))
        // Every function, none dropped for being small: the parent scan's share is read off this list.
        const top = await output('go', [
          'tool',
          'pprof',
          '-top',
          '-cum',
          '-nodecount=100000',
          '-nodefraction=0',
          '-edgefraction=0',
          s.metacontroller,
          file,
        ])
        const shares: Record<string, number> = {}
        for (const name of PROFILED) {
          // -top lines: flat flat% sum% cum cum% function
          const fields = top
            .split('\n')
            .find((l) => l.includes(name))
            ?.trim()
            .split(/\s+/)
          if (fields !== undefined && fields.length >= 6) shares[name] = Number((fields[4] as string).replace('%', ''))
        }
        return { seconds, shares, top: top.split('\n').slice(0, 45).join('\n') }
      } catch (error) {
        log(`profile: ${(error as Error).message}`)
        return undefined
      }
    },
  }
}

/**
 * A child the control plane's reaper also kills, should this process die before stopping it. Returns what marks
 * its exit as expected (a fault, a rolling restart): only an unexpected one is reported.
 */
function track(
  plane: ControlPlane,
  cleanups: RunContext['cleanups'],
  child: ChildProcess,
  name: string,
  logFile: string,
): () => void {
  appendFileSync(join(plane.dir, 'pids'), `${child.pid}\n`)
  let stopping = false
  child.once('exit', (code, signal) => {
    if (!stopping) console.error(`rush: ${name} exited early (${code ?? signal}); its log ends:\n${logTail(logFile)}`)
  })
  cleanups.push(async () => {
    stopping = true
    await stopChild(child, 15_000)
  })
  return () => {
    stopping = true
  }
}

export async function scrape(url: string): Promise<Sample[]> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(30_000) })
    return response.ok ? parseMetrics(await response.text()) : []
  } catch {
    return []
  }
}

async function versionOf(binary: string): Promise<string> {
  // Metacontroller prints no version flag; go version -m reads the module's build info.
  const info = await output('go', ['version', '-m', binary]).catch(() => '')
  const vcs = /vcs\.revision=(\S+)/.exec(info)?.[1]
  const main = /\tmod\s+\S+\s+(\S+)/.exec(info)?.[1]
  return [main, vcs?.slice(0, 12)].filter(Boolean).join(' ') || 'unknown'
}

export function gitCommit(): string {
  return spawnSync('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim()
}
