/**
 * Start latency with real pods: on the real node of `npm run test:node` (containerd, runc, CNI,
 * kube-proxy, kube-router, CoreDNS; the hook server and the Metacontroller stand-in, or Metacontroller itself with
 * METACONTROLLER_BIN and the flags the manifests give it, as in the node suite), creates
 * N Challenges of an app that listens at once (tcp-echo, NodePort) and measures, per instance, create → Running
 * and create → the first connection through the node port that got the app's banner, with the steps between
 * them: the pod created (the hook admitted it), scheduled, its container running, Ready, Running.
 *
 *   npm run bench:node-start                                              # 50 Challenges created at once
 *   BENCH_CHALLENGES=20 BENCH_INTERVAL_MS=500 npm run bench:node-start    # one every 500 ms (BENCH_LABEL names the run)
 *   BENCH_POOL=20 BENCH_CHALLENGES=20 BENCH_INTERVAL_MS=1000 npm run bench:node-start   # each claims a warm pod
 *   BENCH_REST_SECONDS=60 BENCH_POOL=20 …                               # the first create a minute after the pool is warm
 *
 * With BENCH_POOL the definition keeps that many pods warm (docs/api.md#warm-pools; flag PerInstance), filled before
 * the first create: each instance claims one, so only create → claimed, → first connection and → Running are
 * measured (its pod was made, scheduled and ready before it existed).
 *
 * Each step is seen by this process as it happens: watches of the pods, Services and Challenges, each event timed as
 * it arrives (their own timestamps have one-second resolution; a LIST in a loop would see a step up to its period
 * late and load the API server the starts need), and every instance's node port tried every PROBE_MS once its
 * Service has one. Runs as a tap file inside the node (test/support/node/cli.ts bench <this file>): tap is only the
 * runner. Writes bench/out/node-start/<label>-<N>.json and the node-start section of bench/RESULTS.md, rendered from
 * every run.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import t from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { repoRoot } from '../../test/support/kube/controlplane.js'
import { Informer } from '../../test/support/kube/informer.js'
import { metacontrollerArgs } from '../../test/support/kube/controllers.js'
import { app, definition, NODE_IP, startNodeSuite, warmPool, type Json } from '../../test/support/node/harness.js'
import { resourceByName, type KubeObject } from '../../test/support/simulator/index.js'
import { sleep } from '../../test/support/processes.js'
import { banner } from '../../test/support/node/timing.js'
import { writeReport } from './report.js'

// Settings come from the environment: the node's runner passes its arguments to tap.
const CHALLENGES = Number(process.env.BENCH_CHALLENGES ?? 50)
const INTERVAL_MS = Number(process.env.BENCH_INTERVAL_MS ?? 0)
const POOL = Number(process.env.BENCH_POOL ?? 0)
/**
 * Seconds between the pool being warm (or the definition made) and the first create. 0: at once, on cores still busy
 * with the pool's own starts; an event warms its pools before the doors open, which a minute's rest stands for.
 */
const REST_SECONDS = Number(process.env.BENCH_REST_SECONDS ?? 0)
const LABEL =
  process.env.BENCH_LABEL ??
  `${POOL > 0 ? `pool-${POOL}-` : ''}${REST_SECONDS > 0 ? `rest-${REST_SECONDS}s-` : ''}${INTERVAL_MS === 0 ? 'burst' : `every-${INTERVAL_MS}ms`}`
const PROBE_MS = 50
const BANNER = 'tcp-echo ready'

/** ms after the create call was made (-1: not seen). */
interface Instance {
  name: string
  createdAt: number
  pod: number
  scheduled: number
  started: number
  ready: number
  connected: number
  running: number
  /** status.pool says Claimed (a warm pod is its) */
  claimed: number
  nodePort?: number
}

const suite = await startNodeSuite(t)

void t.test(
  `${CHALLENGES} Challenges of an app that listens at once: create to Running and to the first connection`,
  async (t) => {
    const s = await suite.scenario(t, 'node-start')
    await s.create(
      definition('echo', {
        pod: app('tcp-echo', 9000),
        expose: { type: 'NodePort', port: 9000 },
        network: { egress: 'None' },
        ...(POOL > 0 ? { flag: { mode: 'PerInstance' }, pool: { size: POOL, maxPods: POOL } } : {}),
      }),
    )
    if (POOL > 0) await warmPool(s, POOL)
    await sleep(REST_SECONDS * 1000)
    const loadBefore = loadavg()
    const instances = new Map<string, Instance>()
    const seen = (
      x: Instance,
      key: 'pod' | 'scheduled' | 'started' | 'ready' | 'connected' | 'running' | 'claimed',
      at = Date.now(),
    ) => {
      if (x[key] < 0) x[key] = at - x.createdAt
    }
    let done = false
    const observePod = (pod: KubeObject, now: number) => {
      const x = instances.get(pod.metadata.labels?.['challenge-hooks.dev/instance'] ?? '')
      if (x === undefined) return
      const status = (pod.status ?? {}) as Json
      seen(x, 'pod', now)
      if ((pod.spec as Json | undefined)?.nodeName !== undefined) seen(x, 'scheduled', now)
      if (
        ((status.containerStatuses ?? []) as Json[]).some((c) => (c.state as Json | undefined)?.running !== undefined)
      )
        seen(x, 'started', now)
      if (((status.conditions ?? []) as Json[]).some((c) => c.type === 'Ready' && c.status === 'True'))
        seen(x, 'ready', now)
    }
    const observeChallenge = (challenge: KubeObject, now: number) => {
      const x = instances.get(challenge.metadata.name)
      const status = challenge.status as Json | undefined
      if (x !== undefined && status?.phase === 'Running') seen(x, 'running', now)
      if (x !== undefined && (status?.pool as Json | undefined)?.state === 'Claimed') seen(x, 'claimed', now)
    }
    const observeService = (service: KubeObject) => {
      const x = instances.get(service.metadata.name)
      const nodePort = ((service.spec as Json | undefined)?.ports as Json[] | undefined)?.[0]?.nodePort
      if (x !== undefined && typeof nodePort === 'number') x.nodePort = nodePort
    }
    // The watches: every event of the namespace's pods, Challenges and Services, seen as it arrives.
    const watches = (
      [
        ['v1', 'pods', observePod],
        ['challenge-hooks.dev/v1alpha1', 'challenges', observeChallenge],
        ['v1', 'services', observeService],
      ] as const
    ).map(([apiVersion, resource, observe]) => {
      const informer = new Informer(
        suite.rest,
        resourceByName(apiVersion, resource) as NonNullable<ReturnType<typeof resourceByName>>,
      )
      informer.on((event) => {
        if (event.type !== 'DELETED' && event.object.metadata.namespace === s.ns) observe(event.object, Date.now())
      })
      return informer
    })
    await Promise.all(watches.map((informer) => informer.start()))
    t.teardown(() => watches.forEach((informer) => informer.stop()))
    // The probers: each instance's node port, once its Service has one, every PROBE_MS until the banner comes.
    const probers = (async () => {
      const attempts: Promise<void>[] = []
      while (!done) {
        for (const x of instances.values()) {
          if (x.nodePort === undefined || x.connected >= 0) continue
          const startedAt = Date.now()
          attempts.push(
            banner(NODE_IP, x.nodePort).then(
              (answer) =>
                void (
                  answer === BANNER &&
                  (x.connected < 0 || startedAt - x.createdAt < x.connected) &&
                  (x.connected = startedAt - x.createdAt)
                ),
            ),
          )
        }
        await sleep(PROBE_MS)
      }
      await Promise.all(attempts)
    })()

    const started = Date.now()
    await Promise.all(
      Array.from({ length: CHALLENGES }, async (_, index) => {
        await sleep(index * INTERVAL_MS)
        const owner = `p${String(index + 1).padStart(3, '0')}`
        const name = `echo-u-${owner}`
        instances.set(name, {
          name,
          createdAt: Date.now(),
          pod: -1,
          scheduled: -1,
          started: -1,
          ready: -1,
          connected: -1,
          running: -1,
          claimed: -1,
        })
        await s.create(s.challenge('echo', owner))
      }),
    )
    const createdIn = Date.now() - started
    const deadline = Date.now() + 300_000
    while ([...instances.values()].some((x) => x.running < 0 || x.connected < 0) && Date.now() < deadline)
      await sleep(200)
    done = true
    await probers
    const loadAfter = loadavg()
    const all = [...instances.values()]
    const missing = all.filter((x) => x.running < 0 || x.connected < 0).map((x) => x.name)
    t.strictSame(missing, [], 'every instance Running and answering within 5 minutes')

    const step = (from: keyof Instance, to: keyof Instance) =>
      all.map((x) => (x[to] as number) - (from === 'createdAt' ? 0 : (x[from] as number)))
    const pooled: [string, number[]][] = [
      ['create → claimed (status.pool says Claimed)', step('createdAt', 'claimed')],
      ['**create → first connection**', step('createdAt', 'connected')],
      ['**create → Running**', step('createdAt', 'running')],
    ]
    t.strictSame(
      all.filter((x) => POOL > 0 && x.claimed < 0).map((x) => x.name),
      [],
      'with a pool, every instance served by a warm pod',
    )
    const steps: [string, number[]][] =
      POOL > 0
        ? pooled
        : [
            ['create → pod created (the hook admitted it)', step('createdAt', 'pod')],
            ['pod created → scheduled', step('pod', 'scheduled')],
            ['scheduled → container running', step('scheduled', 'started')],
            ['container running → Ready (readiness probe)', step('started', 'ready')],
            ['Ready → first connection (EndpointSlice, kube-proxy)', step('ready', 'connected')],
            ['Ready → Running (ENDPOINT_SETTLE_MS, the next sync)', step('ready', 'running')],
            ['**create → first connection**', step('createdAt', 'connected')],
            ['**create → Running**', step('createdAt', 'running')],
          ]
    const run = {
      label: LABEL,
      challenges: CHALLENGES,
      intervalMs: INTERVAL_MS,
      createdInMs: createdIn,
      when: new Date().toISOString(),
      commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim(),
      cpus: `${cpus()[0]
        ?.model.replace(/\s+\d+-Core Processor/, '')
        .trim()}, ${cpus().length} cores`,
      loadBefore: loadBefore[0],
      loadAfter: loadAfter[0],
      // 0: watched (a run that listed the objects in a loop records its period).
      pollMs: 0,
      probeMs: PROBE_MS,
      // The suite's hook server runs with the default (startNodeSuite sets no ENDPOINT_SETTLE_MS).
      endpointSettleMs: loadConfig({}).endpointSettleMs,
      pool: POOL,
      restSeconds: REST_SECONDS,
      controller:
        process.env.METACONTROLLER_BIN === undefined
          ? 'the Metacontroller stand-in'
          : `Metacontroller (${metacontrollerArgs().join(' ')})`,
      steps: steps.map(([name, values]) => ({ name, ...percentiles(values) })),
      instances: all,
    }
    t.comment(
      `${CHALLENGES} Challenges (${LABEL}, created in ${createdIn} ms), load ${loadBefore[0]?.toFixed(1)} → ${loadAfter[0]?.toFixed(1)}:`,
    )
    for (const each of run.steps)
      t.comment(
        `  ${each.name.replace(/\*/g, '').padEnd(56)} p50 ${each.p50}  p90 ${each.p90}  p99 ${each.p99}  max ${each.max} ms`,
      )
    const out = join(repoRoot, 'bench/out/node-start')
    mkdirSync(out, { recursive: true })
    writeFileSync(join(out, `${LABEL}-${CHALLENGES}.json`), `${JSON.stringify(run, null, 2)}\n`)
    writeReport(out, join(repoRoot, 'bench/RESULTS.md'))
  },
)

function percentiles(values: number[]): { p50: number; p90: number; p99: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b)
  // Nearest rank: the smallest value with at least p % of the values at or below it.
  const at = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? -1
  return { p50: at(50), p90: at(90), p99: at(99), max: sorted.at(-1) ?? -1 }
}
