/**
 * bench:gateway: the gateway (`node dist/gateway-server.js`, a process of its own) against the real API server of
 * the cluster suite, each figure beside a baseline measured in the same run:
 *
 * 1. ensure (PUT /v1/instances/{definition}) and get (GET /v1/instances/{definition}) for many owners, sent open-loop
 *    at a fixed rate; the baseline is the same API server calls the gateway makes for each (read the Challenge, its
 *    definition, the owner's Challenges; a create adds the POST), sent straight to the API server at the same rate;
 * 2. event streams (GET /v1/instances/{definition}/events) held at once: the gateway's RSS and CPU at rest, and the
 *    delay from a status write (a merge patch of status.message through the API server) to the event on its stream;
 *    the baseline is a process holding one bare watch per Challenge on the API server (./watchers.ts).
 *
 * Settings (environment): BENCH_GW_RATES (500,50: requests/s, each measured in turn), BENCH_GW_SECONDS (8 per
 * round and side), BENCH_GW_ROUNDS (1), BENCH_GW_OWNERS (2000), BENCH_GW_CREATE_RATE (200/s), BENCH_GW_STREAMS (2000),
 * BENCH_GW_REST_SECONDS (20), BENCH_GW_WRITES (150), BENCH_GW_WRITE_RATE (10/s). Writes
 * bench/out/gateway/<time>.json and adds the run to bench/RESULTS.md.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { challengeName } from '../../src/gateway/names.js'
import { example } from '../../test/helpers/examples.js'
import { controlPlaneBinaries, repoRoot, startControlPlane } from '../../test/support/kube/controlplane.js'
import { install, registerAuthors } from '../../test/support/kube/install.js'
import { kubectlOk } from '../../test/support/kube/kubectl.js'
import { AUTHOR, CHALLENGES } from '../../test/support/kube/names.js'
import { clusterEnv } from '../../test/support/kube/session.js'
import { freePort, sleep, stopChild, waitUntil } from '../../test/support/processes.js'
import { cpuSeconds, percentile, rssMiB } from '../rush/measure.js'
import { gitCommit } from '../rush/processes.js'
import { clock, inBatches, openLoop, openStream, sender, type StreamHandle, type Timed } from './load.js'
import { render, type Figures, type RateFigures } from './report.js'

const number = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`)
  return value
}
const rates = (process.env.BENCH_GW_RATES ?? '500,50').split(',').map(Number)
if (rates.some((rate) => !Number.isFinite(rate) || rate <= 0))
  throw new Error('BENCH_GW_RATES must be positive numbers separated by commas')
const settings = {
  seconds: number('BENCH_GW_SECONDS', 8),
  rounds: number('BENCH_GW_ROUNDS', 1),
  owners: number('BENCH_GW_OWNERS', 2000),
  createRate: number('BENCH_GW_CREATE_RATE', 200),
  streams: number('BENCH_GW_STREAMS', 2000),
  restSeconds: number('BENCH_GW_REST_SECONDS', 20),
  writes: number('BENCH_GW_WRITES', 150),
  writeRate: number('BENCH_GW_WRITE_RATE', 10),
}
const NS = 'bench-gateway'
const DEFINITION = 'web-login'
const KEY = 'bench-gateway-platform-key-0123456789abcdef0123456789'
const OUT = join(repoRoot, 'bench/out/gateway')
const started = Date.now()
const log = (text: string) => console.log(`gateway bench [${((Date.now() - started) / 1000).toFixed(1)} s] ${text}`)
const cleanups: Array<() => Promise<void> | void> = []
async function cleanUp(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse())
    await Promise.resolve(cleanup()).catch((error: Error) => console.error(`gateway bench: cleanup: ${error.message}`))
}
process.once('SIGINT', () => void cleanUp().finally(() => process.exit(130)))
process.once('SIGTERM', () => void cleanUp().finally(() => process.exit(143)))

const ownerId = (prefix: string, i: number) => `${prefix}${String(i).padStart(5, '0')}`

function latencies(results: Timed[], kind: string) {
  const ok = results.filter((r) => r.kind === kind && r.status >= 200 && r.status < 300).map((r) => r.latencyMs)
  const failed = results.filter((r) => r.kind === kind && !(r.status >= 200 && r.status < 300))
  const statuses: Record<string, number> = {}
  for (const r of failed) statuses[r.status] = (statuses[r.status] ?? 0) + 1
  return { count: ok.length, p50: percentile(ok, 50), p99: percentile(ok, 99), max: percentile(ok, 100), statuses }
}

async function main(): Promise<void> {
  if (!existsSync(join(repoRoot, 'dist/gateway-server.js')))
    throw new Error('bench:gateway: dist/gateway-server.js is missing (npm run build)')
  mkdirSync(OUT, { recursive: true })
  const loadAtStart = loadavg()
  log(`settings ${JSON.stringify(settings)}; load ${loadAtStart.map((x) => x.toFixed(2)).join(' ')}`)
  const binDir = controlPlaneBinaries({ build: false })
  const plane = await startControlPlane({ binDir })
  cleanups.push(() => plane.stop())
  const apiserverPid = plane.pids[1] as number
  const env = clusterEnv(plane.kubeconfig, binDir)
  await install(env)
  // A namespace of the bench's own, without the quota of manifests/challenges-namespace.yaml: thousands of records.
  await kubectlOk(env.kubectl, ['create', 'namespace', NS])
  await registerAuthors(env, NS)
  await env.rest.call('POST', `${CHALLENGES}/namespaces/${NS}/challengedefinitions`, {
    body: { ...example(DEFINITION), metadata: { name: DEFINITION, namespace: NS } },
    query: { fieldManager: AUTHOR },
  })
  log('control plane up, project installed')

  const dir = join(OUT, `run-${process.pid}`)
  mkdirSync(dir, { recursive: true })
  const platformsFile = join(dir, 'platforms.json')
  writeFileSync(platformsFile, JSON.stringify({ platforms: [{ name: 'bench', namespaces: [NS], keys: [KEY] }] }))
  const port = await freePort()
  // The gateway as production runs it; started again before the streams, so their memory is not the load's.
  const startGateway = () => {
    const child = spawn(process.execPath, [join(repoRoot, 'dist/gateway-server.js')], {
      env: {
        PATH: process.env.PATH ?? '',
        KUBECONFIG: plane.kubeconfig,
        PORT: String(port),
        HOST: '127.0.0.1',
        GATEWAY_AUDIENCE: 'https://gateway.bench',
        GATEWAY_PLATFORMS_FILE: platformsFile,
        // The per-owner limit is not what is measured: an owner here calls a few times a minute, well under it.
        GATEWAY_RATE_LIMIT: '1000',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    cleanups.push(() => stopChild(child, 5000))
    return child
  }
  let gateway = startGateway()
  let gatewayPid = gateway.pid as number
  const ca = readFileSync(plane.ca, 'utf8')
  const gw = { base: `http://127.0.0.1:${port}`, headers: { authorization: `Bearer ${KEY}` } }
  const api = {
    base: plane.server,
    ca,
    headers: { authorization: `Bearer ${plane.token}`, accept: 'application/json' },
  }
  const toGateway = sender(gw)
  const toApi = sender(api)
  cleanups.push(() => toGateway.close())
  cleanups.push(() => toApi.close())
  const gatewayUp = () =>
    waitUntil('the gateway', async () => (await toGateway.send('GET', '/healthz')).status === 200, {
      timeoutMs: 30_000,
    })
  await gatewayUp()
  const rssAtStart = rssMiB(gatewayPid)

  const owner = (id: string) => ({ 'challenge-owner': `User:${id}` })
  const instancePath = `/v1/instances/${DEFINITION}`
  const base = `${CHALLENGES}/namespaces/${NS}`
  const challengeOf = (id: string) => challengeName(DEFINITION, { kind: 'User', id })
  // What the gateway asks of the API server for a get, or an ensure of an instance that exists (src/gateway/instances.ts).
  const direct = async (id: string, create: boolean): Promise<number> => {
    const read = await toApi.send('GET', `${base}/challenges/${challengeOf(id)}`)
    if (read.status !== (create ? 404 : 200)) return read.status
    const definition = await toApi.send('GET', `${base}/challengedefinitions/${DEFINITION}`)
    if (definition.status !== 200) return definition.status
    if (create) {
      const created = await toApi.send(
        'POST',
        `${base}/challenges?fieldManager=challenge-gateway`,
        { 'content-type': 'application/json' },
        {
          apiVersion: 'challenge-hooks.dev/v1alpha1',
          kind: 'Challenge',
          metadata: {
            name: challengeOf(id),
            labels: { 'challenge-hooks.dev/owner': id, 'challenge-hooks.dev/definition': DEFINITION },
          },
          spec: { definitionRef: { name: DEFINITION }, owner: { kind: 'User', id } },
        },
      )
      if (created.status !== 201) return created.status
    }
    const list = await toApi.send('GET', `${base}/challenges?labelSelector=challenge-hooks.dev%2Fowner%3D${id}`)
    return list.status
  }

  // 1a. Ensure, creating: every owner's instance, the gateway's and the baseline's halves taking turns.
  const half = Math.ceil(settings.owners / 2)
  const creates: Timed[] = []
  for (const [from, to] of [
    [0, half],
    [half, settings.owners],
  ] as const) {
    const viaGateway = await openLoop(to - from, settings.createRate, async (i) => ({
      status: (await toGateway.send('PUT', instancePath, owner(ownerId('u', from + i)))).status,
      kind: 'gateway',
    }))
    const straight = await openLoop(to - from, settings.createRate, async (i) => ({
      status: await direct(ownerId('b', from + i), true),
      kind: 'baseline',
    }))
    creates.push(...viaGateway.results, ...straight.results)
  }
  log(`created ${settings.owners} instances through the gateway and ${settings.owners} straight`)

  // 1b. Ensure and get of existing instances, mixed owners, at each rate; the gateway and the baseline take turns.
  const mixed: RateFigures[] = []
  for (const rate of rates) {
    const results: Timed[] = []
    const lateMs = { gateway: 0, baseline: 0 }
    const count = Math.round(rate * settings.seconds)
    for (let round = 0; round < settings.rounds; round++) {
      const sides = round % 2 === 0 ? (['gateway', 'baseline'] as const) : (['baseline', 'gateway'] as const)
      for (const side of sides) {
        let seed = round * 7919 + (side === 'gateway' ? 1 : 2)
        const pick = () => {
          seed = (seed * 1103515245 + 12345) % 2147483648
          return ownerId('u', seed % settings.owners)
        }
        const run = await openLoop(count, rate, async (i) => {
          const id = pick()
          const kind = i % 2 === 0 ? 'ensure' : 'get'
          if (side === 'baseline') return { status: await direct(id, false), kind: `baseline ${kind}` }
          const answer = await toGateway.send(kind === 'ensure' ? 'PUT' : 'GET', instancePath, owner(id))
          return { status: answer.status, kind }
        })
        lateMs[side] = Math.max(lateMs[side], run.lateMs)
        results.push(...run.results)
        log(`${rate}/s, round ${round + 1}, ${side}: ${count} requests in ${run.seconds.toFixed(1)} s`)
      }
    }
    mixed.push({
      rate,
      senderLateMs: lateMs,
      ensure: { gateway: latencies(results, 'ensure'), baseline: latencies(results, 'baseline ensure') },
      get: { gateway: latencies(results, 'get'), baseline: latencies(results, 'baseline get') },
    })
  }
  const rssAfterLoad = rssMiB(gatewayPid)

  // 2. Streams: the gateway's, then the bare watches'.
  const streamCount = Math.min(settings.streams, settings.owners)
  const ids = Array.from({ length: streamCount }, (_, i) => ownerId('u', i))
  const patchStatus = (id: string, seq: number) =>
    toApi.send(
      'PATCH',
      `${base}/challenges/${challengeOf(id)}/status`,
      { 'content-type': 'application/merge-patch+json' },
      { status: { message: `bench-w${seq}x` } },
    )
  const writes = async (first: number, arrivals: Map<number, number>) => {
    const sent = new Map<number, number>()
    const answered = new Map<number, number>()
    const statuses: Record<string, number> = {}
    await openLoop(settings.writes, settings.writeRate, async (i) => {
      const seq = first + i
      sent.set(seq, clock())
      const answer = await patchStatus(ids[(i * 7919) % streamCount] as string, seq)
      answered.set(seq, clock())
      statuses[answer.status] = (statuses[answer.status] ?? 0) + 1
      return { status: answer.status, kind: 'write' }
    })
    await waitUntil('the last events', async () => [...sent.keys()].every((seq) => arrivals.has(seq)), {
      timeoutMs: 10_000,
    }).catch(() => undefined)
    const fromWrite: number[] = []
    const fromAnswer: number[] = []
    for (const [seq, at] of sent) {
      const arrived = arrivals.get(seq)
      if (arrived === undefined) continue
      fromWrite.push(arrived - at)
      fromAnswer.push(arrived - (answered.get(seq) as number))
    }
    return {
      writes: sent.size,
      seen: fromWrite.length,
      statuses,
      p50: percentile(fromWrite, 50),
      p99: percentile(fromWrite, 99),
      max: percentile(fromWrite, 100),
      afterAnswerP50: percentile(fromAnswer, 50),
      afterAnswerP99: percentile(fromAnswer, 99),
    }
  }
  const atRest = async (pid: number) => {
    const cpu0 = cpuSeconds(pid)
    const api0 = cpuSeconds(apiserverPid)
    const t0 = Date.now()
    await sleep(settings.restSeconds * 1000)
    const seconds = (Date.now() - t0) / 1000
    return {
      cpuPercent: ((cpuSeconds(pid) - cpu0) / seconds) * 100,
      apiserverCpuPercent: ((cpuSeconds(apiserverPid) - api0) / seconds) * 100,
      rssMiB: rssMiB(pid),
      apiserverRssMiB: rssMiB(apiserverPid),
    }
  }

  await stopChild(gateway, 5000)
  gateway = startGateway()
  gatewayPid = gateway.pid as number
  await gatewayUp()
  await sleep(1000)
  const rssBeforeStreams = rssMiB(gatewayPid)
  const gatewayArrivals = new Map<number, number>()
  const streams: StreamHandle[] = []
  const apiRssBefore = rssMiB(apiserverPid)
  const openStart = Date.now()
  let refused = 0
  await inBatches(ids, 50, async (id) => {
    const stream = openStream(gw, `${instancePath}/events`, owner(id), (text, at) => {
      for (const match of text.matchAll(/bench-w(\d+)x/g)) {
        const seq = Number(match[1])
        if (!gatewayArrivals.has(seq)) gatewayArrivals.set(seq, at)
      }
    })
    streams.push(stream)
    if ((await stream.opened) !== 200) refused++
  })
  const openSeconds = (Date.now() - openStart) / 1000
  cleanups.push(() => streams.forEach((stream) => stream.close()))
  log(`${streams.length - refused} gateway streams open in ${openSeconds.toFixed(1)} s (${refused} refused)`)
  await sleep(2000)
  const gatewayRest = await atRest(gatewayPid)
  const gatewayWrites = await writes(0, gatewayArrivals)
  log(`gateway streams: ${JSON.stringify({ ...gatewayRest, ...gatewayWrites })}`)
  for (const stream of streams.splice(0)) stream.close()
  await sleep(3000)

  const namesFile = join(dir, 'names.txt')
  writeFileSync(namesFile, ids.map(challengeOf).join('\n'))
  const watchers = spawn(process.execPath, [...process.execArgv, join(repoRoot, 'bench/gateway/watchers.ts')], {
    env: {
      PATH: process.env.PATH ?? '',
      WATCH_SERVER: plane.server,
      WATCH_CA: plane.ca,
      WATCH_TOKEN: plane.token,
      WATCH_NAMESPACE: NS,
      WATCH_NAMES: namesFile,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  cleanups.push(() => stopChild(watchers, 5000))
  const watchPid = watchers.pid as number
  const watchArrivals = new Map<number, number>()
  let watchOpened: { open: number; refused: number } | undefined
  const watcherStart = Date.now()
  // Its RSS before the watches (it says so once loaded), to tell the watches' cost from tsx's.
  let watcherRssAtStart = 0
  readLines(watchers, (line) => {
    const [word, a, b] = line.split(' ')
    if (word === 'start') watcherRssAtStart = Number(a)
    if (word === 'open') watchOpened = { open: Number(a), refused: Number(b) }
    if (word === 'event' && !watchArrivals.has(Number(a))) watchArrivals.set(Number(a), Number(b))
  })
  await waitUntil('the bare watches', async () => watchOpened !== undefined, { timeoutMs: 120_000 })
  const watchOpenSeconds = (Date.now() - watcherStart) / 1000
  log(`${watchOpened?.open} bare watches open in ${watchOpenSeconds.toFixed(1)} s`)
  await sleep(2000)
  const watchRest = await atRest(watchPid)
  // Sequence numbers apart from the gateway's: a watch opened without a version sends the record as it is.
  const watchWrites = await writes(1_000_000, watchArrivals)
  log(`bare watches: ${JSON.stringify({ ...watchRest, ...watchWrites })}`)

  const figures: Figures = {
    date: new Date().toISOString(),
    commit: gitCommit(),
    cpus: cpus().length,
    loadAtStart,
    loadAtEnd: loadavg(),
    settings,
    creates: { gateway: latencies(creates, 'gateway'), baseline: latencies(creates, 'baseline') },
    mixed,
    streams: {
      count: streamCount,
      gateway: {
        opened: streamCount - refused,
        openSeconds,
        rssAtStartMiB: rssAtStart,
        rssAfterLoadMiB: rssAfterLoad,
        rssBeforeMiB: rssBeforeStreams,
        apiserverRssBeforeMiB: apiRssBefore,
        ...gatewayRest,
        ...gatewayWrites,
      },
      baseline: {
        opened: watchOpened?.open ?? 0,
        openSeconds: watchOpenSeconds,
        rssAtStartMiB: watcherRssAtStart,
        rssAfterLoadMiB: 0,
        rssBeforeMiB: watcherRssAtStart,
        apiserverRssBeforeMiB: apiRssBefore,
        ...watchRest,
        ...watchWrites,
      },
    },
  }
  const file = join(OUT, `${figures.date.replace(/[:.]/g, '-')}.json`)
  writeFileSync(file, `${JSON.stringify(figures, null, 2)}\n`)
  const block = render(figures)
  console.log(block)
  addToResults(block)
  log(`wrote ${file} and bench/RESULTS.md`)
}

function readLines(child: ChildProcess, onLine: (line: string) => void): void {
  if (child.stdout !== null) createInterface({ input: child.stdout }).on('line', onLine)
}

const RESULTS = join(repoRoot, 'bench/RESULTS.md')
const HEADING = '## The gateway (`npm run bench:gateway`)'
const MARK = '<!-- bench:gateway adds each run below this line, newest first -->'

/** The run's block, under the gateway's heading of RESULTS.md (made at the end when missing), newest first. */
function addToResults(block: string): void {
  let text = readFileSync(RESULTS, 'utf8')
  if (!text.includes(MARK)) text = `${text.trimEnd()}\n\n${HEADING}\n\n${MARK}\n`
  writeFileSync(RESULTS, text.replace(MARK, `${MARK}\n\n${block.trim()}\n`))
}

try {
  await main()
} finally {
  await cleanUp()
}
