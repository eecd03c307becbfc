// The benchmark's reporting half (bench/server/report.ts, bench/server/render.ts) on a synthetic run: RESULTS.md's tables and
// the console's targets are rendered from bench/out/results.json alone, the hand-written findings are kept, and the
// renderer's command line. No benchmark runs here.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { consoleReport, FINDINGS_MARKER, resultsMarkdown, withFindings } from '../../bench/server/report.js'
import { readResults, type BenchResults, type RoundRun } from '../../bench/server/results.js'
import type { Summary } from '../../bench/server/figures.js'

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

type Size = 'small' | 'medium' | 'large' | 'xlarge'
const SIZES: Size[] = ['small', 'medium', 'large', 'xlarge']
const BYTES: Record<Size, number> = { small: 10_240, medium: 40_960, large: 204_800, xlarge: 819_200 }
/** req/s and CPU µs per request of each server, per size: small and xlarge miss their ratio, medium and large meet it. */
const RPS: Record<Size, { real: number; io: number; sync: number; etag: number }> = {
  small: { real: 350, io: 1000, sync: 600, etag: 0 },
  medium: { real: 950, io: 1000, sync: 960, etag: 990 },
  large: { real: 900, io: 1000, sync: 920, etag: 905 },
  xlarge: { real: 200, io: 250, sync: 240, etag: 201 },
}
const CPU_US: Record<Size, { real: number; io: number; sync: number; etag: number }> = {
  small: { real: 100, io: 50, sync: 60, etag: 0 },
  medium: { real: 100, io: 95, sync: 97, etag: 99 },
  large: { real: 100, io: 90, sync: 95, etag: 99 },
  xlarge: { real: 100, io: 80, sync: 90, etag: 99 },
}
const RSS: Record<Size, { real: number; io: number; sync: number }> = {
  small: { real: 100, io: 90, sync: 92 },
  medium: { real: 100, io: 90, sync: 92 },
  large: { real: 110, io: 90, sync: 95 },
  xlarge: { real: 150, io: 100, sync: 110 },
}

function round(rps: number): RoundRun {
  return {
    requests: rps,
    seconds: 1,
    rps,
    p50Ms: 5,
    p99Ms: 9,
    meanMs: 5,
    maxMs: 10,
    unexpected: 0,
    statuses: { 200: rps },
    errors: 0,
    sentPerRequest: 100,
    receivedPerRequest: 6000,
    clientCpu: 0.2,
    receivedBytes: rps * 6000,
    serverCpuSeconds: 0.9,
  }
}

function summary(rps: number, cpuUs: number, received: number): Summary {
  return {
    rps,
    rpsMin: rps,
    rpsMax: rps,
    p50Ms: 5,
    p99Ms: 9,
    requests: 2 * rps,
    unexpected: 0,
    statuses: { 200: 2 * rps },
    serverCpuUs: cpuUs,
    serverCpu: 0.9,
    clientCpu: 0.2,
    sentPerRequest: 100,
    receivedPerRequest: received,
  }
}

function syntheticRun(): BenchResults {
  const variants = (size: Size) =>
    size === 'small' ? (['real', 'io', 'sync'] as const) : (['real', 'io', 'sync', 'etag'] as const)
  return {
    version: 1,
    date: '2026-01-02T03:04:05.000Z',
    machine: { cpu: 'Test CPU', cores: 2, memoryGiB: 8, os: 'Linux 6.0-test', node: 'v24.0.0-test', commit: 'abc1234' },
    settings: {
      concurrency: 20,
      rounds: 2,
      durationMs: 1000,
      firstWarmupMs: 2000,
      sizeWarmupMs: 750,
      warmupMs: 250,
      realNodeArgs: [],
      logLevel: 'warn',
      coldStarts: 3,
    },
    loadBefore: [0.5, 0.4, 0.3],
    loadAfter: [1.25, 0.5, 0.3],
    totalSeconds: 120,
    generateSeconds: 10,
    requests: SIZES.map((size) => ({
      size,
      bytes: BYTES[size],
      what: `the ${size} request`,
      answerPhase: 'Running/Ready',
      answerBytes: 6000,
      heapMb: size === 'xlarge' ? 1.5 : 0.1,
      sameAnswer: size !== 'small',
    })),
    stages: Object.fromEntries(
      SIZES.map((size) => [size, { decode: 1000, jsonParse: 2000, validate: 100, sync: 200, stringify: 50, etag: 50 }]),
    ) as BenchResults['stages'],
    coldStarts: [250, 270, 260],
    rssIdle: { real: 60, io: 40, sync: 45 },
    rssMax: RSS,
    runs: Object.fromEntries(
      SIZES.map((size) => [
        size,
        Object.fromEntries(variants(size).map((v) => [v, [round(RPS[size][v]), round(RPS[size][v])]])),
      ]),
    ) as BenchResults['runs'],
    summaries: Object.fromEntries(
      SIZES.map((size) => [
        size,
        Object.fromEntries(
          variants(size).map((v) => [v, summary(RPS[size][v], CPU_US[size][v], v === 'etag' ? 200 : 6000)]),
        ),
      ]),
    ) as BenchResults['summaries'],
    profiles: [],
  }
}

/** The rows of the first table after `heading`, as cells. */
function tableAfter(markdown: string, heading: string): string[][] {
  const lines = markdown.split('\n')
  const start = lines.indexOf(heading)
  const rows: string[][] = []
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('|')) rows.push(line.slice(2, -2).split(' | '))
    else if (rows.length > 0) break
  }
  return rows.slice(2)
}

t.test("RESULTS.md comes from the results alone: the run's date, machine and figures", async (t) => {
  const markdown = resultsMarkdown(syntheticRun())
  t.strictSame(markdown.split('\n').slice(0, 3), [
    '# Benchmark: the hook server against the limit',
    '',
    'Measured by `npm run bench` (bench/server/measure.ts) on 2026-01-02T03:04:05.000Z and rendered from its bench/out/results.json (bench/server/render.ts); every figure below is from that run. Re-run to refresh.',
  ])
  const machine = Object.fromEntries(
    tableAfter(markdown, '## Machine and settings').map(([name, value]) => [name, value]),
  )
  t.strictSame(
    [
      machine.CPU,
      machine.memory,
      machine.OS,
      machine.Node,
      machine.commit,
      machine['load average (1 min) at start / end'],
    ],
    [
      'Test CPU, 2 cores',
      '8.0 GiB',
      'Linux 6.0-test',
      'v24.0.0-test',
      'abc1234',
      '0.50 / 1.25 (other work shares the 2 cores; see the min–max spread)',
    ],
  )
  t.strictSame(
    tableAfter(markdown, '## Requests').map((row) => row.slice(0, 5)),
    [
      ['small', '10.0 KiB', 'the small request', '200 Running/Ready, 5.9 KiB', '102 KiB'],
      ['medium', '40.0 KiB', 'the medium request', '200 Running/Ready, 5.9 KiB', '102 KiB'],
      ['large', '200.0 KiB', 'the large request', '200 Running/Ready, 5.9 KiB', '102 KiB'],
      ['xlarge', '800.0 KiB', 'the xlarge request', '200 Running/Ready, 5.9 KiB', '1,536 KiB'],
    ],
  )
  t.strictSame(
    markdown.split('\n').find((line) => line.startsWith('Spawn of')),
    'Spawn of `node dist/server.js` to the first 200 on /sync (small request, polled every 2 ms), 3 times: 250 ms, 270 ms, 260 ms. **Median 260 ms.**',
  )
  t.strictSame(
    tableAfter(markdown, '## Targets').map(([target, value, met]) => [target, value, met]),
    [
      ["≥ 0.4 of the I/O baseline's req/s, small", '0.350 (rounds 0.35–0.35); by CPU per request 0.500', '**missed**'],
      ["≥ 0.8 of the I/O baseline's req/s, medium", '0.950 (rounds 0.95–0.95); by CPU per request 0.950', 'met'],
      ["≥ 0.8 of the I/O baseline's req/s, large", '0.900 (rounds 0.90–0.90); by CPU per request 0.900', 'met'],
      [
        "≥ 0.85 of the I/O baseline's req/s, xlarge",
        '0.800 (rounds 0.80–0.80); by CPU per request 0.800',
        '**missed**',
      ],
      ['cold start ≤ 300 ms (median of 3)', '260 ms', 'met'],
      ["RSS under load ≤ 1.3× the I/O baseline's, small (max)", '100.0 MB against 90.0 MB: 1.11×', 'met'],
      ["RSS under load ≤ 1.3× the I/O baseline's, medium (max)", '100.0 MB against 90.0 MB: 1.11×', 'met'],
      ["RSS under load ≤ 1.3× the I/O baseline's, large (max)", '110.0 MB against 90.0 MB: 1.22×', 'met'],
      ["RSS under load ≤ 1.3× the I/O baseline's, xlarge (max)", '150.0 MB against 100.0 MB: 1.50×', '**missed**'],
      ['time per request grows no faster than size, medium → large (k ≤ 1.1 in time ∝ size^k)', '0.03', 'met'],
      ['time per request grows no faster than size, large → xlarge (k ≤ 1.1 in time ∝ size^k)', '1.08', 'met'],
    ],
  )
  const causes = Object.fromEntries(tableAfter(markdown, '## Targets').map(([target, , , cause]) => [target, cause]))
  t.strictSame(
    causes["≥ 0.85 of the I/O baseline's req/s, xlarge"],
    "In process, per call: the limit's own work (UTF-8 decode + JSON.parse) 3,000 µs; beyond it 400 µs (validation 100, sync 200, stringify + ETag 100), which alone would allow 0.88; " +
      'inside the server, under load, the same work costs more per call than in this loop (the HTTP figures and the profile say how much). ' +
      "The hook's own work: the sync baseline (the same JSON.parse, sync and JSON.stringify, no framework) runs at 0.96 of the I/O baseline's req/s (0.89 by CPU per request). " +
      'The framework and checks around it: the real server runs at 0.83 of the sync baseline.',
  )
  t.strictSame(
    causes["RSS under load ≤ 1.3× the I/O baseline's, xlarge (max)"],
    'the server holds 60.0 MB right after its start (the I/O baseline 40.0 MB); under the same load the I/O baseline (bare node:http + JSON.parse) grows to 100.0 MB: ' +
      'one parsed xlarge request is 1,536 KiB of V8 heap (JSON.parse of the body, after a full GC) plus its 0.8 MB body string, 20 in flight, and V8 lets garbage grow between collections.',
  )
  t.strictSame(causes['cold start ≤ 300 ms (median of 3)'], '', 'a target met has no cause')
  t.ok(markdown.endsWith(`${FINDINGS_MARKER}\n`), 'the findings marker closes the rendered part')
})

t.test('the console gets both tables and every target', async (t) => {
  const lines = consoleReport(syntheticRun()).split('\n')
  t.strictSame(
    lines.filter((line) => /^(met|MISSED)/.test(line)).map((line) => line.split(':')[0]),
    [
      "MISSED  ≥ 0.4 of the I/O baseline's req/s, small",
      "met     ≥ 0.8 of the I/O baseline's req/s, medium",
      "met     ≥ 0.8 of the I/O baseline's req/s, large",
      "MISSED  ≥ 0.85 of the I/O baseline's req/s, xlarge",
      'met     cold start ≤ 300 ms (median of 3)',
      "met     RSS under load ≤ 1.3× the I/O baseline's, small (max)",
      "met     RSS under load ≤ 1.3× the I/O baseline's, medium (max)",
      "met     RSS under load ≤ 1.3× the I/O baseline's, large (max)",
      "MISSED  RSS under load ≤ 1.3× the I/O baseline's, xlarge (max)",
      'met     time per request grows no faster than size, medium → large (k ≤ 1.1 in time ∝ size^k)',
      'met     time per request grows no faster than size, large → xlarge (k ≤ 1.1 in time ∝ size^k)',
    ],
  )
  t.strictSame(
    lines.find((line) => line.startsWith('cold start median')),
    'cold start median 260 ms; real server RSS max small 100.0 MB, medium 100.0 MB, large 110.0 MB, xlarge 150.0 MB',
  )
})

t.test('a rewrite keeps the hand-written findings below the marker', async (t) => {
  t.strictSame(
    withFindings('figures\n', `old figures\n${FINDINGS_MARKER}\n\n## Findings\nkept\n`),
    'figures\n\n## Findings\nkept\n',
  )
  t.strictSame(withFindings('figures\n', 'a file without the marker\n'), 'figures\n')
})

t.test(
  'render: reads results.json, writes RESULTS.md; a file of another version or a bad flag is refused',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-render-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const from = join(dir, 'results.json')
    const to = join(dir, 'RESULTS.md')
    writeFileSync(from, JSON.stringify(syntheticRun()))
    writeFileSync(to, `stale figures\n${FINDINGS_MARKER}\nkept findings\n`)
    t.strictSame(readResults(from), syntheticRun())
    const render = (...args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', join(repoRoot, 'bench/server/render.ts'), ...args], {
        cwd: repoRoot,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '' },
      })
    const rendered = render('--from', from, '--to', to)
    t.strictSame(rendered.status, 0, rendered.stderr)
    t.strictSame(readFileSync(to, 'utf8'), `${resultsMarkdown(syntheticRun())}\nkept findings\n`)
    const bad = render('--form', from)
    t.strictSame(bad.status, 2)
    t.strictSame(bad.stderr.split('\n').slice(0, 2), [
      "bench render: Unknown option '--form'",
      'usage: render.js [--from <results.json>] [--to <RESULTS.md>]',
    ])
    writeFileSync(from, JSON.stringify({ ...syntheticRun(), version: 2 }))
    t.throws(() => readResults(from), {
      message: `${from}: results of version 2, this renderer reads version 1: run \`npm run bench\` again`,
    })
  },
)
