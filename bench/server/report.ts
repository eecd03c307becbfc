/**
 * bench/RESULTS.md's figures and the console's tables, rendered from one run's results (bench/out/results.json)
 * alone: no measuring here, and nothing read from the machine the report is rendered on.
 */
import { fmt, kib, pct, plain, sizeLabel, table } from './figures.js'
import type { SizeName } from './generate.js'
import { figuresOf, STEPS, targetsOf, type Figures, type Target } from './analysis.js'
import { BIG, SERVERS, type BenchResults } from './results.js'
import { STAGE_LABELS, type StageTimes } from './stages.js'

/** Where hand-written findings start in RESULTS.md: a rewrite keeps everything after it. */
export const FINDINGS_MARKER = '<!-- findings: text below this line is kept when the file is rewritten -->'

/** RESULTS.md as rewritten: the rendered figures, then whatever followed the marker in the file before. */
export function withFindings(rendered: string, previous: string): string {
  const findings = previous.includes(FINDINGS_MARKER)
    ? previous.slice(previous.indexOf(FINDINGS_MARKER) + FINDINGS_MARKER.length).trimStart()
    : ''
  return `${rendered}${findings ? `\n${findings}` : ''}`
}

/** The throughput table, as printed on the console and in RESULTS.md. */
function throughputTable(f: Figures): { header: string[]; rows: string[][] } {
  const header = [
    'size',
    'server',
    'req/s',
    'min–max',
    'p50 ms',
    'p99 ms',
    'non-200',
    'CPU µs/req',
    'µs/req',
    'µs/KiB',
    'real ÷ this',
  ]
  const rows: string[][] = []
  for (const size of f.sizes) {
    for (const server of SERVERS) {
      const s = f.summary(size, server)
      rows.push([
        `${size} ${sizeLabel(f.bytes(size))}`,
        server,
        fmt(s.rps),
        `${fmt(s.rpsMin)}–${fmt(s.rpsMax)}`,
        fmt(s.p50Ms, 2),
        fmt(s.p99Ms, 2),
        String(s.unexpected),
        fmt(s.serverCpuUs),
        fmt(f.usPerRequest(size, server)),
        fmt(f.usPerRequest(size, server) / kib(f.bytes(size)), 2),
        server === 'real' ? '' : f.ratioText(size, server),
      ])
    }
  }
  return { header, rows }
}

function etagTable(f: Figures): { header: string[]; rows: string[][] } {
  const header = [
    'size',
    'req/s 200',
    'req/s 304',
    '304 ÷ 200',
    'received B/req (200)',
    'received B/req (304)',
    'saved B/req',
    'sent B/req',
    'non-304',
  ]
  const rows = BIG.map((size) => {
    const full = f.summary(size, 'real')
    const cached = f.summary(size, 'etag')
    return [
      size,
      fmt(full.rps),
      fmt(cached.rps),
      fmt(cached.rps / full.rps, 2),
      fmt(full.receivedPerRequest),
      fmt(cached.receivedPerRequest),
      fmt(full.receivedPerRequest - cached.receivedPerRequest),
      fmt(cached.sentPerRequest),
      String(cached.unexpected),
    ]
  })
  return { header, rows }
}

/** What the console shows at the end of a run: both tables, cold start and memory, every target. */
export function consoleReport(results: BenchResults): string {
  const f = figuresOf(results)
  const throughput = throughputTable(f)
  const etag = etagTable(f)
  return [
    plain(throughput.header, throughput.rows),
    '',
    plain(etag.header, etag.rows),
    '',
    `cold start median ${fmt(f.coldMedian)} ms; real server RSS max ${f.sizes.map((s) => `${s} ${fmt(f.realRss(s), 1)} MB`).join(', ')}`,
    ...targetsOf(results, f).map((t: Target) => `${t.met ? 'met   ' : 'MISSED'}  ${t.target}: ${t.value}`),
  ].join('\n')
}

/** RESULTS.md up to the findings marker (the marker included). */
export function resultsMarkdown(results: BenchResults): string {
  const f = figuresOf(results)
  const {
    sizes,
    stage,
    beyondUs,
    cpuRatio,
    nonOk,
    summary,
    bytes,
    usPerRequest,
    exponent,
    coldMedian,
    realRss,
    nonNotModified,
  } = f
  const {
    machine,
    loadBefore,
    loadAfter,
    totalSeconds,
    generateSeconds,
    coldStarts,
    start,
    rssIdle,
    rssMax,
    profiles,
  } = results
  const {
    concurrency: CONCURRENCY,
    rounds: ROUNDS,
    durationMs: DURATION_MS,
    firstWarmupMs: FIRST_WARMUP_MS,
    sizeWarmupMs: SIZE_WARMUP_MS,
    warmupMs: WARMUP_MS,
  } = results.settings
  const { realNodeArgs: REAL_NODE_ARGS, logLevel: LOG_LEVEL, coldStarts: COLD_STARTS } = results.settings
  const { header, rows } = throughputTable(f)
  const etag = etagTable(f)
  const targets = targetsOf(results, f)
  const md: string[] = []
  md.push('# Benchmark: the hook server against the limit', '')
  md.push(
    `Measured by \`npm run bench\` (bench/server/measure.ts) on ${results.date} and rendered from its bench/out/results.json (bench/server/render.ts); every figure below is from that run. Re-run to refresh.`,
    '',
  )
  md.push('## Machine and settings', '')
  md.push(
    table(
      ['', ''],
      [
        ['CPU', `${machine.cpu}, ${machine.cores} cores`],
        ['memory', `${fmt(machine.memoryGiB, 1)} GiB`],
        ['OS', machine.os],
        ['Node', machine.node],
        ['commit', machine.commit],
        [
          'load average (1 min) at start / end',
          `${fmt(loadBefore[0] as number, 2)} / ${fmt(loadAfter[0] as number, 2)} (other work shares the ${machine.cores} cores; see the min–max spread)`,
        ],
        [
          'load',
          `closed loop, concurrency ${CONCURRENCY} (Metacontroller's default --workers), keep-alive; per size, ${ROUNDS} rounds in which every server runs once, in rotated order; each run: warm-up (${FIRST_WARMUP_MS} ms before a server's very first run, ${SIZE_WARMUP_MS} ms before a size's first round, ${WARMUP_MS} ms otherwise), then ${DURATION_MS} ms measured. Servers stay up from the smallest size to the largest.`,
        ],
        [
          'figures',
          'req/s: median of the rounds (min–max beside it); latencies: percentiles over every request of every round; ratios: median of the round-by-round ratios',
        ],
        [
          'load generator',
          'bench/server/load.ts: node:http keep-alive Agent, in the parent process; every server is its own child process',
        ],
        [
          'real server',
          `\`node ${[...REAL_NODE_ARGS, ''].join(' ')}dist/server.js\`; LOG_LEVEL=${LOG_LEVEL} (no per-call line: "hook answered" is info), NODE_ENV=production, HOOK_TOKEN set (every call carries the bearer token), MAX_EVENT_LOOP_DELAY_MS=0 (no shedding on loop delay: throughput, not self-defence, is measured; test/load/ measures shedding), defaults otherwise (BODY_LIMIT 8 MiB, MAX_IN_FLIGHT 64)`,
        ],
        [
          'I/O baseline',
          "bench/server/baseline-io.ts: node:http; read the body, JSON.parse, answer the real server's recorded bytes (with its content-type and ETag): the limit",
        ],
        [
          'sync baseline',
          'bench/server/baseline-sync.ts: node:http; read the body, JSON.parse, `sync` from dist/challenge/hooks.js, JSON.stringify',
        ],
        ['whole run', `${fmt(totalSeconds)} s, of which ${fmt(generateSeconds, 1)} s generating requests`],
      ],
    ),
    '',
  )
  md.push('## Requests', '')
  md.push(
    "Generated by bench/server/generate.ts: the project's hooks driven by the Metacontroller simulator (test/support/simulator); objects as an API server stores them (managedFields, kubectl's last-applied annotation, status written by the controllers). The brief's \"large\" (~50 related Challenges) comes out at ~0.4 MB with realistic objects, so a fourth, xlarge, request (~1.8 MB) covers the multi-MB case. Recorded to bench/out/requests/.",
    '',
  )
  md.push(
    table(
      [
        'size',
        'body',
        'what',
        'the real server answers',
        'heap of the parsed body',
        'sync baseline answers the same bytes',
      ],
      results.requests.map((r) => [
        r.size,
        sizeLabel(r.bytes),
        r.what,
        `200 ${r.answerPhase}, ${sizeLabel(r.answerBytes)}`,
        `${fmt(r.heapMb * 1024)} KiB`,
        r.sameAnswer ? 'yes' : "no: the answer carries the call's own time",
      ]),
    ),
    '',
  )
  md.push('## The stages of a call, in process', '')
  md.push(
    "Each stage timed alone on the same requests, without HTTP (bench/server/stages.ts): fastify's validator compiler with the app's ajv options, `sync` from dist/, the route's stringify and ETag. µs per call, the fastest of 3 interleaved timings; validation and sync go round separately parsed copies.",
    '',
  )
  md.push(
    table(
      ['stage', ...sizes],
      [
        ...(Object.keys(STAGE_LABELS) as Array<keyof StageTimes>).map((key) => [
          STAGE_LABELS[key],
          ...sizes.map((size) => fmt(stage(size)[key])),
        ]),
        [
          '**beyond the I/O baseline** (validation, sync, stringify, ETag)',
          ...sizes.map((size) => `**${fmt(beyondUs(size))}**`),
        ],
        [
          'as a share of decode + JSON.parse',
          ...sizes.map((size) => pct(beyondUs(size) / (stage(size).decode + stage(size).jsonParse))),
        ],
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
      sizes
        .map((size) => `${size} I/O ${fmt(cpuRatio(size, 'io'), 2)}, sync ${fmt(cpuRatio(size, 'sync'), 2)}`)
        .join('; ') +
      '.',
    '',
  )
  md.push(`Non-200 answers and errors over all ${ROUNDS * SERVERS.length * sizes.length} runs: **${nonOk}**.`, '')
  md.push(
    `The load generator's own CPU (share of one core, median of rounds): ${sizes.map((size) => `${size} ${SERVERS.map((s) => `${s} ${pct(summary(size, s).clientCpu)}`).join(' / ')}`).join('; ')}. The servers' CPU (same): ${sizes.map((size) => `${size} ${SERVERS.map((s) => `${s} ${pct(summary(size, s).serverCpu)}`).join(' / ')}`).join('; ')}.`,
    '',
  )
  md.push('### Time per request against size', '')
  md.push(
    'k in time ∝ size^k between consecutive sizes (k ≤ 1: time grows no faster than size; from small to medium the fixed cost per call dominates).',
    '',
  )
  const allSteps: Array<[SizeName, SizeName]> = [['small', 'medium'], ...STEPS]
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
  md.push(
    `Spawn of \`node dist/server.js\` to the first 200 on /sync (small request, polled every 2 ms), ${COLD_STARTS} times: ${coldStarts.map((ms) => `${fmt(ms)} ms`).join(', ')}. **Median ${fmt(coldMedian)} ms.**`,
    '',
  )
  if (start) {
    md.push(
      `Where a cold start goes (CPU profile, ${start.file}; ${fmt(start.summary.spanMs)} ms with the profiler on, which slows it):`,
      '',
    )
    md.push(
      table(
        ['phase', 'ms'],
        start.summary.phases.map((p) => [p.phase, fmt(p.ms)]),
      ),
      '',
    )
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
        ...sizes.map((size) => [
          size,
          ...SERVERS.map((s) => (s === 'real' ? `**${fmt(realRss(size), 1)}**` : fmt(rssMax[size][s], 1))),
        ]),
      ],
    ),
    '',
  )
  md.push('## ETag and 304', '')
  md.push(
    'The real server answers with a strong ETag (SHA-256 of the answer); the same request with `If-None-Match: <that ETag>` gets 304 and no body. The 304 runs were interleaved with the 200 runs of the same server. Bytes are wire bytes per request (status line, headers, body).',
    '',
  )
  md.push(table(etag.header, etag.rows), '')
  md.push(
    `Non-304 answers to a matching If-None-Match: **${nonNotModified}**. What the ETag saves: the answer's body on the wire (${BIG.map((size) => `${size} ${fmt(summary(size, 'real').receivedPerRequest - summary(size, 'etag').receivedPerRequest)} B`).join(', ')} per call) and Metacontroller's decoding of it. What it does not save: the request (${BIG.map((size) => sizeLabel(summary(size, 'etag').sentPerRequest)).join(', ')}) still travels and is still parsed, validated and synced, because the ETag is computed from the answer; the server's work per call is the same, so its req/s does not move beyond noise.`,
    '',
  )
  md.push('## Targets', '')
  md.push(
    table(
      ['target', 'value', '', 'cause'],
      targets.map((t) => [t.target, t.value, t.met ? 'met' : '**missed**', t.cause ?? '']),
    ),
    '',
  )
  if (profiles.length > 0) {
    md.push("### Where the real server's time goes", '')
    md.push(
      `CPU profiles of the real server under the same load (\`node --cpu-prof\`, 3.5 s, ${profiles.map((p) => p.file).join(', ')}): busy time only, each sample given to the innermost stage on its stack (bench/server/profile.ts). "shared": the I/O baseline does it too. µs/req is under the profiler, which slows everything.`,
      '',
    )
    const stageNames = [...new Set(profiles.flatMap((p) => p.summary.stages.map((s) => s.stage)))]
    const sharedOf = (stage: string) =>
      profiles.some((p) => p.summary.stages.some((s) => s.stage === stage && s.shared))
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
    for (const p of profiles)
      md.push(
        `Hottest functions by self time, ${p.size}: ${p.summary.functions
          .slice(0, 8)
          .map((f) => `\`${f.name}\` ${pct(f.share)}`)
          .join(', ')}.`,
        '',
      )
  }
  md.push(FINDINGS_MARKER, '')
  return md.join('\n')
}
