/** bench/RESULTS.md: every figure of one run, as Markdown. */
import { readFileSync } from 'node:fs'
import { availableParallelism, cpus, release, totalmem } from 'node:os'
import type { Generated, SizeName } from './generate.js'
import { fmt, gitDescription, pct, sizeLabel, table, type Summary } from './figures.js'
import type { ProfileSummary, StartSummary } from './profile.js'
import { STAGE_LABELS, type StageTimes } from './stages.js'

export const SERVERS = ['real', 'io', 'sync'] as const
export type ServerName = (typeof SERVERS)[number]
export type Variant = ServerName | 'etag'

export interface Target {
  target: string
  value: string
  met: boolean
  cause?: string
}

export interface Recorded {
  size: SizeName
  requestBytes: number
  headers: Record<string, string>
  body: string
  phase: string
}

/** The settings a run used, as the report states them. */
export interface Settings {
  concurrency: number
  rounds: number
  durationMs: number
  firstWarmupMs: number
  sizeWarmupMs: number
  warmupMs: number
  realNodeArgs: string[]
  logLevel: string
  coldStarts: number
}

export interface ReportInput {
  root: string
  settings: Settings
  loadBefore: number[]
  loadAfter: number[]
  totalSeconds: number
  generateSeconds: number
  generated: Generated[]
  recordedOf: (size: SizeName) => Recorded
  heapMb: Map<SizeName, number>
  sameAnswer: Map<SizeName, boolean>
  sizes: SizeName[]
  stage: (size: SizeName) => StageTimes
  beyondUs: (size: SizeName) => number
  /** The throughput table, as printed on the console. */
  header: string[]
  rows: string[][]
  cpuRatio: (size: SizeName, base: ServerName) => number
  nonOk: number
  summary: (size: SizeName, variant: Variant) => Summary
  steps: Array<[SizeName, SizeName]>
  bytes: (size: SizeName) => number
  usPerRequest: (size: SizeName, server: ServerName) => number
  exponent: (a: SizeName, b: SizeName, server?: ServerName) => number
  coldStarts: number[]
  coldMedian: number
  start: { summary: StartSummary; file: string } | undefined
  rssIdle: Record<ServerName, number>
  realRss: (size: SizeName) => number
  rssMax: Map<SizeName, Record<ServerName, number>>
  etagHeader: string[]
  etagRows: string[][]
  nonNotModified: number
  targets: Target[]
  profiles: Array<{ size: SizeName; summary: ProfileSummary; requests: number; file: string }>
}

/** Sizes the ETag figures are about. */
export const BIG: SizeName[] = ['medium', 'large', 'xlarge']

export function resultsMarkdown(input: ReportInput): string {
  const { root, loadBefore, loadAfter, totalSeconds, generateSeconds, generated, recordedOf, heapMb, sameAnswer, sizes, stage, beyondUs } = input
  const { header, rows, cpuRatio, nonOk, summary, steps, bytes, usPerRequest, exponent, coldStarts, coldMedian, start, rssIdle, realRss, rssMax } = input
  const { etagHeader, etagRows, nonNotModified, targets, profiles } = input
  const { concurrency: CONCURRENCY, rounds: ROUNDS, durationMs: DURATION_MS, firstWarmupMs: FIRST_WARMUP_MS, sizeWarmupMs: SIZE_WARMUP_MS, warmupMs: WARMUP_MS } = input.settings
  const { realNodeArgs: REAL_NODE_ARGS, logLevel: LOG_LEVEL, coldStarts: COLD_STARTS } = input.settings
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
        ['commit', gitDescription(root)],
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
  return md.join('\n')
}
