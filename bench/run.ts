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
 * Settings (environment): BENCH_CONCURRENCY (5), BENCH_ROUNDS (5), BENCH_DURATION_MS (1000 per round),
 * BENCH_WARMUP_MS (2000 before a server's very first round; then 750 before a size's first round, 250 before the
 * others), BENCH_PROFILE (auto: only when a target is missed; 1: always; 0: never), BENCH_REAL_NODE_ARGS (node options
 * for the real server, to try V8 settings).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { availableParallelism, cpus, loadavg, release, totalmem } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { generate, serverEnv, type Generated, type SizeName } from './generate.js'
import { load, percentile, type LoadResult } from './load.js'
import { summarise, summariseStart, type ProfileSummary, type StartSummary } from './profile.js'
import { STAGE_LABELS, timeStages, type StageTimes } from './stages.js'

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
/** Sizes the ratio and ETag figures are about: the brief's medium and large, and the ~2 MB one. */
const BIG: SizeName[] = ['medium', 'large', 'xlarge']
/** The real server's req/s over the I/O baseline's, per size (issue 12: small 0.6, medium 0.9, large and above 0.85). */
const TARGET_RATIOS: Record<SizeName, number> = { small: 0.6, medium: 0.9, large: 0.85, xlarge: 0.85 }
const TARGET_COLD_START_MS = 300
/** The real server's RSS under load at most this times the I/O baseline's, per size. */
const TARGET_RSS_RATIO = 1.3
/** time per request may grow at most like size^1.1 between consecutive sizes (10 % for noise) */
const TARGET_EXPONENT = 1.1
const HARD_STOP_MS = 6 * 60_000

type Variant = 'real' | 'io' | 'sync' | 'etag'
const SERVERS = ['real', 'io', 'sync'] as const
type ServerName = (typeof SERVERS)[number]

const env = serverEnv({ HOST: '127.0.0.1', LOG_LEVEL })
const HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${env.HOOK_TOKEN}` }

// ---- processes ----

const children = new Set<ChildProcess>()
const killAll = () => {
  for (const child of children) child.kill('SIGKILL')
}
process.on('exit', killAll)
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    killAll()
    process.exit(130)
  })
}
setTimeout(() => {
  console.error(`bench: still running after ${HARD_STOP_MS / 1000} s; stopping`)
  killAll()
  process.exit(1)
}, HARD_STOP_MS).unref()

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolvePort(port))
    })
  })
}

interface Running {
  name: string
  child: ChildProcess
  pid: number
  port: number
  stderr: () => string
}

function spawnNode(name: string, args: string[], extraEnv: Record<string, string>, port: number): Running {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env, ...extraEnv, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  child.once('exit', () => children.delete(child))
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)))
  child.stdout?.resume()
  return { name, child, pid: child.pid as number, port, stderr: () => stderr }
}

async function stop(server: Running): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return
  const exited = new Promise<void>((done) => server.child.once('exit', () => done()))
  server.child.kill('SIGTERM')
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 5000)
  await exited
  clearTimeout(timer)
}

interface Answer {
  status: number
  headers: Record<string, string>
  body: Buffer
}

function post(port: number, body: Buffer, headers: Record<string, string> = HEADERS): Promise<Answer> {
  return new Promise((resolveAnswer, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/sync', method: 'POST', agent: false, headers: { ...headers, 'content-length': String(body.length) } },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => resolveAnswer({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body: Buffer.concat(chunks) }))
        res.on('error', reject)
      },
    )
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end(body)
  })
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

/** Spawns the real server and polls /sync with `probe` until it answers 200; returns the time that took. */
async function startReal(probe: Buffer, nodeArgs: string[] = []): Promise<{ server: Running; firstOkMs: number }> {
  const port = await freePort()
  const t0 = performance.now()
  const server = spawnNode('real', [...REAL_NODE_ARGS, ...nodeArgs, 'dist/server.js'], {}, port)
  for (;;) {
    if (server.child.exitCode !== null) throw new Error(`the real server exited with ${server.child.exitCode}: ${server.stderr()}`)
    if (performance.now() - t0 > 15_000) throw new Error(`the real server did not answer 200 within 15 s: ${server.stderr()}`)
    const answer = await post(port, probe).catch(() => undefined)
    if (answer?.status === 200) return { server, firstOkMs: performance.now() - t0 }
    if (answer !== undefined) throw new Error(`the real server answered ${answer.status}: ${answer.body.toString().slice(0, 300)}`)
    await sleep(2)
  }
}

async function startBaseline(name: 'io' | 'sync', extraEnv: Record<string, string>): Promise<Running> {
  const port = await freePort()
  const server = spawnNode(name, [join(here, name === 'io' ? 'baseline-io.js' : 'baseline-sync.js')], { ...extraEnv, BENCH_ROOT: ROOT }, port)
  await new Promise<void>((ready, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} baseline not ready: ${server.stderr()}`)), 15_000)
    server.child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) {
        clearTimeout(timer)
        ready()
      }
    })
    server.child.once('exit', (code) => reject(new Error(`${name} baseline exited with ${code}: ${server.stderr()}`)))
  })
  return server
}

// ---- sampling a server: RSS and CPU from /proc ----

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100
  } catch {
    return 100
  }
})()

function rssMb(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) / 1024 : Number.NaN
  } catch {
    return Number.NaN
  }
}

function cpuSeconds(pid: number): number {
  try {
    // Fields after the command (in parentheses) start with the state, field 3; utime is field 14, stime 15.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK
  } catch {
    return Number.NaN
  }
}

/** Samples a process's RSS every 100 ms until stopped; returns the largest. */
function rssSampler(pid: number): { stop(): number } {
  let max = rssMb(pid)
  const timer = setInterval(() => {
    const now = rssMb(pid)
    if (now > max) max = now
  }, 100)
  return {
    stop() {
      clearInterval(timer)
      const now = rssMb(pid)
      return now > max ? now : max
    },
  }
}

interface Run extends LoadResult {
  /** the server's CPU seconds in the window */
  serverCpuSeconds: number
}

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

/** Rounds of one server and size, pooled. */
interface Summary {
  /** median over rounds, and the spread */
  rps: number
  rpsMin: number
  rpsMax: number
  /** over every request of every round */
  p50Ms: number
  p99Ms: number
  requests: number
  unexpected: number
  statuses: Record<string, number>
  firstError?: string
  /** server CPU per request (/proc), µs, and its CPU as a share of one core (median over rounds) */
  serverCpuUs: number
  serverCpu: number
  clientCpu: number
  sentPerRequest: number
  receivedPerRequest: number
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

function summarize(runs: Run[]): Summary {
  const all = Float64Array.from(runs.flatMap((run) => [...run.latencies])).sort()
  const requests = runs.reduce((n, run) => n + run.requests, 0)
  const statuses: Record<string, number> = {}
  for (const run of runs) for (const [code, n] of Object.entries(run.statuses)) statuses[code] = (statuses[code] ?? 0) + n
  const firstError = runs.find((run) => run.firstError !== undefined)?.firstError
  return {
    rps: median(runs.map((run) => run.rps)),
    rpsMin: Math.min(...runs.map((run) => run.rps)),
    rpsMax: Math.max(...runs.map((run) => run.rps)),
    p50Ms: percentile(all, 50),
    p99Ms: percentile(all, 99),
    requests,
    unexpected: runs.reduce((n, run) => n + run.unexpected, 0),
    statuses,
    ...(firstError === undefined ? {} : { firstError }),
    serverCpuUs: requests ? (runs.reduce((s, run) => s + run.serverCpuSeconds, 0) * 1e6) / requests : Number.NaN,
    serverCpu: median(runs.map((run) => run.serverCpuSeconds / run.seconds)),
    clientCpu: median(runs.map((run) => run.clientCpu)),
    sentPerRequest: runs[0]?.sentPerRequest ?? Number.NaN,
    receivedPerRequest: requests ? runs.reduce((s, run) => s + run.receivedBytes, 0) / requests : Number.NaN,
  }
}

/** A server's req/s as a share of another's, paired round by round (same moment of the machine): median, min, max. */
function pairedRatio(a: Run[], b: Run[]): { median: number; min: number; max: number } {
  const ratios = a.map((run, i) => run.rps / (b[i] as Run).rps)
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) }
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

// ---- formatting ----

const kib = (bytes: number) => bytes / 1024
const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a')
const pct = (share: number) => `${fmt(share * 100, 1)} %`
const sizeLabel = (bytes: number) => (bytes >= 1024 * 1024 ? `${fmt(bytes / 1024 / 1024, 2)} MiB` : `${fmt(kib(bytes), 1)} KiB`)

function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n')
}

function plain(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)))
  const line = (cells: string[]) => cells.map((cell, i) => (i < 2 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number))).join('  ')
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n')
}

function gitDescription(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT }).toString().trim() !== ''
    return `${commit}${dirty ? ' (src/ has uncommitted changes)' : ''}`
  } catch {
    return 'unknown'
  }
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
interface Recorded {
  size: SizeName
  requestBytes: number
  headers: Record<string, string>
  body: string
  phase: string
}
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

interface Target {
  target: string
  value: string
  met: boolean
  cause?: string
}
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
      `which alone would allow ${fmt((t0.decode + t0.jsonParse) / (t0.decode + t0.jsonParse + beyondUs(size)), 2)}; the rest is per-call cost of fastify and its hooks, which shows in the HTTP figures. ` +
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
const cpuModel = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model ?? 'unknown'
const md: string[] = []
md.push('# Benchmark: the hook server against the limit', '')
md.push(`Written by \`npm run bench\` (bench/run.ts) on ${new Date().toISOString()}; every figure below is from that run. Re-run to refresh.`, '')
md.push('## Machine and settings', '')
md.push(
  table(
    ['', ''],
    [
      ['CPU', `${cpuModel}, ${availableParallelism()} cores`],
      ['memory', `${fmt(totalmem() / 1024 ** 3, 1)} GiB`],
      ['OS', `Linux ${release()}`],
      ['Node', process.version],
      ['commit', gitDescription()],
      ['load average (1 min) at start / end', `${fmt(loadBefore[0] as number, 2)} / ${fmt(loadAfter[0] as number, 2)} (other work shares the ${availableParallelism()} cores; see the min–max spread)`],
      ['load', `closed loop, concurrency ${CONCURRENCY} (Metacontroller's default --workers), keep-alive; per size, ${ROUNDS} rounds in which every server runs once, in rotated order; each run: warm-up (${FIRST_WARMUP_MS} ms before a server's very first run, ${SIZE_WARMUP_MS} ms before a size's first round, ${WARMUP_MS} ms otherwise), then ${DURATION_MS} ms measured. Servers stay up from the smallest size to the largest.`],
      ['figures', 'req/s: median of the rounds (min–max beside it); latencies: percentiles over every request of every round; ratios: median of the round-by-round ratios'],
      ['load generator', 'bench/load.ts: node:http keep-alive Agent, in the parent process; every server is its own child process'],
      ['real server', `\`node ${[...REAL_NODE_ARGS, ''].join(' ')}dist/server.js\`; LOG_LEVEL=${LOG_LEVEL} (no per-call line: "hook answered" is info), NODE_ENV=production, HOOK_TOKEN set (every call carries the bearer token), MAX_EVENT_LOOP_DELAY_MS=0 (no shedding on loop delay: throughput, not self-defence, is measured; test/load/ measures shedding), defaults otherwise (BODY_LIMIT 8 MiB, MAX_IN_FLIGHT 64)`],
      ['I/O baseline', "bench/baseline-io.ts: node:http; read the body, JSON.parse, answer the real server's recorded bytes (with its content-type and ETag): the limit"],
      ['sync baseline', 'bench/baseline-sync.ts: node:http; read the body, JSON.parse, `sync` from dist/challenge/hooks.js, JSON.stringify'],
      ['whole run', `${fmt(totalSeconds)} s, of which ${fmt(generateSeconds, 1)} s generating requests`],
    ],
  ),
  '',
)
md.push('## Requests', '')
md.push(
  "Generated by bench/generate.ts: the project's hooks driven by the Metacontroller simulator (test/support/simulator); objects as an API server stores them (managedFields, kubectl's last-applied annotation, status written by the controllers). The brief's \"large\" (~50 related Challenges) comes out at ~0.4 MB with realistic objects, so a fourth, xlarge, request (~1.8 MB) covers the multi-MB case. Recorded to bench/out/requests/.",
  '',
)
md.push(
  table(
    ['size', 'body', 'what', 'the real server answers', 'heap of the parsed body', 'sync baseline answers the same bytes'],
    generated.map((g) => {
      const r = recordedOf(g.name)
      return [g.name, sizeLabel(g.body.length), g.what, `200 ${r.phase}, ${sizeLabel(Buffer.byteLength(r.body))}`, `${fmt((heapMb.get(g.name) as number) * 1024)} KiB`, sameAnswer.get(g.name) ? 'yes' : "no: the answer carries the call's own time"]
    }),
  ),
  '',
)
md.push('## The stages of a call, in process', '')
md.push(
  "Each stage timed alone on the same requests, without HTTP (bench/stages.ts): fastify's validator compiler with the app's ajv options, `sync` from dist/, the route's stringify and ETag. µs per call, the fastest of 3 interleaved timings; validation and sync go round separately parsed copies.",
  '',
)
md.push(
  table(
    ['stage', ...sizes],
    [
      ...(Object.keys(STAGE_LABELS) as Array<keyof StageTimes>).map((key) => [STAGE_LABELS[key], ...sizes.map((size) => fmt(stage(size)[key]))]),
      ['**beyond the I/O baseline** (validation, sync, stringify, ETag)', ...sizes.map((size) => `**${fmt(beyondUs(size))}**`)],
      ['as a share of decode + JSON.parse', ...sizes.map((size) => pct(beyondUs(size) / (stage(size).decode + stage(size).jsonParse)))],
    ],
  ),
  '',
)
md.push('## Throughput and latency', '')
md.push(
  `µs/req = 1e6 ÷ req/s: the wall time per request of a saturated server (concurrency ${CONCURRENCY}, one event loop). CPU µs/req: the server's CPU per request from /proc/<pid>/stat (V8's helper threads included). non-200: answers other than 200 and transport errors.`,
  '',
)
md.push(table(header, rows), '')
md.push(
  "real ÷ this: the real server's req/s over this server's, median of the round-by-round ratios (min–max of the rounds). The same ratio from CPU per request instead (this server's CPU µs/req ÷ the real server's), which other work on the machine disturbs less: " +
    sizes.map((size) => `${size} I/O ${fmt(cpuRatio(size, 'io'), 2)}, sync ${fmt(cpuRatio(size, 'sync'), 2)}`).join('; ') +
    '.',
  '',
)
md.push(`Non-200 answers and errors over all ${ROUNDS * SERVERS.length * sizes.length} runs: **${nonOk}**.`, '')
md.push(
  `The load generator's own CPU (share of one core, median of rounds): ${sizes.map((size) => `${size} ${SERVERS.map((s) => `${s} ${pct(summary(size, s).clientCpu)}`).join(' / ')}`).join('; ')}. The servers' CPU (same): ${sizes.map((size) => `${size} ${SERVERS.map((s) => `${s} ${pct(summary(size, s).serverCpu)}`).join(' / ')}`).join('; ')}.`,
  '',
)
md.push('### Time per request against size', '')
md.push('k in time ∝ size^k between consecutive sizes (k ≤ 1: time grows no faster than size; from small to medium the fixed cost per call dominates).', '')
const allSteps: Array<[SizeName, SizeName]> = [['small', 'medium'], ...steps]
md.push(
  table(
    ['step', 'size ×', ...SERVERS.map((s) => `${s}: time ×`), ...SERVERS.map((s) => `${s}: k`)],
    allSteps.map(([a, b]) => [
      `${a} → ${b}`,
      fmt(bytes(b) / bytes(a), 2),
      ...SERVERS.map((s) => fmt(usPerRequest(b, s) / usPerRequest(a, s), 2)),
      ...SERVERS.map((s) => fmt(exponent(a, b, s), 2)),
    ]),
  ),
  '',
)
md.push('## Cold start', '')
md.push(`Spawn of \`node dist/server.js\` to the first 200 on /sync (small request, polled every 2 ms), ${COLD_STARTS} times: ${coldStarts.map((ms) => `${fmt(ms)} ms`).join(', ')}. **Median ${fmt(coldMedian)} ms.**`, '')
if (start) {
  md.push(`Where a cold start goes (CPU profile, ${start.file}; ${fmt(start.summary.spanMs)} ms with the profiler on, which slows it):`, '')
  md.push(table(['phase', 'ms'], start.summary.phases.map((p) => [p.phase, fmt(p.ms)])), '')
}
md.push('## Memory', '')
md.push(
  `RSS (VmRSS from /proc/<pid>/status every 100 ms), MB: right after start, then the largest while serving each size (sizes in this order, so also "up to this size").`,
  '',
)
md.push(
  table(
    ['', ...SERVERS],
    [
      ['after start', ...SERVERS.map((s) => fmt(rssIdle[s], 1))],
      ...sizes.map((size) => [size, ...SERVERS.map((s) => (s === 'real' ? `**${fmt(realRss(size), 1)}**` : fmt((rssMax.get(size) as Record<ServerName, number>)[s], 1)))]),
    ],
  ),
  '',
)
md.push('## ETag and 304', '')
md.push(
  'The real server answers with a strong ETag (SHA-256 of the answer); the same request with `If-None-Match: <that ETag>` gets 304 and no body. The 304 runs were interleaved with the 200 runs of the same server. Bytes are wire bytes per request (status line, headers, body).',
  '',
)
md.push(table(etagHeader, etagRows), '')
md.push(
  `Non-304 answers to a matching If-None-Match: **${nonNotModified}**. What the ETag saves: the answer's body on the wire (${BIG.map((size) => `${size} ${fmt(summary(size, 'real').receivedPerRequest - summary(size, 'etag').receivedPerRequest)} B`).join(', ')} per call) and Metacontroller's decoding of it. What it does not save: the request (${BIG.map((size) => sizeLabel(summary(size, 'etag').sentPerRequest)).join(', ')}) still travels and is still parsed, validated and synced, because the ETag is computed from the answer; the server's work per call is the same, so its req/s does not move beyond noise.`,
  '',
)
md.push('## Targets', '')
md.push(table(['target', 'value', '', 'cause'], targets.map((t) => [t.target, t.value, t.met ? 'met' : '**missed**', t.cause ?? ''])), '')
if (profiles.length > 0) {
  md.push("### Where the real server's time goes", '')
  md.push(
    `CPU profiles of the real server under the same load (\`node --cpu-prof\`, 3.5 s, ${profiles.map((p) => p.file).join(', ')}): busy time only, each sample given to the innermost stage on its stack (bench/profile.ts). "shared": the I/O baseline does it too. µs/req is under the profiler, which slows everything.`,
    '',
  )
  const stageNames = [...new Set(profiles.flatMap((p) => p.summary.stages.map((s) => s.stage)))]
  const sharedOf = (stage: string) => profiles.some((p) => p.summary.stages.some((s) => s.stage === stage && s.shared))
  md.push(
    table(
      ['stage', 'shared', ...profiles.flatMap((p) => [`${p.size} share`, `${p.size} µs/req`])],
      stageNames.map((stage) => [
        stage,
        sharedOf(stage) ? 'yes' : '',
        ...profiles.flatMap((p) => {
          const share = p.summary.stages.find((s) => s.stage === stage)?.share ?? 0
          return [pct(share), fmt((share * p.summary.busyMs * 1000) / p.requests)]
        }),
      ]),
    ),
    '',
  )
  for (const p of profiles) md.push(`Hottest functions by self time, ${p.size}: ${p.summary.functions.slice(0, 8).map((f) => `\`${f.name}\` ${pct(f.share)}`).join(', ')}.`, '')
}
md.push('<!-- findings: text below this line is kept when the file is rewritten -->', '')
const marker = '<!-- findings: text below this line is kept when the file is rewritten -->'
const previous = (() => {
  try {
    return readFileSync(join(ROOT, 'bench/RESULTS.md'), 'utf8')
  } catch {
    return ''
  }
})()
const findings = previous.includes(marker) ? previous.slice(previous.indexOf(marker) + marker.length).trimStart() : ''
writeFileSync(join(ROOT, 'bench/RESULTS.md'), `${md.join('\n')}${findings ? `\n${findings}` : ''}`)
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
