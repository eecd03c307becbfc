/**
 * `npm run bench`, its measuring half: the hook server against the limit. It writes every figure to
 * bench/out/results.json (bench/server/results.ts); bench/server/render.ts then renders bench/RESULTS.md and the console's tables
 * from that file alone (`npm run report:bench` renders again without measuring).
 *
 * 1. Generates realistic /sync requests through the Metacontroller simulator (bench/server/generate.ts) and records
 *    them to bench/out/requests/.
 * 2. Runs three servers on 127.0.0.1, each its own process: the real server (node dist/server.js), an I/O baseline on bare node:http (read, JSON.parse, answer the real server's recorded bytes) and a
 *    sync baseline (read, JSON.parse, the same pure `sync` from dist/, JSON.stringify).
 * 3. Bounded closed-loop load per server and size, in interleaved rounds (the machine may be shared: every round
 *    runs each server once, in rotated order, so a busy moment hits all of them); cold start; RSS; ETag/304;
 *    CPU profiles of the real server when a target is missed.
 * 4. Writes bench/out/results.json.
 *
 * Settings (environment): BENCH_CONCURRENCY (20), BENCH_ROUNDS (5), BENCH_DURATION_MS (1000 per round),
 * BENCH_WARMUP_MS (2000 before a server's very first round; then 750 before a size's first round, 250 before the
 * others), BENCH_PROFILE (auto: only when a target is missed; 1: always; 0: never), BENCH_PROFILE_SIZES (the sizes
 * to profile, comma-separated, e.g. small,large), BENCH_REAL_NODE_ARGS (node options for the real server, to try V8
 * settings).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, release, totalmem } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { figuresOf, ratioMissed, TARGET_COLD_START_MS } from './analysis.js'
import { fmt, gitDescription, median, sizeLabel, summarize, type Run, type Summary } from './figures.js'
import { generate, serverEnv, type SizeName } from './generate.js'
import { load } from './load.js'
import { superviseChildren, serverProcesses, type Running } from './processes.js'
import { cpuSeconds, rssMb, rssSampler } from './proc.js'
import { summarise, summariseStart } from './profile.js'
import {
  BIG,
  RESULTS_VERSION,
  SERVERS,
  type BenchResults,
  type RequestRecord,
  type ServerName,
  type Variant,
} from './results.js'
import { timeStages } from './stages.js'

// No flags: the settings are the BENCH_* variables above.
try {
  parseArgs({ args: process.argv.slice(2), options: {}, strict: true })
} catch (error) {
  console.error(
    `bench measure: ${(error as Error).message}\nusage: npm run bench (no arguments: its settings are BENCH_* environment variables, bench/README.md)`,
  )
  process.exit(2)
}
const began = performance.now()
const here = dirname(fileURLToPath(import.meta.url))
// Compiled to bench/out/build/bench/server/measure.js.
const ROOT = resolve(here, '../../../../..')
const OUT = join(ROOT, 'bench/out')
const setting = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`)
  return value
}
const CONCURRENCY = setting('BENCH_CONCURRENCY', 20)
const ROUNDS = setting('BENCH_ROUNDS', 5)
const DURATION_MS = setting('BENCH_DURATION_MS', 1000)
const FIRST_WARMUP_MS = setting('BENCH_WARMUP_MS', 2000)
const SIZE_WARMUP_MS = 750
const WARMUP_MS = 250
const PROFILE = process.env.BENCH_PROFILE ?? 'auto'
/** The sizes to profile (comma-separated), instead of those BENCH_PROFILE picks; profiled even when all targets are met. */
const PROFILE_SIZES = (process.env.BENCH_PROFILE_SIZES ?? '').split(',').filter((size) => size !== '')
/** extra node options for the real server (e.g. --max-semi-space-size=2), to try V8 settings */
const REAL_NODE_ARGS = (process.env.BENCH_REAL_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '')
const COLD_STARTS = 5
const PROFILE_MS = 3500
const LOG_LEVEL = 'warn'
const HARD_STOP_MS = 6 * 60_000

const env = serverEnv({ HOST: '127.0.0.1', LOG_LEVEL })
const HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${env.HOOK_TOKEN}` }

superviseChildren(HARD_STOP_MS)
const { post, startReal, startBaseline, stop } = serverProcesses({
  root: ROOT,
  here,
  env,
  headers: HEADERS,
  realNodeArgs: REAL_NODE_ARGS,
})

async function measure(
  server: Running,
  body: Buffer,
  headers: Record<string, string>,
  expectStatus: number,
  warmupMs: number,
  durationMs = DURATION_MS,
): Promise<Run> {
  let cpuStart = 0
  let cpuEnd = 0
  const result = await load({
    port: server.port,
    path: '/sync',
    body,
    headers,
    concurrency: CONCURRENCY,
    warmupMs,
    durationMs,
    expectStatus,
    onWindow: (event) => {
      if (event === 'start') cpuStart = cpuSeconds(server.pid)
      else cpuEnd = cpuSeconds(server.pid)
    },
  })
  return { ...result, serverCpuSeconds: cpuEnd - cpuStart }
}

// ---- profiles ----

async function profileServing(probe: Buffer, body: Buffer, size: SizeName): Promise<BenchResults['profiles'][number]> {
  const dir = join(OUT, 'profile', size)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const { server, firstOkMs } = await startReal(probe, ['--cpu-prof', '--cpu-prof-dir', dir])
  const run = await load({
    port: server.port,
    path: '/sync',
    body,
    headers: HEADERS,
    concurrency: CONCURRENCY,
    warmupMs: 0,
    durationMs: PROFILE_MS,
    expectStatus: 200,
  })
  await stop(server)
  const name = readdirSync(dir).find((file) => file.endsWith('.cpuprofile'))
  if (name === undefined) throw new Error(`no CPU profile was written to ${dir}`)
  // The profile covers the whole process: its start (left out) and every request of the run.
  return {
    size,
    summary: summarise(join(dir, name), firstOkMs),
    requests: run.requests,
    file: relative(ROOT, join(dir, name)),
  }
}

async function profileStart(probe: Buffer): Promise<NonNullable<BenchResults['start']>> {
  const dir = join(OUT, 'profile', 'start')
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const { server } = await startReal(probe, ['--cpu-prof', '--cpu-prof-dir', dir])
  await stop(server)
  const name = readdirSync(dir).find((file) => file.endsWith('.cpuprofile'))
  if (name === undefined) throw new Error(`no CPU profile was written to ${dir}`)
  return { summary: summariseStart(join(dir, name)), file: relative(ROOT, join(dir, name)) }
}

/** Heap one parsed request occupies (this process, after a full GC; enough copies to weigh ~16 MB). */
function parsedHeapMb(body: Buffer): number {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as () => void
  const copies = Math.max(1, Math.ceil((4 * 1024 * 1024) / body.length))
  const text = body.toString('utf8')
  gc()
  const before = process.memoryUsage().heapUsed
  const parsed: unknown[] = Array.from({ length: copies }, () => JSON.parse(text) as unknown)
  gc()
  const after = process.memoryUsage().heapUsed
  return parsed.length ? (after - before) / copies / 1024 / 1024 : 0
}

// ---- the run ----

const date = new Date().toISOString()
const loadBefore = loadavg()
rmSync(join(OUT, 'requests'), { recursive: true, force: true })
mkdirSync(join(OUT, 'requests'), { recursive: true })

console.log('bench: generating requests through the simulator …')
const tGen = performance.now()
const generated = await generate(ROOT)
const generateSeconds = (performance.now() - tGen) / 1000
const bodyOf = (size: SizeName) => (generated.find((g) => g.name === size) as { body: Buffer }).body
const sizes = generated.map((g) => g.name)
const heapMb = new Map<SizeName, number>()
for (const g of generated) {
  const file = join(OUT, 'requests', `${g.name}.json`)
  writeFileSync(file, g.body)
  heapMb.set(g.name, parsedHeapMb(g.body))
  console.log(
    `  ${g.name.padEnd(6)} ${sizeLabel(g.body.length).padStart(10)}  ${relative(ROOT, file)}  ${g.phase}: ${g.what}`,
  )
}
console.log(`  generated in ${fmt(generateSeconds, 1)} s`)

console.log('bench: timing the stages of a call in process …')
const stages = await timeStages(ROOT, env, new Map(generated.map((g) => [g.name, g.body])))
const small = bodyOf('small')

console.log(`bench: cold start, ${COLD_STARTS} times (spawn → first 200 on /sync with the small request) …`)
const coldStarts: number[] = []
for (let i = 0; i < COLD_STARTS; i++) {
  const { server, firstOkMs } = await startReal(small)
  coldStarts.push(firstOkMs)
  await stop(server)
}
const coldMedian = median(coldStarts)
console.log(`  ${coldStarts.map((ms) => `${fmt(ms)} ms`).join(', ')}; median ${fmt(coldMedian)} ms`)

// The real server's answers, recorded for the I/O baseline.
const recorded: Array<{
  size: SizeName
  requestBytes: number
  headers: Record<string, string>
  body: string
  phase: string
}> = []
{
  const { server } = await startReal(small)
  mkdirSync(join(OUT, 'responses'), { recursive: true })
  for (const g of generated) {
    const answer = await post(server.port, g.body)
    if (answer.status !== 200)
      throw new Error(`the real server answered ${answer.status} to ${g.name}: ${answer.body.toString().slice(0, 500)}`)
    const status = (JSON.parse(answer.body.toString()) as { status: { phase: string; reason: string } }).status
    writeFileSync(join(OUT, 'responses', `${g.name}.json`), answer.body)
    recorded.push({
      size: g.name,
      requestBytes: g.body.length,
      headers: { 'content-type': answer.headers['content-type'] as string, etag: answer.headers.etag as string },
      body: answer.body.toString(),
      phase: `${status.phase}/${status.reason}`,
    })
  }
  await stop(server)
}
const recordedOf = (size: SizeName) => recorded.find((r) => r.size === size) as (typeof recorded)[number]
writeFileSync(join(OUT, 'responses', 'recorded.json'), JSON.stringify(recorded))
// The servers live through every size, smallest first (warm, as in production); each size's RSS is the largest
// seen while serving it (RSS seldom shrinks, so it is also "while serving up to this size").
const servers: Record<ServerName, Running> = {
  real: (await startReal(small)).server,
  io: await startBaseline('io', { BENCH_RESPONSES: join(OUT, 'responses', 'recorded.json') }),
  sync: await startBaseline('sync', {}),
}
const rssIdle = Object.fromEntries(SERVERS.map((name) => [name, rssMb(servers[name].pid)])) as Record<
  ServerName,
  number
>
const sameAnswer = new Map<SizeName, boolean>()
const runs = new Map<SizeName, Record<Variant, Run[]>>()
const rssMax = {} as Record<SizeName, Record<ServerName, number>>
const etagOf = new Map<SizeName, string>()
const warmed = new Set<Variant>()
for (const size of sizes) {
  const body = bodyOf(size)
  const samplers = SERVERS.map((name) => rssSampler(servers[name].pid))
  // The sync baseline runs the same function: its answer should be the real server's, byte for byte (small's
  // carries the time of the call, so it may differ by a second).
  sameAnswer.set(size, (await post(servers.sync.port, body)).body.toString() === recordedOf(size).body)
  const variants: Variant[] = BIG.includes(size) ? ['real', 'io', 'sync', 'etag'] : ['real', 'io', 'sync']
  if (BIG.includes(size)) etagOf.set(size, (await post(servers.real.port, body)).headers.etag as string)
  const target: Record<Variant, { server: Running; headers: Record<string, string>; status: number }> = {
    real: { server: servers.real, headers: HEADERS, status: 200 },
    io: { server: servers.io, headers: HEADERS, status: 200 },
    sync: { server: servers.sync, headers: HEADERS, status: 200 },
    etag: { server: servers.real, headers: { ...HEADERS, 'if-none-match': etagOf.get(size) ?? '' }, status: 304 },
  }
  const rounds = { real: [], io: [], sync: [], etag: [] } as Record<Variant, Run[]>
  for (let round = 0; round < ROUNDS; round++) {
    const order = variants.map((_, i) => variants[(i + round) % variants.length] as Variant)
    for (const variant of order) {
      const { server, headers, status } = target[variant]
      const warmup = !warmed.has(variant) ? FIRST_WARMUP_MS : round === 0 ? SIZE_WARMUP_MS : WARMUP_MS
      warmed.add(variant)
      rounds[variant].push(await measure(server, body, headers, status, warmup))
    }
  }
  const [real, io, sync] = samplers.map((sampler) => sampler.stop()) as [number, number, number]
  rssMax[size] = { real, io, sync }
  runs.set(size, rounds)
  const line = (variant: Variant) => {
    const s = summarize(rounds[variant])
    return `${variant} ${fmt(s.rps)}/s${s.unexpected ? ` (${s.unexpected} unexpected)` : ''}`
  }
  console.log(
    `bench: ${size.padEnd(6)} ${variants.map(line).join(', ')}; RSS max real ${fmt(real, 1)} MB, io ${fmt(io, 1)} MB, sync ${fmt(sync, 1)} MB`,
  )
}
for (const name of SERVERS) await stop(servers[name])

// ---- profiles, where a target is missed ----

const summaries = Object.fromEntries(
  sizes.map((size) => {
    const rounds = runs.get(size) as Record<Variant, Run[]>
    return [
      size,
      Object.fromEntries(
        (Object.keys(rounds) as Variant[]).filter((v) => rounds[v].length > 0).map((v) => [v, summarize(rounds[v])]),
      ),
    ]
  }),
) as Record<SizeName, Partial<Record<Variant, Summary>>>
const withoutLatencies = (rounds: Run[]) => rounds.map(({ latencies: _, ...run }) => run)
const results: BenchResults = {
  version: RESULTS_VERSION,
  date,
  machine: {
    cpu: /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: totalmem() / 1024 ** 3,
    os: `Linux ${release()}`,
    node: process.version,
    commit: gitDescription(ROOT),
  },
  settings: {
    concurrency: CONCURRENCY,
    rounds: ROUNDS,
    durationMs: DURATION_MS,
    firstWarmupMs: FIRST_WARMUP_MS,
    sizeWarmupMs: SIZE_WARMUP_MS,
    warmupMs: WARMUP_MS,
    realNodeArgs: REAL_NODE_ARGS,
    logLevel: LOG_LEVEL,
    coldStarts: COLD_STARTS,
  },
  loadBefore,
  loadAfter: loadBefore,
  totalSeconds: 0,
  generateSeconds,
  requests: generated.map((g): RequestRecord => ({
    size: g.name,
    bytes: g.body.length,
    what: g.what,
    answerPhase: recordedOf(g.name).phase,
    answerBytes: Buffer.byteLength(recordedOf(g.name).body),
    heapMb: heapMb.get(g.name) as number,
    sameAnswer: sameAnswer.get(g.name) as boolean,
  })),
  stages: Object.fromEntries(stages) as BenchResults['stages'],
  coldStarts,
  rssIdle,
  rssMax,
  runs: Object.fromEntries(
    sizes.map((size) => [
      size,
      Object.fromEntries(
        Object.entries(runs.get(size) as Record<Variant, Run[]>).map(([v, rounds]) => [v, withoutLatencies(rounds)]),
      ),
    ]),
  ) as BenchResults['runs'],
  summaries,
  profiles: [],
}

const figures = figuresOf(results)
const missed = ratioMissed(figures)
const profileAll = PROFILE === '1'
if (PROFILE !== '0') {
  const unknown = PROFILE_SIZES.filter((size) => !sizes.includes(size as SizeName))
  if (unknown.length > 0)
    throw new Error(`BENCH_PROFILE_SIZES: no size ${unknown.join(', ')} (sizes: ${sizes.join(', ')})`)
  const toProfile: SizeName[] =
    PROFILE_SIZES.length > 0
      ? (PROFILE_SIZES as SizeName[])
      : profileAll
        ? ['medium', 'xlarge']
        : missed.length > 0
          ? [...new Set<SizeName>(['medium', missed.at(-1) as SizeName])]
          : []
  for (const size of toProfile) {
    process.stdout.write(`bench: CPU profile of the real server, ${size} … `)
    const profile = await profileServing(small, bodyOf(size), size)
    results.profiles.push(profile)
    console.log(profile.file)
  }
  if (profileAll || figures.coldMedian >= TARGET_COLD_START_MS) {
    process.stdout.write('bench: CPU profile of a cold start … ')
    results.start = await profileStart(small)
    console.log(results.start.file)
  }
}

results.loadAfter = loadavg()
results.totalSeconds = (performance.now() - began) / 1000
writeFileSync(join(OUT, 'results.json'), JSON.stringify(results, null, 2))
console.log(`bench: measured in ${fmt(results.totalSeconds)} s; wrote bench/out/results.json`)
process.exit(0)
