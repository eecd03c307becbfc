/**
 * The opening rush of a CTF on a real control plane with the real Metacontroller:
 *
 *   METACONTROLLER_BIN=/path/to/metacontroller npm run bench:rush -- --challenges=200 --label=defaults
 *
 * 1. Starts the cluster suite's control plane (etcd, kube-apiserver, kube-controller-manager; docs/development.md,
 *    "The cluster suite"), installs the project as an operator does, and a namespace made like
 *    manifests/challenges-namespace.yaml (its quota scaled to the run).
 * 2. Runs the hook server as in production (`node dist/server.js`, a process of its own, so its CPU is its own;
 *    bench/rush/request-sizes.mjs preloaded to record each call's size), the kubelet stand-in of test/support
 *    bringing pods up with realistic delays, and Metacontroller (its metrics and pprof on loopback).
 * 3. Creates the Challenges over the window (one per owner and definition pair, in a seeded random order), watches
 *    every Challenge until each admitted one is Running, waits until the hooks are called at the instances' own resync
 *    rate (Metacontroller has caught up), then watches the system at rest for a resync period.
 * 4. Writes bench/out/rush/<label>-<challenges>.json and rewrites the rush section of bench/RESULTS.md from every
 *    result there (bench/rush/report.ts).
 *
 * Settings: bench/rush/settings.ts. Everything it starts is stopped at the end, and by the control plane's reaper
 * should this process die first.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, freemem, loadavg, totalmem } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../src/config/config.js'
import { controlPlaneBinaries, repoRoot, startControlPlane } from '../../test/support/kube/controlplane.js'
import { Informer } from '../../test/support/kube/informer.js'
import { Kubelet } from '../../test/support/kube/kubelet.js'
import { kubectlOk } from '../../test/support/kube/kubectl.js'
import { clusterEnv } from '../../test/support/kube/session.js'
import { resourceByName, type KubeObject } from '../../test/support/simulator/index.js'
import { example } from '../../test/helpers/examples.js'
import { applyControllerWithUrl } from '../../test/support/kube/controllers.js'
import { install, registerAuthors } from '../../test/support/kube/install.js'
import { API, CHALLENGES, COMPOSITE_CONTROLLER, PLATFORM, AUTHOR } from '../../test/support/kube/names.js'
import { cpuSeconds, parseMetrics, rssMiB, seeded, type Sample } from './measure.js'
import { sleep, waitUntil } from '../../test/support/processes.js'
import {
  gitCommit,
  scrape,
  startHookServer,
  startMetacontroller,
  type HookServer,
  type HookServerOptions,
  type RunContext,
} from './processes.js'
import { HookPool } from './front.js'
import { checkEndState, injectFaults, logErrors, rushFlag, type FaultRecord } from './fault-run.js'
import { writeFaultsReport } from './faults-report.js'
import { faultSchedule } from './faults.js'
import { Steps } from './phases.js'
import { readSettings, UsageError, type RushSettings } from './settings.js'
import {
  admittedByDefinition,
  notReady,
  poolSizing,
  poolSpec,
  poolState,
  freeReady,
  warm,
  type Planned,
  type PoolSizing,
} from './pools.js'
import { summarise, type Snapshot } from './summary.js'
import { writeReport } from './report.js'
import { settledSince, settleLimit, type CallSample } from './settle.js'

const NS = 'ctf-rush'
const FAULTS_OUT = join(repoRoot, 'bench/out/rush-faults')
/** How long a killed Metacontroller stays down, and the kubelet (kubeadm's unit: Restart=always, RestartSec=10). */
const METACONTROLLER_DOWN_MS = 1000
const KUBELET_DOWN_MS = 10_000
/** The hook server's MAX_RESYNC_SECONDS (it inherits this environment): at rest each instance is synced once per it. */
const RESYNC_SECONDS = loadConfig({ MAX_RESYNC_SECONDS: process.env.MAX_RESYNC_SECONDS }).maxResyncSeconds
/** One resync per instance in every window, however bunched (bench/rush/settle.ts). */
const SETTLE_RULE = { rate: 1.2, windowSeconds: RESYNC_SECONDS, from: 'start' as const }
const SAMPLE_MS = 5000
const DEFINITION_LIFETIME_SECONDS = 3 * 3600
/** Creations in flight at once: the platform's backend, a handful of API calls at a time. */
const CREATE_CONCURRENCY = 16

const settings = settingsOrExit()
// Runs with several hook replicas (the fault runs and their pairs) have a results folder and section of their own.
const OUT = settings.faults || settings.hookReplicas > 1 ? FAULTS_OUT : join(repoRoot, 'bench/out/rush')
const log = (text: string) => console.log(`rush [${((Date.now() - started) / 1000).toFixed(1)} s] ${text}`)
const started = Date.now()
const cleanups: Array<() => Promise<void> | void> = []
const cleanUp = async () => {
  for (const cleanup of cleanups.splice(0).reverse())
    await Promise.resolve(cleanup()).catch((error: Error) => console.error(`rush: cleanup: ${error.message}`))
}
process.once('SIGINT', () => void cleanUp().finally(() => process.exit(130)))
process.once('SIGTERM', () => void cleanUp().finally(() => process.exit(143)))

async function main(s: RushSettings): Promise<void> {
  if (!existsSync(join(repoRoot, 'dist/server.js')))
    throw new Error('bench:rush: dist/server.js is missing (npm run build)')
  const loadAtStart = loadavg()[0] as number
  // The commit the run's code was loaded from (one committed while it runs is not what it measured).
  const commit = gitCommit()
  log(
    `${s.challenges} Challenges over ${s.owners} owners and ${s.definitions} definitions in ${s.windowSeconds} s, budget ${s.budget} (${s.budgetScope}); Metacontroller ${s.metacontrollerArgs.join(' ') || '(defaults)'}`,
  )
  // The plan is the seed's: the Challenges each definition will admit size its pool (bench/rush/pools.ts).
  const plan = planRush(s)
  // OWNER_BUDGET_SCOPE None: no budget, every Challenge is admitted.
  const budget = s.budgetScope === 'None' ? Infinity : s.budget
  const admittedPerDefinition = admittedByDefinition(plan, budget, s.definitions)
  const sizing: PoolSizing | undefined = s.pool > 0 ? poolSizing(s.pool, admittedPerDefinition) : undefined
  if (sizing !== undefined)
    log(
      `warm pools of ${sizing.size} (maxPods ${sizing.maxPods ?? 'the default'}); admitted per definition ${Math.min(...admittedPerDefinition)}–${Math.max(...admittedPerDefinition)}`,
    )
  const definitionNames = Array.from({ length: s.definitions }, (_, d) => definitionName(d))
  const binDir = controlPlaneBinaries({ build: false })
  // The suite's /24 of Service addresses holds 254 Services; a Service per instance needs more (the later flag wins).
  const plane = await startControlPlane({
    binDir,
    apiserverArgs: ['--service-cluster-ip-range=10.0.0.0/16', ...s.apiserverArgs],
  })
  cleanups.push(() => plane.stop())
  const env = clusterEnv(plane.kubeconfig, binDir)
  await install(env)
  // The quota counts the free pool pods too.
  await kubectlOk(env.kubectl, ['apply', '--server-side', '-f', '-'], {
    input: namespaceYaml(s.challenges + (sizing === undefined ? 0 : s.definitions * sizing.size)),
  })
  // No definition is created anywhere without the namespace's register of authors (the bench writes as an operator).
  await registerAuthors(env, NS)
  await waitUntil(
    'the default ServiceAccount of the namespace',
    async () => (await env.rest.find(`/api/v1/namespaces/${NS}/serviceaccounts/default`)) !== undefined,
    { timeoutMs: 60_000 },
  )
  for (let d = 0; d < s.definitions; d++) {
    // Three hours of play: no instance expires (nor a queued one gives up) while a run lasts; at 2,000 the wait for
    // Metacontroller to catch up alone took ~13 minutes, and the default 30-minute lifetime ended a queue inside it.
    const body = {
      ...example(
        'web-login',
        { lifetimeSeconds: DEFINITION_LIFETIME_SECONDS, ...(sizing === undefined ? {} : poolSpec(sizing)) },
        definitionName(d),
      ),
      metadata: { name: definitionName(d), namespace: NS },
    }
    await env.rest.call('POST', `${CHALLENGES}/namespaces/${NS}/challengedefinitions`, {
      body,
      query: { fieldManager: AUTHOR },
    })
  }

  // A real token, as an operator sets one (the server refuses secrets.env's placeholder in production); Metacontroller
  // reads it from this Secret when it starts the controller.
  const token = randomBytes(24).toString('hex')
  await env.rest.call('PATCH', '/api/v1/namespaces/challenge-hooks/secrets/challenge-hooks-secrets', {
    body: { data: { HOOK_TOKEN: Buffer.from(token).toString('base64') } },
    contentType: 'application/merge-patch+json',
  })
  const context: RunContext = { plane, cleanups, log, out: OUT }
  // One FLAG_SECRET for every replica (as the Deployment's Secret), known to the bench for the flag checks.
  const flagSecret = randomBytes(32).toString('hex')
  const hookOptions: HookServerOptions = {
    token,
    budget: s.budget,
    budgetScope: s.budgetScope,
    flagSecret,
    env: sizing?.serverMaxPods === undefined ? {} : { POOL_MAX_PODS: String(sizing.serverMaxPods) },
  }
  const hook: Hooks =
    s.hookReplicas > 1
      ? await HookPool.start(context, hookOptions, s.hookReplicas)
      : singleHook(await startHookServer(context, hookOptions))
  const startup = startupDelays(s)
  /** the kubelet stand-in (started again after its fault); every instance's errors */
  let kubelet = new Kubelet(env.rest, { startup })
  const kubelets = [kubelet]
  await kubelet.start()
  cleanups.push(() => kubelet.stop())
  await applyControllerWithUrl(env, hook.url, s.budgetScope === 'Cluster' ? 'v2' : undefined)
  const installed = await env.rest.get<{ spec: { resyncPeriodSeconds?: number } }>(COMPOSITE_CONTROLLER)
  const mcStarted = Date.now()
  const mc = await startMetacontroller(context, env, s)
  /** what a killed Metacontroller had counted (its counters start again at 0) */
  const mcRetired: { samples: Sample[]; cpu: number } = { samples: [], cpu: 0 }

  const challengeType = resourceByName(API, 'challenges')
  if (challengeType === undefined) throw new Error('no Challenge resource type')
  const challenges = new Informer(env.rest, challengeType)
  const createdAt = new Map<string, number>()
  const runningAt = new Map<string, number>()
  /** when the bench first saw each step of an instance's start (its phase breakdown; bench/rush/phases.ts) */
  const steps = new Steps()
  /** admitted instances that ended in Error (StartupTimeout on a starved machine) before they were ever Running */
  const failedAt = new Map<string, number>()
  /** each instance's status.pool.state when first seen Running (Claimed: served from a warm pool) */
  const stateAtRunning = new Map<string, string>()
  /** when each Challenge was first seen admitted (also the moments of the faults), and Claimed (a warm pool's pod its own) */
  const admittedAt = new Map<string, number>()
  const claimedAt = new Map<string, number>()
  challenges.on(({ object }) => {
    steps.challenge(object)
    if (typeof (object.status as { admittedAt?: unknown } | undefined)?.admittedAt === 'string') {
      if (!admittedAt.has(object.metadata.name)) admittedAt.set(object.metadata.name, Date.now())
    }
    if (poolState(object) === 'Claimed' && !claimedAt.has(object.metadata.name))
      claimedAt.set(object.metadata.name, Date.now())
    const phase = (object.status as { phase?: string } | undefined)?.phase
    if (phase === 'Running' && !runningAt.has(object.metadata.name)) {
      runningAt.set(object.metadata.name, Date.now())
      stateAtRunning.set(object.metadata.name, poolState(object))
    }
    if (phase === 'Error' && !runningAt.has(object.metadata.name) && !failedAt.has(object.metadata.name))
      failedAt.set(object.metadata.name, Date.now())
  })
  await challenges.start()
  cleanups.push(() => challenges.stop())
  const pods = new Informer(env.rest, { apiVersion: 'v1', resource: 'pods', kind: 'Pod', statusSubresource: true })
  pods.on(({ object }) => steps.pod(object))
  await pods.start()
  cleanups.push(() => pods.stop())

  const snapshot = async (at: string): Promise<Snapshot> => ({
    at,
    time: Date.now(),
    apiserver: parseMetrics((await env.kubectl(['get', '--raw', '/metrics'])).stdout),
    metacontroller: [...mcRetired.samples, ...(await scrape(mc.metricsUrl))],
    hook: await hook.samples(),
    cpu: {
      hook: hook.cpuSeconds(),
      metacontroller: mcRetired.cpu + cpuSeconds(mc.pid),
      apiserver: cpuSeconds(plane.pids[1] as number),
      etcd: cpuSeconds(plane.pids[0] as number),
      controllerManager: cpuSeconds(plane.pids[2] as number),
      bench: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
    },
    rss: { hook: hook.rssMiB(), metacontroller: rssMiB(mc.pid), apiserver: rssMiB(plane.pids[1] as number) },
    sizeLines: readSizes(hook.sizesFile).length,
    load: loadavg()[0] as number,
  })

  // Metacontroller is up once it answers on its metrics port; give discovery a moment to find the CRDs.
  await waitUntil('Metacontroller metrics', async () => (await scrape(mc.metricsUrl)).length > 0, { timeoutMs: 60_000 })
  await sleep(3000)
  // Warm pools: the rush starts once every definition's pool holds its free ready pods and says Ready.
  let warmSeconds: number | undefined
  if (sizing !== undefined) {
    let lastWarmReport = 0
    await waitUntil(
      `every pool warm (${sizing.size} free ready pods of each of ${s.definitions} definitions)`,
      async () => {
        const free = freeReady(pods.list(NS))
        const definitions = (await env.rest.call('GET', `${CHALLENGES}/namespaces/${NS}/challengedefinitions`)) as {
          items: KubeObject[]
        }
        const waiting = notReady(definitions.items)
        if (Date.now() - lastWarmReport > 15_000) {
          lastWarmReport = Date.now()
          log(
            `pools: ${[...free.values()].reduce((a, b) => a + b, 0)}/${sizing.size * s.definitions} free ready pods; ${waiting.length} definitions not Ready`,
          )
        }
        return waiting.length === 0 && warm(pods.list(NS), definitionNames, sizing.size)
      },
      { timeoutMs: s.timeoutSeconds * 1000, everyMs: 500 },
    )
      .then(() => {
        warmSeconds = (Date.now() - mcStarted) / 1000
        log(`every pool warm ${warmSeconds.toFixed(1)} s after Metacontroller's start`)
      })
      .catch((error: Error) => log(`${error.message}: the rush starts anyway`))
  }
  const before = await snapshot('start')
  // A profile of a process the faults kill would be cut short: none in a fault run.
  const profile = s.faults ? Promise.resolve(undefined) : mc.profile(s.windowSeconds + 60)

  // The rush: every owner x definition pair planned, in a seeded random order, created evenly over the window.
  log(`creating ${plan.length} Challenges`)
  const t0 = Date.now()
  const admitted = admittedPerDefinition.reduce((sum, count) => sum + count, 0)
  const faults: FaultRecord[] = []
  let stopFaults = false
  const faultsDone = s.faults
    ? injectFaults(faultSchedule(admitted), {
        t0,
        log,
        stopped: () => stopFaults,
        progress: () => ({ created: createdAt.size, admitted: admittedAt.size, running: runningAt.size }),
        records: faults,
        async killMetacontroller() {
          mcRetired.samples.push(...(await scrape(mc.metricsUrl)))
          mcRetired.cpu += cpuSeconds(mc.pid)
          await mc.kill()
          // The kubelet starts a killed container again at once (no back-off before the first restart).
          await sleep(METACONTROLLER_DOWN_MS)
          await mc.restart()
          return []
        },
        rollHookServer: () => (hook as HookPool).roll(t0),
        async killKubelet() {
          kubelet.stop()
          await sleep(KUBELET_DOWN_MS)
          kubelet = new Kubelet(env.rest, { startup })
          kubelets.push(kubelet)
          await kubelet.start()
          return []
        },
      })
    : Promise.resolve()
  let inFlight = 0
  let createErrors = 0
  const creations: Promise<void>[] = []
  for (const [i, item] of plan.entries()) {
    const due = t0 + (i * s.windowSeconds * 1000) / plan.length
    if (due > Date.now()) await sleep(due - Date.now())
    while (inFlight >= CREATE_CONCURRENCY) await sleep(5)
    inFlight++
    creations.push(
      env.rest
        .call('POST', `${CHALLENGES}/namespaces/${NS}/challenges`, {
          body: challengeObject(item.owner, item.definition),
          query: { fieldManager: PLATFORM },
        })
        .then(() => void createdAt.set(challengeName(item.owner, item.definition), Date.now()))
        .catch((error: Error) => {
          createErrors++
          console.error(`rush: create ${challengeName(item.owner, item.definition)}: ${error.message}`)
        })
        .finally(() => inFlight--),
    )
  }
  await Promise.all(creations)
  const createdIn = (Date.now() - t0) / 1000
  log(`created ${createdAt.size} in ${createdIn.toFixed(1)} s (${createErrors} errors)`)
  // The refill: from the end of the window, the moment every pool held its free ready pods again for good (a late
  // claim after it empties a pool and starts the count again), watched each second until settled.
  const windowEnd = Date.now()
  let refilledAt: number | undefined
  const refill = setInterval(() => {
    if (sizing === undefined) return
    const full = warm(pods.list(NS), definitionNames, sizing.size)
    if (full && refilledAt === undefined) {
      refilledAt = Date.now()
      log(`every pool full ${((refilledAt - windowEnd) / 1000).toFixed(1)} s after the window`)
    } else if (!full && refilledAt !== undefined) {
      refilledAt = undefined
      log('a pool is short again')
    }
  }, 1000)
  cleanups.push(() => clearInterval(refill))

  let lastReport = 0
  await waitUntil(
    `${admitted} admitted instances Running`,
    async () => {
      if (Date.now() - lastReport > 15_000) {
        lastReport = Date.now()
        log(
          `${runningAt.size}/${admitted} Running${failedAt.size > 0 ? `, ${failedAt.size} in Error` : ''}; load ${loadavg()[0]?.toFixed(1)}`,
        )
      }
      return runningAt.size + failedAt.size >= admitted
    },
    { timeoutMs: s.timeoutSeconds * 1000, everyMs: 250 },
  ).catch((error: Error) => log(`${error.message}: measuring what was reached`))
  const allRunning = await snapshot('running')
  log(`${runningAt.size}/${admitted} Running after ${((allRunning.time - t0) / 1000).toFixed(1)} s`)

  // Settled: from when on the hooks were called no more than the instances' own resyncs ask for (each answer asks
  // for one within RESYNC_SECONDS): at most SETTLE_RULE.rate x that over a whole resync period (bench/rush/settle.ts).
  // "No call for a while" never happens at 1,000 (three resyncs a second), and what Metacontroller still owes the
  // rush (its backlog of related-object events, bench/RESULTS.md) is part of the rush's cost. Earlier rules: 1.5x
  // over 120 s ended a 2,000 run while that backlog was still draining; 1.2x over 240 s, taken at the window's end,
  // read the instances' own bunched resyncs as a backlog and could not say less than 240 s.
  const limit = settleLimit(SETTLE_RULE, plan.length, RESYNC_SECONDS)
  const callsSeen: CallSample[] = [{ time: allRunning.time, calls: hookCalls(allRunning.hook) }]
  const drain: Array<{ seconds: number; callsPerMinute: number }> = []
  let settledFrom: number | undefined
  await waitUntil(
    `hook calls at the resync rate (at most ${limit} in ${SETTLE_RULE.windowSeconds} s)`,
    async () => {
      const now = { time: Date.now(), calls: hookCalls(await hook.samples()) }
      callsSeen.push(now)
      if (now.time - allRunning.time >= ((drain.at(-1)?.seconds ?? 0) + 60) * 1000) {
        const minuteAgo = callsSeen.find((x) => x.time >= now.time - 60_000) ?? now
        const callsPerMinute = Math.round(
          ((now.calls - minuteAgo.calls) * 60_000) / Math.max(1, now.time - minuteAgo.time),
        )
        drain.push({ seconds: Math.round((now.time - allRunning.time) / 1000), callsPerMinute })
        log(`${callsPerMinute} hook calls a minute`)
      }
      settledFrom = settledSince(callsSeen, SETTLE_RULE.windowSeconds, limit, SAMPLE_MS)
      return settledFrom !== undefined
    },
    { timeoutMs: s.settleMaxSeconds * 1000, everyMs: SAMPLE_MS },
  ).catch((error: Error) => log(`${error.message}: not settled after ${s.settleMaxSeconds} s`))
  await sleep(1500)
  stopFaults = true
  await faultsDone
  const settled = await snapshot('settled')
  clearInterval(refill)
  const checks = await checkEndState(env.rest, budget, flagSecret, rushFlag(sizing !== undefined))
  log(
    `end state: ${Object.entries(checks.phases)
      .map(([k, v]) => `${k} ${v}`)
      .join(
        ', ',
      )}; findings: ${checks.outcome.length} outcome, ${checks.orphans.length} orphan, ${checks.duplicatePods.length} duplicate pods, ${checks.flags.length} flag`,
  )
  const logs = OUT === FAULTS_OUT ? logErrors(plane.dir, OUT, `${s.label}-${s.challenges}`) : undefined
  const profiled = await profile
  log(`settled; at rest for ${s.restSeconds} s`)
  await sleep(s.restSeconds * 1000)
  const rest = await snapshot('rest')

  const phases = new Map<string, number>()
  for (const challenge of challenges.list(NS)) {
    const status = (challenge.status ?? {}) as { phase?: string; reason?: string }
    const key = `${status.phase ?? 'none'}/${status.reason ?? 'none'}`
    phases.set(key, (phases.get(key) ?? 0) + 1)
  }
  const sizes = readSizes(hook.sizesFile)
  // The raw scrapes of the end of the run, for figures the summary does not show.
  mkdirSync(OUT, { recursive: true })
  for (const [name, url] of [
    ['metacontroller', mc.metricsUrl],
    ['hook', hook.metricsUrls[0] as string],
  ] as const) {
    writeFileSync(
      join(OUT, `${s.label}-${s.challenges}.${name}.prom`),
      await fetch(url)
        .then((r) => r.text())
        .catch(() => ''),
    )
  }
  const result = summarise({
    settings: s,
    machine: {
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      memoryGiB: totalmem() / 2 ** 30,
      freeGiB: freemem() / 2 ** 30,
      loadAtStart,
      node: process.version,
    },
    versions: { metacontroller: mc.version, kubernetes: binDir.split('/').at(-1) ?? '', commit },
    controller: { resyncPeriodSeconds: installed.spec.resyncPeriodSeconds },
    t0,
    createdIn,
    createErrors,
    admitted,
    createdAt,
    runningAt,
    failed: failedAt.size,
    phases,
    snapshots: [before, allRunning, settled, rest],
    sizes,
    profile: profiled,
    drain,
    settleRule: SETTLE_RULE,
    settledFrom,
    kubeletErrors: kubelets.reduce((sum, k) => sum + k.errors.length, 0),
    breakdown: steps.breakdown(createdAt),
    hookReplicas: s.hookReplicas,
    front: hook.front,
    faults: s.faults ? faults : undefined,
    checks,
    logs,
    pool:
      sizing === undefined
        ? undefined
        : {
            sizing,
            admitted: admittedPerDefinition,
            warmSeconds,
            stateAtRunning,
            admittedAt,
            claimedAt,
            windowEnd,
            refilledAt,
          },
  })
  mkdirSync(OUT, { recursive: true })
  const file = join(OUT, `${s.label}-${s.challenges}.json`)
  writeFileSync(file, JSON.stringify(result, null, 2))
  log(`wrote ${file}`)
  if (OUT === FAULTS_OUT) {
    writeFaultsReport(OUT, join(repoRoot, 'bench/RESULTS.md'))
    log('rewrote the faults section of bench/RESULTS.md')
  } else {
    writeReport(OUT, join(repoRoot, 'bench/RESULTS.md'))
    log('rewrote the rush section of bench/RESULTS.md')
  }
}

/** Each owner takes challenges/owners definitions (spread over the catalogue), all pairs shuffled with the seed. */
function planRush(s: RushSettings): Planned[] {
  const plan: Planned[] = []
  for (let i = 0; i < s.challenges; i++) {
    const owner = i % s.owners
    const k = Math.floor(i / s.owners)
    plan.push({ owner, definition: (owner + k * 7) % s.definitions })
  }
  const random = seeded(s.seed)
  for (let i = plan.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[plan[i], plan[j]] = [plan[j] as Planned, plan[i] as Planned]
  }
  return plan
}

function definitionName(d: number): string {
  return `chal-${String(d).padStart(2, '0')}`
}

function ownerName(o: number): string {
  return `player-${String(o).padStart(4, '0')}`
}

function challengeName(o: number, d: number): string {
  return `${definitionName(d)}-u-${ownerName(o)}`
}

function challengeObject(o: number, d: number): KubeObject {
  return {
    apiVersion: API,
    kind: 'Challenge',
    metadata: {
      name: challengeName(o, d),
      namespace: NS,
      labels: { 'challenge-hooks.dev/owner': ownerName(o), 'challenge-hooks.dev/definition': definitionName(d) },
    },
    spec: { definitionRef: { name: definitionName(d) }, owner: { kind: 'User', id: ownerName(o) } },
  }
}

/** The run's settings; a flag it does not know or a value out of range ends it with exit code 2. */
function settingsOrExit(): RushSettings {
  try {
    return readSettings(process.env, process.argv.slice(2))
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    console.error(error.message)
    process.exit(2)
  }
}

function startupDelays(s: RushSettings): () => { runningMs: number; readyMs: number } {
  const random = seeded(s.seed + 1)
  const draw = ([low, high]: [number, number]) => low + random() * (high - low)
  return () => {
    const runningMs = draw(s.runningMs)
    return { runningMs, readyMs: Math.max(draw(s.readyMs), runningMs + 500) }
  }
}

/** The challenges namespace as manifests/challenges-namespace.yaml makes it, its quota scaled to the run. */
function namespaceYaml(challenges: number): string {
  const scale = Math.max(1, Math.ceil(challenges / 200))
  return readFileSync(join(repoRoot, 'manifests/challenges-namespace.yaml'), 'utf8')
    .replace(/^(\s*)(name|namespace): challenges$/gm, `$1$2: ${NS}`)
    .replace(
      /^(\s+)(pods|requests\.cpu|limits\.cpu|services\.nodeports|count\/challenges\.challenge-hooks\.dev): "(\d+)"$/gm,
      (_m, indent: string, key: string, value: string) => `${indent}${key}: "${Number(value) * scale}"`,
    )
    .replace(
      /^(\s+)((?:requests|limits)\.(?:memory|ephemeral-storage)): (\d+)Gi$/gm,
      (_m, indent: string, key: string, value: string) => `${indent}${key}: ${Number(value) * scale}Gi`,
    )
}

/** The hook server as the run sees it: one process on its own port, or replicas behind a front (HookPool). */
interface Hooks {
  url: string
  sizesFile: string
  metricsUrls: string[]
  front?: { connections: Record<string, number>; refused: number }
  samples(): Promise<Sample[]>
  cpuSeconds(): number
  rssMiB(): number
}

function singleHook(server: HookServer): Hooks {
  return {
    url: server.url,
    sizesFile: server.sizesFile,
    metricsUrls: [server.metricsUrl],
    samples: () => scrape(server.metricsUrl),
    cpuSeconds: () => cpuSeconds(server.pid),
    rssMiB: () => rssMiB(server.pid),
  }
}

function hookCalls(samples: Sample[]): number {
  return samples
    .filter((x) => x.name === 'challenge_hooks_hook_duration_seconds_count')
    .reduce((sum, x) => sum + x.value, 0)
}

function readSizes(file: string): Array<{ hook: string; bytes: number }> {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [path, bytes] = line.split(' ')
      return { hook: (path ?? '').replace(/^\//, ''), bytes: Number(bytes) }
    })
}

// Last, so that every constant above is initialised before main runs.
try {
  await main(settings)
} finally {
  await cleanUp()
}
