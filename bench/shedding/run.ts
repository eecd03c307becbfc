/**
 * Large bodies under load: what the hook serves of 20 concurrent ~2 MB /sync calls (an owner whose related
 * Challenges carry large managedFields) while liveness and readiness are probed, under each way of shedding the
 * server offers, beside the I/O limit (bare node:http that reads and JSON.parses the same bodies) in the same run.
 *
 *   npm run bench:shedding [-- --seconds=20 --connections=20 --backoff-ms=0]
 *
 * --backoff-ms: how long a client waits after a 429 before calling again (0: at once, the worst case; Metacontroller
 * requeues a failed parent with a per-parent exponential backoff that starts at 5 ms). Writes
 * bench/out/shedding.json and prints a table; the findings are written by hand in bench/RESULTS.md.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { parseArgs } from 'node:util'
import { spawn } from 'node:child_process'
import { generate } from '../server/generate.js'
import { probe, repoRoot, send, sleep, startServer, TOKEN, type Teardown } from '../../test/support/load/harness.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    connections: { type: 'string', default: '20' },
    'backoff-ms': { type: 'string', default: '0' },
  },
})
const seconds = Number(values.seconds)
const connections = Number(values.connections)
const backoffMs = Number(values['backoff-ms'])

/** The ways to shed, as the server's settings: the shipped one first. */
const VARIANTS: { name: string; env: Record<string, string> }[] = [
  { name: 'event-loop delay 100 ms, in flight 64 (shipped)', env: {} },
  { name: 'event-loop delay 250 ms, in flight 64', env: { MAX_EVENT_LOOP_DELAY_MS: '250' } },
  { name: 'event-loop delay 500 ms, in flight 64', env: { MAX_EVENT_LOOP_DELAY_MS: '500' } },
  { name: 'no delay check, in flight 1', env: { MAX_EVENT_LOOP_DELAY_MS: '0', MAX_IN_FLIGHT: '1' } },
  { name: 'no delay check, in flight 2', env: { MAX_EVENT_LOOP_DELAY_MS: '0', MAX_IN_FLIGHT: '2' } },
  { name: 'no delay check, in flight 4', env: { MAX_EVENT_LOOP_DELAY_MS: '0', MAX_IN_FLIGHT: '4' } },
  { name: 'no delay check, in flight 8', env: { MAX_EVENT_LOOP_DELAY_MS: '0', MAX_IN_FLIGHT: '8' } },
]

interface Flood {
  statuses: Record<string, number>
  answers: number
  p50: number
  p99: number
  errors: number
}

interface Row {
  name: string
  servedPerSecond: number
  shedPerSecond: number
  statuses: Record<string, number>
  clientP50Ms: number
  clientP99Ms: number
  probeP99Ms: number
  probeMaxMs: number
  probesFailed: number
  peakRssMiB?: number
}

const cleanups: (() => unknown)[] = []
const scope: Teardown = { teardown: (fn) => cleanups.push(fn) }
async function cleanUp(): Promise<void> {
  for (const fn of cleanups.splice(0).reverse()) await fn()
}

function flood(port: number, bodyFile: string): Promise<Flood> {
  const child = spawn(process.execPath, [...process.execArgv, join(repoRoot, 'test/load/flood.ts')], {
    env: {
      PATH: process.env.PATH ?? '',
      FLOOD_PORT: String(port),
      FLOOD_TOKEN: TOKEN,
      FLOOD_BODY: bodyFile,
      FLOOD_CONNECTIONS: String(connections),
      FLOOD_MS: String(seconds * 1000),
      FLOOD_BACKOFF_MS: String(backoffMs),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  return new Promise((done, fail) =>
    child.once('exit', (code) =>
      code === 0 ? done(JSON.parse(output) as Flood) : fail(new Error(`the flood exited ${code}: ${output}`)),
    ),
  )
}

/** The I/O limit, answering the real server's recorded answer to the body. */
async function startLimit(bodyLength: number, answer: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-shedding-'))
  const responses = join(dir, 'responses.json')
  writeFileSync(
    responses,
    JSON.stringify([{ requestBytes: bodyLength, headers: { 'content-type': 'application/json' }, body: answer }]),
  )
  const port = 20000 + Math.floor(Math.random() * 20000)
  const child = spawn(process.execPath, [...process.execArgv, join(repoRoot, 'bench/server/baseline-io.ts')], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port), BENCH_RESPONSES: responses },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  scope.teardown(() => {
    child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })
  await new Promise<void>((done) => child.stdout.once('data', () => done()))
  return port
}

async function measure(
  name: string,
  port: number,
  opsPort: number | undefined,
  bodyFile: string,
  peakRssMiB?: () => number,
): Promise<Row> {
  const health = opsPort === undefined ? undefined : probe(scope, opsPort, '/healthz', 20)
  const result = await flood(port, bodyFile)
  const probes = await health?.stop()
  const served = result.statuses['200'] ?? 0
  const shed = result.statuses['429'] ?? 0
  return {
    name,
    servedPerSecond: served / seconds,
    shedPerSecond: shed / seconds,
    statuses: result.statuses,
    clientP50Ms: result.p50,
    clientP99Ms: result.p99,
    probeP99Ms: probes?.p99 ?? Number.NaN,
    probeMaxMs: probes?.max ?? Number.NaN,
    probesFailed: probes?.failed ?? 0,
    ...(peakRssMiB ? { peakRssMiB: peakRssMiB() } : {}),
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-bodies-'))
  scope.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const xlarge = (await generate(repoRoot)).find((each) => each.name === 'xlarge')
  if (xlarge === undefined) throw new Error('no xlarge request was generated')
  const bodyFile = join(dir, 'xlarge.json')
  writeFileSync(bodyFile, xlarge.body)
  const bodyMiB = xlarge.body.length / 1024 / 1024
  process.stdout.write(
    `body: ${bodyMiB.toFixed(2)} MiB (${xlarge.what}); ${connections} connections for ${seconds} s, backoff after 429: ${backoffMs} ms\n`,
  )

  const rows: Row[] = []
  for (const variant of VARIANTS) {
    const server = await startServer(scope, variant.env)
    const first = await send(server.port, 'POST', '/sync', {
      body: xlarge.body,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      timeoutMs: 10_000,
    })
    if (first.statusCode !== 200)
      throw new Error(`${variant.name}: the first call got ${first.statusCode}: ${first.body.slice(0, 300)}`)
    if (rows.length === 0) {
      const limitPort = await startLimit(xlarge.body.length, first.body)
      await sleep(300)
      rows.push(await measure('I/O limit (node:http + JSON.parse)', limitPort, undefined, bodyFile))
    }
    await sleep(500)
    rows.push(await measure(variant.name, server.port, server.opsPort, bodyFile, () => server.peakRssMiB()))
    server.child.kill('SIGKILL')
    await server.exited
    process.stdout.write(`${JSON.stringify(rows.at(-1))}\n`)
  }
  await cleanUp()

  const limit = rows[0] as Row
  const table = [
    '| shedding | served/s | of the limit | shed/s | client p50 / p99 | /healthz p99 / max | probes failed | peak RSS |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (row) =>
        `| ${row.name} | ${row.servedPerSecond.toFixed(1)} | ${(row.servedPerSecond / limit.servedPerSecond).toFixed(2)} | ${row.shedPerSecond.toFixed(1)} | ` +
        `${row.clientP50Ms.toFixed(0)} / ${row.clientP99Ms.toFixed(0)} ms | ${Number.isNaN(row.probeP99Ms) ? '-' : `${row.probeP99Ms.toFixed(0)} / ${row.probeMaxMs.toFixed(0)} ms`} | ` +
        `${row.probesFailed} | ${row.peakRssMiB === undefined ? '-' : `${row.peakRssMiB.toFixed(0)} MiB`} |`,
    ),
  ].join('\n')
  process.stdout.write(`\n${table}\n`)
  const out = join(repoRoot, 'bench/out/shedding.json')
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(
    out,
    JSON.stringify(
      { at: new Date().toISOString(), bodyBytes: xlarge.body.length, connections, seconds, backoffMs, rows, table },
      null,
      2,
    ),
  )
}

main().catch(async (error: unknown) => {
  await cleanUp()
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
