// npm run build:cluster | start:cluster | stop:cluster | test:cluster
//
//   build  builds (or finds) etcd, kube-apiserver, kube-controller-manager and kubectl (controlplane/build.sh)
//   up     starts a control plane that stays up until `down`, installs the project in it as an operator does, and
//          starts the hook server, the kubelet stand-in and a controller (the Metacontroller stand-in, or
//          Metacontroller itself when METACONTROLLER_BIN is set) in a detached session; prints the KUBECONFIG to use
//   down   stops the session and the control plane, and removes its directory
//   test   the cluster suite: one control plane for all of test/cluster/ (or TEST_KUBECONFIG's existing cluster),
//          tap over test/cluster/, then everything it started stopped and checked gone
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { controlPlaneBinaries, repoRoot, startControlPlane, type ControlPlane } from './controlplane.js'
import { install } from './install.js'
import { clusterEnv, runSession, SESSION_FILE, type SessionInfo } from './session.js'
import { describeWrites } from './apiserver-metrics.js'
import { kubectlFor } from './kubectl.js'
import { Rest } from './rest.js'
import { isAlive, sleep, stopPids } from '../processes.js'

const STATE = join(repoRoot, '.cluster', 'current.json')
const TEMP_PREFIXES = [
  'challenge-hooks-cp-',
  'challenge-hooks-mc-',
  'challenge-hooks-overlay-',
  'challenge-hooks-suite-',
]

const USAGE = 'usage: cli.ts build | up | down | test [tap args]'

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv
  // `test` hands the rest to tap as it is (files, tap's own flags); the other commands take no flags.
  if (command !== 'test') {
    try {
      parseArgs({ args, options: {}, allowPositionals: command === 'session', strict: true })
    } catch (error) {
      console.error(`cli.ts ${command ?? ''}: ${(error as Error).message}\n${USAGE}`)
      return 2
    }
  }
  switch (command) {
    case 'build':
      console.log(controlPlaneBinaries())
      return 0
    case 'up':
      return up()
    case 'down':
      return down()
    case 'session':
      // Internal: the detached process `up` starts.
      await runSession(args[0] as string, args[1] as string)
      // Whatever handle is left (a keep-alive socket) must not keep the session alive once it has stopped.
      return process.exit(0)
    case 'test':
      return test(args)
    default:
      console.error(`cli.ts: ${command === undefined ? 'no command' : `unknown command ${command}`}\n${USAGE}`)
      return 2
  }
}

interface State {
  dir: string
  pids: number[]
  kubeconfig: string
  binDir: string
  /** the detached session's process */
  session?: number
}

async function up(): Promise<number> {
  if (existsSync(STATE)) {
    console.error(`a control plane is already up (${STATE}); npm run stop:cluster first`)
    return 1
  }
  const binDir = controlPlaneBinaries()
  // The hook server runs as built: build it from the current src/ first.
  if (spawnSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'inherit' }).status !== 0) return 1
  const plane = await startControlPlane({ binDir, owner: 0, detached: true })
  const state: State = { dir: plane.dir, pids: plane.pids, kubeconfig: plane.kubeconfig, binDir }
  const save = () => {
    mkdirSync(join(repoRoot, '.cluster'), { recursive: true })
    writeFileSync(STATE, JSON.stringify(state, null, 2))
  }
  save()
  console.log(`control plane up at ${plane.server}`)
  try {
    // What an operator does first: Metacontroller's CRDs, namespace and service account, then the project and its Secret.
    await install(clusterEnv(plane.kubeconfig, binDir))
    console.log(
      "installed: Metacontroller's CRDs, namespace and service account; kubectl apply --server-side -k manifests/; the Secret of manifests/secrets/",
    )
    const log = openSync(join(plane.dir, 'session.log'), 'a')
    const session = spawn(
      process.execPath,
      ['--import', 'tsx', join(repoRoot, 'test/support/kube/cli.ts'), 'session', plane.dir, binDir],
      {
        cwd: repoRoot,
        detached: true,
        stdio: ['ignore', log, log],
      },
    )
    session.unref()
    state.session = session.pid
    save()
    const info = await sessionUp(plane.dir, session.pid as number)
    const mode =
      info.controller === 'metacontroller'
        ? `Metacontroller (${process.env.METACONTROLLER_BIN})`
        : 'the Metacontroller stand-in (set METACONTROLLER_BIN for the real one)'
    console.log(
      `hook server at ${info.hookUrl} (probes and metrics at ${info.opsUrl}); controller: ${mode}; kubelet: the stand-in`,
    )
    console.log(
      `logs: ${Object.entries(info.logs)
        .map(([name, file]) => `${name} ${file}`)
        .join(', ')}`,
    )
    console.log('')
    console.log(`export KUBECONFIG=${plane.kubeconfig} PATH=${binDir}:$PATH`)
    console.log('kubectl apply -k manifests/examples/ && kubectl -n challenges get chal -w')
    console.log('')
    console.log('stop it all with: npm run stop:cluster')
    return 0
  } catch (error) {
    console.error(`start:cluster failed: ${(error as Error).message}`)
    await down()
    return 1
  }
}

/** Waits for the session's <dir>/session.json; fails when the session exits first (its log says why). */
async function sessionUp(dir: string, pid: number): Promise<SessionInfo> {
  const file = join(dir, SESSION_FILE)
  const deadline = Date.now() + 120_000
  while (!existsSync(file)) {
    const log = join(dir, 'session.log')
    if (!isAlive(pid))
      throw new Error(
        `the session exited during start; its log:\n${existsSync(log) ? readFileSync(log, 'utf8') : '(none)'}`,
      )
    if (Date.now() > deadline) throw new Error(`the session was not up within 120 s (log: ${log})`)
    await sleep(250)
  }
  return JSON.parse(readFileSync(file, 'utf8')) as SessionInfo
}

async function down(): Promise<number> {
  if (!existsSync(STATE)) {
    console.log('no control plane is up')
    return 0
  }
  const state = JSON.parse(readFileSync(STATE, 'utf8')) as State
  // The session first: it stops the controller, the kubelet stand-in and the hook server (which drains for 5 s).
  const sessionFile = join(state.dir, SESSION_FILE)
  const children = existsSync(sessionFile)
    ? (JSON.parse(readFileSync(sessionFile, 'utf8')) as SessionInfo).children
    : []
  const sessionPids = state.session === undefined ? [] : [state.session]
  await stopPids(sessionPids, 30_000)
  // What a session that died on its own may have left, then the control plane.
  await stopPids(children)
  await stopPids(state.pids)
  rmSync(state.dir, { recursive: true, force: true })
  rmSync(STATE, { force: true })
  console.log(`stopped ${sessionPids.length + children.length + state.pids.length} processes, removed ${state.dir}`)
  return 0
}

async function test(tapArgs: string[]): Promise<number> {
  const external = process.env.TEST_KUBECONFIG
  // The suite's temp dirs go under a root of its own (TMPDIR, for this process and every test it starts), so that
  // what another suite or a benchmark on the same machine makes meanwhile is not counted as left behind by this one.
  const tempRoot = mkdtempSync(join(tmpdir(), 'challenge-hooks-run-'))
  process.env.TMPDIR = tempRoot
  let plane: ControlPlane | undefined
  const env: Record<string, string> = { ...(process.env as Record<string, string>) }
  if (external === undefined || external === '') {
    const binDir = controlPlaneBinaries()
    const started = Date.now()
    plane = await startControlPlane({ binDir })
    console.log(`# control plane up in ${((Date.now() - started) / 1000).toFixed(1)} s at ${plane.server}`)
    Object.assign(env, {
      TEST_KUBECONFIG: plane.kubeconfig,
      TEST_KUBECTL: join(binDir, 'kubectl'),
      TEST_CLUSTER_OWNED: '1',
    })
  }
  const existing = plane === undefined ? await whatExists(external as string, env.TEST_KUBECTL ?? 'kubectl') : undefined
  if (existing?.refusal !== undefined) {
    console.error(existing.refusal)
    return 1
  }
  const stop = async () => {
    if (plane !== undefined) await plane.stop()
    else await uninstall(external as string, env.TEST_KUBECTL ?? 'kubectl', existing?.metacontroller ?? true)
  }
  const interrupted = (signal: NodeJS.Signals) => {
    void stop().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143))
  }
  process.once('SIGINT', interrupted)
  process.once('SIGTERM', interrupted)

  const files = readdirSync(join(repoRoot, 'test/cluster'))
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => `test/cluster/${file}`)
  // One file at a time: each runs its own hook server and controller against the one cluster.
  const started = Date.now()
  const code = await run(
    'npx',
    ['tap', '--disable-coverage', '--jobs=1', '--timeout=900', ...(tapArgs.length > 0 ? tapArgs : files.sort())],
    env,
  )
  console.log(`# suite ran in ${((Date.now() - started) / 1000).toFixed(0)} s`)
  // A figure the suite prints is read from the API server, or the suite fails: never a count of nothing.
  const writes = plane === undefined ? undefined : await writesChecked(plane.kubeconfig)
  if (writes !== undefined) console.log(`# ${writes}`)
  await stop()
  // Nothing left behind: no process the suite started, no temp dir it made.
  const alive = (plane?.pids ?? []).filter(isAlive)
  const dirs = tempDirs()
  if (alive.length > 0 || dirs.length > 0) {
    console.log(
      `# not ok - nothing left behind: processes ${alive.join(' ') || 'none'}, temp files ${dirs.join(' ') || 'none'}`,
    )
    return code === 0 ? 1 : code
  }
  rmSync(tempRoot, { recursive: true, force: true })
  console.log(
    `# ok - nothing left behind (${plane === undefined ? 'existing cluster: installation and test namespaces removed' : `${plane.pids.length} processes stopped, ${plane.dir} removed`})`,
  )
  return code === 0 && plane !== undefined && writes === undefined ? 1 : code
}

/**
 * An existing cluster: the suite installs the project and removes it afterwards, so it must not be there yet.
 * Metacontroller's CRDs and namespace are removed afterwards only if the suite made them.
 */
async function whatExists(kubeconfig: string, kubectl: string): Promise<{ refusal?: string; metacontroller: boolean }> {
  const get = (args: string[]) => kubectlFor(kubectl, kubeconfig)(['get', ...args, '--ignore-not-found', '-o', 'name'])
  const found = await get(['crd', 'challenges.challenge-hooks.dev'])
  if (found.code !== 0)
    return { refusal: `cannot reach the cluster of ${kubeconfig}: ${found.stderr.trim()}`, metacontroller: true }
  const metacontroller =
    (await get(['crd', 'compositecontrollers.metacontroller.k8s.io'])).stdout.trim() !== '' ||
    (await get(['namespace', 'metacontroller'])).stdout.trim() !== ''
  if (found.stdout.trim() !== '') {
    const refusal = `challenge-hooks is already installed in the cluster of ${kubeconfig}: the suite installs it itself and removes it afterwards, so it refuses to run there`
    return { refusal, metacontroller }
  }
  return { metacontroller }
}

async function uninstall(kubeconfig: string, binary: string, keepMetacontroller: boolean): Promise<void> {
  const kubectl = kubectlFor(binary, kubeconfig)
  const namespaces = await kubectl(['get', 'namespaces', '-o', 'name'])
  const ours = namespaces.stdout.split('\n').filter((line) => line.startsWith('namespace/chtest-'))
  if (ours.length > 0) await kubectl(['delete', ...ours, '--ignore-not-found', '--wait=true', '--timeout=120s'])
  await kubectl(['delete', '-k', 'manifests/', '--ignore-not-found', '--wait=true', '--timeout=120s'], {
    cwd: repoRoot,
  })
  await kubectl(['delete', 'runtimeclass/challenge-hooks-standin', 'node/standin-node', '--ignore-not-found'])
  if (!keepMetacontroller) {
    await kubectl([
      'delete',
      'namespace/metacontroller',
      'crd/compositecontrollers.metacontroller.k8s.io',
      'crd/decoratorcontrollers.metacontroller.k8s.io',
      'crd/controllerrevisions.metacontroller.k8s.io',
      '--ignore-not-found',
      '--wait=true',
      '--timeout=120s',
    ])
  }
}

/** What the API server's own metrics say it checked (apiserver-metrics.ts); undefined, and said why, when unreadable. */
async function writesChecked(kubeconfig: string): Promise<string | undefined> {
  try {
    return describeWrites(await Rest.fromFile(kubeconfig).text('/metrics', { timeoutMs: 10_000 }))
  } catch (error) {
    console.log(`# not ok - the API server's writes could not be counted: ${(error as Error).message}`)
    return undefined
  }
}

function run(command: string, args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: 'inherit' })
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)))
  })
}

function tempDirs(): string[] {
  return readdirSync(tmpdir())
    .filter((name) => TEMP_PREFIXES.some((prefix) => name.startsWith(prefix)))
    .map((name) => join(tmpdir(), name))
}

process.exitCode = await main(process.argv.slice(2))
