// npm run cluster:build | cluster:up | cluster:down | test:cluster
//
//   build  builds (or finds) etcd, kube-apiserver, kube-controller-manager and kubectl (controlplane/build.sh)
//   up     starts a control plane that stays up until `down`; prints the KUBECONFIG to use
//   down   stops it and removes its directory
//   test   the cluster suite: one control plane for all of test/cluster/ (or TEST_KUBECONFIG's existing cluster),
//          tap over test/cluster/, then everything it started stopped and checked gone
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { controlPlaneBinaries, repoRoot, startControlPlane, type ControlPlane } from './controlplane.js'
import { kubectlFor } from './kubectl.js'
import { Rest } from './rest.js'

const STATE = join(repoRoot, '.cluster', 'current.json')
const TEMP_PREFIXES = ['challenge-hooks-cp-', 'challenge-hooks-mc-', 'challenge-hooks-overlay-', 'challenge-hooks-suite-']

async function main(command: string | undefined, args: string[]): Promise<number> {
  switch (command) {
    case 'build':
      console.log(controlPlaneBinaries())
      return 0
    case 'up':
      return up()
    case 'down':
      return down()
    case 'test':
      return test(args)
    default:
      console.error('usage: cli.ts build | up | down | test [tap args]')
      return 64
  }
}

async function up(): Promise<number> {
  if (existsSync(STATE)) {
    console.error(`a control plane is already up (${STATE}); npm run cluster:down first`)
    return 1
  }
  const binDir = controlPlaneBinaries()
  const plane = await startControlPlane({ binDir, owner: 0, detached: true })
  mkdirSync(join(repoRoot, '.cluster'), { recursive: true })
  writeFileSync(STATE, JSON.stringify({ dir: plane.dir, pids: plane.pids, kubeconfig: plane.kubeconfig, binDir }, null, 2))
  console.log(`control plane up at ${plane.server} (logs in ${plane.dir})`)
  console.log(`export KUBECONFIG=${plane.kubeconfig} PATH=${binDir}:$PATH`)
  console.log('stop it with: npm run cluster:down')
  return 0
}

async function down(): Promise<number> {
  if (!existsSync(STATE)) {
    console.log('no control plane is up')
    return 0
  }
  const state = JSON.parse(readFileSync(STATE, 'utf8')) as { dir: string; pids: number[] }
  await killAll(state.pids)
  rmSync(state.dir, { recursive: true, force: true })
  rmSync(STATE, { force: true })
  console.log(`stopped ${state.pids.length} processes, removed ${state.dir}`)
  return 0
}

async function test(tapArgs: string[]): Promise<number> {
  const external = process.env.TEST_KUBECONFIG
  const tempBefore = new Set(tempDirs())
  let plane: ControlPlane | undefined
  const env: Record<string, string> = { ...(process.env as Record<string, string>) }
  if (external === undefined || external === '') {
    const binDir = controlPlaneBinaries()
    const started = Date.now()
    plane = await startControlPlane({ binDir })
    console.log(`# control plane up in ${((Date.now() - started) / 1000).toFixed(1)} s at ${plane.server}`)
    Object.assign(env, { TEST_KUBECONFIG: plane.kubeconfig, TEST_KUBECTL: join(binDir, 'kubectl'), TEST_CLUSTER_OWNED: '1' })
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

  const files = readdirSync(join(repoRoot, 'test/cluster')).filter((file) => file.endsWith('.test.ts')).map((file) => `test/cluster/${file}`)
  // One file at a time: each runs its own hook server and controller against the one cluster.
  const started = Date.now()
  const code = await run('npx', ['tap', '--disable-coverage', '--jobs=1', '--timeout=900', ...(tapArgs.length > 0 ? tapArgs : files.sort())], env)
  console.log(`# suite ran in ${((Date.now() - started) / 1000).toFixed(0)} s`)
  if (plane !== undefined) console.log(`# ${await writesChecked(plane.kubeconfig)}`)
  await stop()
  // Nothing left behind: no process the suite started, no temp dir it made.
  const alive = (plane?.pids ?? []).filter(isAlive)
  const dirs = tempDirs().filter((dir) => !tempBefore.has(dir))
  if (alive.length > 0 || dirs.length > 0) {
    console.log(`# not ok - nothing left behind: processes ${alive.join(' ') || 'none'}, temp files ${dirs.join(' ') || 'none'}`)
    return code === 0 ? 1 : code
  }
  console.log(`# ok - nothing left behind (${plane === undefined ? 'existing cluster: installation and test namespaces removed' : `${plane.pids.length} processes stopped, ${plane.dir} removed`})`)
  return code
}

/**
 * An existing cluster: the suite installs the project and removes it afterwards, so it must not be there yet.
 * Metacontroller's CRDs and namespace are removed afterwards only if the suite made them.
 */
async function whatExists(kubeconfig: string, kubectl: string): Promise<{ refusal?: string; metacontroller: boolean }> {
  const get = (args: string[]) => kubectlFor(kubectl, kubeconfig)(['get', ...args, '--ignore-not-found', '-o', 'name'])
  const found = await get(['crd', 'challenges.challenge-hooks.dev'])
  if (found.code !== 0) return { refusal: `cannot reach the cluster of ${kubeconfig}: ${found.stderr.trim()}`, metacontroller: true }
  const metacontroller = (await get(['crd', 'compositecontrollers.metacontroller.k8s.io'])).stdout.trim() !== '' || (await get(['namespace', 'metacontroller'])).stdout.trim() !== ''
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
  await kubectl(['delete', '-k', 'manifests/', '--ignore-not-found', '--wait=true', '--timeout=120s'], { cwd: repoRoot })
  await kubectl(['delete', 'runtimeclass/challenge-hooks-standin', 'node/standin-node', '--ignore-not-found'])
  if (!keepMetacontroller) {
    await kubectl(['delete', 'namespace/metacontroller', 'crd/compositecontrollers.metacontroller.k8s.io', 'crd/decoratorcontrollers.metacontroller.k8s.io', 'crd/controllerrevisions.metacontroller.k8s.io', '--ignore-not-found', '--wait=true', '--timeout=120s'])
  }
}

/** What the API server's own metrics say it checked: every write, admitted (2xx) or refused (4xx), by verb. */
async function writesChecked(kubeconfig: string): Promise<string> {
  const text = (await Rest.fromFile(kubeconfig).call('GET', '/metrics', { timeoutMs: 10_000 }).catch(() => '')) as string
  const counts = new Map<string, { admitted: number; refused: number }>()
  for (const match of String(text ?? '').matchAll(/^apiserver_request_total\{([^}]*)\} (\d+)/gm)) {
    const labels = Object.fromEntries([...(match[1] as string).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]))
    const verb = labels.verb as string
    // The metric names verbs by HTTP method: a create is POST, an update PUT (there is no CREATE or UPDATE).
    if (!['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION'].includes(verb)) continue
    const entry = counts.get(verb) ?? { admitted: 0, refused: 0 }
    const code = Number(labels.code)
    if (code >= 200 && code < 300) entry.admitted += Number(match[2])
    else if (code >= 400 && code < 500) entry.refused += Number(match[2])
    counts.set(verb, entry)
  }
  const total = (field: 'admitted' | 'refused') => [...counts.values()].reduce((sum, entry) => sum + entry[field], 0)
  const byVerb = [...counts].map(([verb, entry]) => `${verb.toLowerCase()} ${entry.admitted}`).join(', ')
  return `API server checked ${total('admitted') + total('refused')} writes: ${total('admitted')} admitted (${byVerb}), ${total('refused')} refused (4xx)`
}

function run(command: string, args: string[], env: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: 'inherit' })
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)))
  })
}

function tempDirs(): string[] {
  return readdirSync(tmpdir()).filter((name) => TEMP_PREFIXES.some((prefix) => name.startsWith(prefix))).map((name) => join(tmpdir(), name))
}

/** Running, and not a zombie waiting to be reaped (a detached process whose parent exited is reaped by init). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : ''
  return !/^\d+ \(.*\) Z/.test(stat)
}

async function killAll(pids: number[]): Promise<void> {
  for (const pid of [...pids].reverse()) if (isAlive(pid)) process.kill(pid, 'SIGTERM')
  for (let i = 0; i < 40 && pids.some(isAlive); i++) await new Promise((r) => setTimeout(r, 250))
  for (const pid of pids) if (isAlive(pid)) process.kill(pid, 'SIGKILL')
}

process.exitCode = await main(process.argv[2], process.argv.slice(3))
