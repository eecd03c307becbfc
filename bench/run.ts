/**
 * `npm run bench`: the hook server against the limit.
 *
 * 1. Generates realistic /sync requests through the Metacontroller simulator (bench/generate.ts) and records
 *    them to bench/out/requests/.
 * 2. Runs three servers on 127.0.0.1, each its own process: the real server (node dist/server.js), an I/O baseline on bare node:http (read, JSON.parse, answer the real server's recorded bytes) and a
 *    sync baseline (read, JSON.parse, the same pure `sync` from dist/, JSON.stringify).
 * 3. Bounded closed-loop load per server and size, in interleaved rounds (the machine may be shared: every round
 *    runs each server once, in rotated order, so a busy moment hits all of them); cold start; RSS; ETag/304;
 *    CPU profiles of the real server when a target is missed.
 * 4. Prints a table and writes bench/RESULTS.md (and bench/out/results.json).
 *
 * Settings (environment): BENCH_CONCURRENCY (20), BENCH_ROUNDS (5), BENCH_DURATION_MS (1000 per round),
 * BENCH_WARMUP_MS (2000 before a server's very first round; then 750 before a size's first round, 250 before the
 * others), BENCH_PROFILE (auto: only when a target is missed; 1: always; 0: never), BENCH_REAL_NODE_ARGS (node options
 * for the real server, to try V8 settings).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { fmt, kib, median, pairedRatio, pct, plain, sizeLabel, summarize, type Run } from './figures.js'
import { generate, serverEnv, type Generated, type SizeName } from './generate.js'
import { load } from './load.js'
import { superviseChildren, serverProcesses, type Running } from './processes.js'
import { cpuSeconds, rssMb, rssSampler } from './proc.js'
import { summarise, summariseStart, type ProfileSummary, type StartSummary } from './profile.js'
import { BIG, resultsMarkdown, SERVERS, type Recorded, type ServerName, type Target, type Variant } from './report.js'
import { timeStages, type StageTimes } from './stages.js'

const began = performance.now()
const here = dirname(fileURLToPath(import.meta.url))
// Compiled to bench/out/build/bench/run.js.
const ROOT = resolve(here, '../../../..')
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
/** extra node options for the real server (e.g. --max-semi-space-size=2), to try V8 settings */
const REAL_NODE_ARGS = (process.env.BENCH_REAL_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '')
const COLD_STARTS = 5
const PROFILE_MS = 3500
const LOG_LEVEL = 'warn'
/** The real server's req/s over the I/O baseline's, per size (issue 12: small 0.6, medium 0.9, large and above 0.85). */
const TARGET_RATIOS: Record<SizeName, number> = { small: 0.6, medium: 0.9, large: 0.85, xlarge: 0.85 }
const TARGET_COLD_START_MS = 300
/** The real server's RSS under load at most this times the I/O baseline's, per size. */
const TARGET_RSS_RATIO = 1.3
/** time per request may grow at most like size^1.1 between consecutive sizes (10 % for noise) */
const TARGET_EXPONENT = 1.1
const HARD_STOP_MS = 6 * 60_000


const env = serverEnv({ HOST: '127.0.0.1', LOG_LEVEL })
const HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${env.HOOK_TOKEN}` }

superviseChildren(HARD_STOP_MS)
const { post, startReal, startBaseline, stop } = serverProcesses({ root: ROOT, here, env, headers: HEADERS, realNodeArgs: REAL_NODE_ARGS })

async function measure(server: Running, body: Buffer, headers: Record<string, string>, expectStatus: number, warmupMs: number, durationMs = DURATION_MS): Promise<Run> {
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

async function profileServing(probe: Buffer, body: Buffer, size: SizeName): Promise<{ summary: ProfileSummary; requests: number; file: string }> {
  const dir = join(OUT, 'profile', size)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const { server, firstOkMs } = await startReal(probe, ['--cpu-prof', '--cpu-prof-dir', dir])
  const run = await load({ port: server.port, path: '/sync', body, headers: HEADERS, concurrency: CONCURRENCY, warmupMs: 0, durationMs: PROFILE_MS, expectStatus: 200 })
  await stop(server)
  const name = readdirSync(dir).find((file) => file.endsWith('.cpuprofile'))
  if (name === undefined) throw new Error(`no CPU profile was written to ${dir}`)
  // The profile covers the whole process: its start (left out) and every request of the run.
  return { summary: summarise(join(dir, name), firstOkMs), requests: run.requests, file: relative(ROOT, join(dir, name)) }
}

async function profileStart(probe: Buffer): Promise<{ summary: StartSummary; file: string }> {
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

const loadBefore = loadavg()
rmSync(join(OUT, 'requests'), { recursive: true, force: true })
mkdirSync(join(OUT, 'requests'), { recursive: true })

console.log('bench: generating requests through the simulator …')
const tGen = performance.now()
const generated = await generate(ROOT)
const generateSeconds = (performance.now() - tGen) / 1000
const request_ = new Map<SizeName, Generated>(generated.map((g) => [g.name, g]))
const bodyOf = (size: SizeName) => (request_.get(size) as Generated).body
const bytes = (size: SizeName) => bodyOf(size).length
const sizes = generated.map((g) => g.name)
const heapMb = new Map<SizeName, number>()
for (const g of generated) {
  const file = join(OUT, 'requests', `${g.name}.json`)
  writeFileSync(file, g.body)
  heapMb.set(g.name, parsedHeapMb(g.body))
  console.log(`  ${g.name.padEnd(6)} ${sizeLabel(g.body.length).padStart(10)}  ${relative(ROOT, file)}  ${g.phase}: ${g.what}`)
}
console.log(`  generated in ${fmt(generateSeconds, 1)} s`)

console.log('bench: timing the stages of a call in process …')
const stages = await timeStages(ROOT, env, new Map(generated.map((g) => [g.name, g.body])))
const stage = (size: SizeName) => stages.get(size) as StageTimes
/** In process: the work of a call beyond the I/O baseline's (decode + JSON.parse), µs. */
const beyondUs = (size: SizeName) => {
  const t = stage(size)
  return t.validate + t.sync + t.stringify + t.etag
}
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
const recorded: Recorded[] = []
{
  const { server } = await startReal(small)
  mkdirSync(join(OUT, 'responses'), { recursive: true })
  for (const g of generated) {
    const answer = await post(server.port, g.body)
    if (answer.status !== 200) throw new Error(`the real server answered ${answer.status} to ${g.name}: ${answer.body.toString().slice(0, 500)}`)
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
const recordedOf = (size: SizeName) => recorded.find((r) => r.size === size) as Recorded
writeFileSync(join(OUT, 'responses', 'recorded.json'), JSON.stringify(recorded))
// The servers live through every size, smallest first (warm, as in production); each size's RSS is the largest
// seen while serving it (RSS seldom shrinks, so it is also "while serving up to this size").
const servers: Record<ServerName, Running> = {
  real: (await startReal(small)).server,
  io: await startBaseline('io', { BENCH_RESPONSES: join(OUT, 'responses', 'recorded.json') }),
  sync: await startBaseline('sync', {}),
}
const rssIdle = Object.fromEntries(SERVERS.map((name) => [name, rssMb(servers[name].pid)])) as Record<ServerName, number>
const sameAnswer = new Map<SizeName, boolean>()
const runs = new Map<SizeName, Record<Variant, Run[]>>()
const rssMax = new Map<SizeName, Record<ServerName, number>>()
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
  const results = { real: [], io: [], sync: [], etag: [] } as Record<Variant, Run[]>
  for (let round = 0; round < ROUNDS; round++) {
    const order = variants.map((_, i) => variants[(i + round) % variants.length] as Variant)
    for (const variant of order) {
      const { server, headers, status } = target[variant]
      const warmup = !warmed.has(variant) ? FIRST_WARMUP_MS : round === 0 ? SIZE_WARMUP_MS : WARMUP_MS
      warmed.add(variant)
      results[variant].push(await measure(server, body, headers, status, warmup))
    }
  }
  const [real, io, sync] = samplers.map((sampler) => sampler.stop()) as [number, number, number]
  rssMax.set(size, { real, io, sync })
  runs.set(size, results)
  const line = (variant: Variant) => {
    const s = summarize(results[variant])
    return `${variant} ${fmt(s.rps)}/s${s.unexpected ? ` (${s.unexpected} unexpected)` : ''}`
  }
  console.log(`bench: ${size.padEnd(6)} ${variants.map(line).join(', ')}; RSS max real ${fmt(real, 1)} MB, io ${fmt(io, 1)} MB, sync ${fmt(sync, 1)} MB`)
}
for (const name of SERVERS) await stop(servers[name])

// ---- figures and targets ----

const summary = (size: SizeName, variant: Variant) => summarize((runs.get(size) as Record<Variant, Run[]>)[variant])
const ratioOf = (size: SizeName, base: ServerName) => pairedRatio((runs.get(size) as Record<Variant, Run[]>).real, (runs.get(size) as Record<Variant, Run[]>)[base])
const ratio = (size: SizeName, base: ServerName) => ratioOf(size, base).median
const ratioText = (size: SizeName, base: ServerName) => {
  const r = ratioOf(size, base)
  return `${fmt(r.median, 2)} (${fmt(r.min, 2)}–${fmt(r.max, 2)})`
}
const syncVsIo = (size: SizeName) => pairedRatio((runs.get(size) as Record<Variant, Run[]>).sync, (runs.get(size) as Record<Variant, Run[]>).io).median
/** The same ratio from the servers' CPU per request (/proc): less sensitive to other work on the machine. */
const cpuRatio = (size: SizeName, base: ServerName) => summary(size, base).serverCpuUs / summary(size, 'real').serverCpuUs
const usPerRequest = (size: SizeName, server: ServerName) => 1e6 / summary(size, server).rps
const exponent = (a: SizeName, b: SizeName, server: ServerName = 'real') => Math.log(usPerRequest(b, server) / usPerRequest(a, server)) / Math.log(bytes(b) / bytes(a))
const nonOk = sizes.reduce((n, size) => n + SERVERS.reduce((m, s) => m + summary(size, s).unexpected, 0), 0)
const nonNotModified = BIG.reduce((n, size) => n + summary(size, 'etag').unexpected, 0)
const realRss = (size: SizeName) => (rssMax.get(size) as Record<ServerName, number>).real
const ioRss = (size: SizeName) => (rssMax.get(size) as Record<ServerName, number>).io
const steps: Array<[SizeName, SizeName]> = [
  ['medium', 'large'],
  ['large', 'xlarge'],
]

const targets: Target[] = [
  ...sizes.map((size) => ({
    target: `≥ ${TARGET_RATIOS[size]} of the I/O baseline's req/s, ${size}`,
    value: `${fmt(ratio(size, 'io'), 3)} (rounds ${fmt(ratioOf(size, 'io').min, 2)}–${fmt(ratioOf(size, 'io').max, 2)}); by CPU per request ${fmt(cpuRatio(size, 'io'), 3)}`,
    met: ratio(size, 'io') >= TARGET_RATIOS[size],
  })),
  { target: `cold start ≤ ${TARGET_COLD_START_MS} ms (median of ${COLD_STARTS})`, value: `${fmt(coldMedian)} ms`, met: coldMedian <= TARGET_COLD_START_MS },
  ...sizes.map((size) => ({
    target: `RSS under load ≤ ${TARGET_RSS_RATIO}× the I/O baseline's, ${size} (max)`,
    value: `${fmt(realRss(size), 1)} MB against ${fmt(ioRss(size), 1)} MB: ${fmt(realRss(size) / ioRss(size), 2)}×`,
    met: realRss(size) <= TARGET_RSS_RATIO * ioRss(size),
  })),
  ...steps.map(([a, b]) => ({
    target: `time per request grows no faster than size, ${a} → ${b} (k ≤ ${TARGET_EXPONENT} in time ∝ size^k)`,
    value: fmt(exponent(a, b), 2),
    met: exponent(a, b) <= TARGET_EXPONENT,
  })),
]
const missed = targets.filter((t) => !t.met)
const ratioMissed = sizes.filter((size) => ratio(size, 'io') < TARGET_RATIOS[size])

const profiles: Array<{ size: SizeName; summary: ProfileSummary; requests: number; file: string }> = []
let start: { summary: StartSummary; file: string } | undefined
const profileAll = PROFILE === '1'
if (PROFILE !== '0') {
  const toProfile: SizeName[] = profileAll ? ['medium', 'xlarge'] : ratioMissed.length > 0 ? [...new Set<SizeName>(['medium', ratioMissed.at(-1) as SizeName])] : []
  for (const size of toProfile) {
    process.stdout.write(`bench: CPU profile of the real server, ${size} … `)
    const result = await profileServing(small, bodyOf(size), size)
    profiles.push({ size, ...result })
    console.log(result.file)
  }
  if (profileAll || coldMedian >= TARGET_COLD_START_MS) {
    process.stdout.write('bench: CPU profile of a cold start … ')
    start = await profileStart(small)
    console.log(start.file)
  }
}

// Causes, from the figures and profiles.
for (const t of missed) {
  const size = sizes.find((s) => t.target.endsWith(`baseline's req/s, ${s}`))
  if (size !== undefined) {
    // The profile of this size, or of the nearest size profiled.
    const distance = (p: { size: SizeName }) => Math.abs(Math.log(bytes(p.size) / bytes(size)))
    const profile = [...profiles].sort((a, b) => distance(a) - distance(b))[0]
    const beyond = profile?.summary.stages.filter((s) => !s.shared) ?? []
    const beyondShare = beyond.reduce((n, s) => n + s.share, 0)
    const t0 = stage(size)
    t.cause =
      `In process, per call: the limit's own work (UTF-8 decode + JSON.parse) ${fmt(t0.decode + t0.jsonParse)} µs; beyond it ${fmt(beyondUs(size))} µs ` +
      `(validation ${fmt(t0.validate)}, sync ${fmt(t0.sync)}, stringify + ETag ${fmt(t0.stringify + t0.etag)}), ` +
      `which alone would allow ${fmt((t0.decode + t0.jsonParse) / (t0.decode + t0.jsonParse + beyondUs(size)), 2)}; inside the server, under load, the same work costs more per call than in this loop (the HTTP figures and the profile say how much). ` +
      `The hook's own work: the sync baseline (the same JSON.parse, sync and JSON.stringify, no framework) runs at ${fmt(syncVsIo(size), 2)} of the I/O baseline's req/s ` +
      `(${fmt(summary(size, 'io').serverCpuUs / summary(size, 'sync').serverCpuUs, 2)} by CPU per request). The framework and checks around it: the real server runs at ${fmt(ratio(size, 'sync'), 2)} of the sync baseline.` +
      (profile
        ? ` Profile (${profile.size}): ${pct(beyondShare)} of the real server's busy time is work the I/O baseline does not do, largest first: ${beyond
            .slice(0, 6)
            .map((s) => `${s.stage} ${pct(s.share)}`)
            .join(', ')}.`
        : '')
  } else if (t.target.startsWith('cold start')) {
    t.cause = start
      ? `profiled cold start (${fmt(start.summary.spanMs)} ms with the profiler on): ${start.summary.phases
          .filter((p) => p.ms >= 5)
          .map((p) => `${p.phase} ${fmt(p.ms)} ms`)
          .join(', ')}; \`node -e ''\` alone is part of the first.`
      : 'not profiled'
  } else if (t.target.startsWith('RSS')) {
    const size = sizes.find((s) => t.target.endsWith(`, ${s} (max)`)) as SizeName
    t.cause =
      `the server holds ${fmt(rssIdle.real, 1)} MB right after its start (the I/O baseline ${fmt(rssIdle.io, 1)} MB); ` +
      `under the same load the I/O baseline (bare node:http + JSON.parse) grows to ${fmt((rssMax.get(size) as Record<ServerName, number>).io, 1)} MB: one parsed ${size} request is ${fmt((heapMb.get(size) as number) * 1024)} KiB of V8 heap ` +
      `(JSON.parse of the body, after a full GC) plus its ${fmt(kib(bytes(size)) / 1024, 1)} MB body string, ${CONCURRENCY} in flight, and V8 lets garbage grow between collections.`
  }
}

const loadAfter = loadavg()
const totalSeconds = (performance.now() - began) / 1000

// ---- console ----
const header = ['size', 'server', 'req/s', 'min–max', 'p50 ms', 'p99 ms', 'non-200', 'CPU µs/req', 'µs/req', 'µs/KiB', 'real ÷ this']
const rows: string[][] = []
for (const size of sizes) {
  for (const server of SERVERS) {
    const s = summary(size, server)
    rows.push([
      `${size} ${sizeLabel(bytes(size))}`,
      server,
      fmt(s.rps),
      `${fmt(s.rpsMin)}–${fmt(s.rpsMax)}`,
      fmt(s.p50Ms, 2),
      fmt(s.p99Ms, 2),
      String(s.unexpected),
      fmt(s.serverCpuUs),
      fmt(usPerRequest(size, server)),
      fmt(usPerRequest(size, server) / kib(bytes(size)), 2),
      server === 'real' ? '' : ratioText(size, server),
    ])
  }
}
console.log()
console.log(plain(header, rows))
console.log()
const etagRows = BIG.map((size) => {
  const full = summary(size, 'real')
  const cached = summary(size, 'etag')
  return [size, fmt(full.rps), fmt(cached.rps), fmt(cached.rps / full.rps, 2), fmt(full.receivedPerRequest), fmt(cached.receivedPerRequest), fmt(full.receivedPerRequest - cached.receivedPerRequest), fmt(cached.sentPerRequest), String(cached.unexpected)]
})
const etagHeader = ['size', 'req/s 200', 'req/s 304', '304 ÷ 200', 'received B/req (200)', 'received B/req (304)', 'saved B/req', 'sent B/req', 'non-304']
console.log(plain(etagHeader, etagRows))
console.log()
console.log(`cold start median ${fmt(coldMedian)} ms; real server RSS max ${sizes.map((s) => `${s} ${fmt(realRss(s), 1)} MB`).join(', ')}`)
for (const t of targets) console.log(`${t.met ? 'met   ' : 'MISSED'}  ${t.target}: ${t.value}`)

// ---- RESULTS.md ----
const md = resultsMarkdown({
  root: ROOT,
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
  loadAfter,
  totalSeconds,
  generateSeconds,
  generated,
  recordedOf,
  heapMb,
  sameAnswer,
  sizes,
  stage,
  beyondUs,
  header,
  rows,
  cpuRatio,
  nonOk,
  summary,
  steps,
  bytes,
  usPerRequest,
  exponent,
  coldStarts,
  coldMedian,
  start,
  rssIdle,
  realRss,
  rssMax,
  etagHeader,
  etagRows,
  nonNotModified,
  targets,
  profiles,
})
const marker = '<!-- findings: text below this line is kept when the file is rewritten -->'
const previous = (() => {
  try {
    return readFileSync(join(ROOT, 'bench/RESULTS.md'), 'utf8')
  } catch {
    return ''
  }
})()
const findings = previous.includes(marker) ? previous.slice(previous.indexOf(marker) + marker.length).trimStart() : ''
writeFileSync(join(ROOT, 'bench/RESULTS.md'), `${md}${findings ? `\n${findings}` : ''}`)
const json = (value: unknown) => JSON.stringify(value, (key, v: unknown) => (key === 'latencies' ? undefined : v), 2)
writeFileSync(
  join(OUT, 'results.json'),
  json({
    date: new Date().toISOString(),
    node: process.version,
    settings: { concurrency: CONCURRENCY, rounds: ROUNDS, durationMs: DURATION_MS, firstWarmupMs: FIRST_WARMUP_MS, warmupMs: WARMUP_MS, logLevel: LOG_LEVEL },
    loadBefore,
    loadAfter,
    sizes: Object.fromEntries(sizes.map((size) => [size, bytes(size)])),
    heapMb: Object.fromEntries(heapMb),
    coldStarts,
    rssIdle,
    rssMax: Object.fromEntries(rssMax),
    summaries: Object.fromEntries(sizes.map((size) => [size, Object.fromEntries((['real', 'io', 'sync', 'etag'] as Variant[]).filter((v) => (runs.get(size) as Record<Variant, Run[]>)[v].length).map((v) => [v, summary(size, v)]))])),
    runs: Object.fromEntries(runs),
    targets,
    stages: Object.fromEntries(stages),
    profiles,
    start,
    totalSeconds,
  }),
)
console.log(`\nbench: done in ${fmt(totalSeconds)} s; wrote bench/RESULTS.md and bench/out/results.json`)
process.exit(0)

