/** The figures of one bench:gateway run and their Markdown block for bench/RESULTS.md (and the console). */

export interface Latencies {
  count: number
  p50: number
  p99: number
  max: number
  /** answers other than 2xx, by status (0: no answer) */
  statuses: Record<string, number>
}

export interface StreamFigures {
  opened: number
  openSeconds: number
  /** the process's RSS right after its start */
  rssAtStartMiB: number
  /** the first gateway's RSS after the ensure and get load (0: not measured) */
  rssAfterLoadMiB: number
  /** the process's RSS before the streams opened (the gateway: a fresh one) */
  rssBeforeMiB: number
  apiserverRssBeforeMiB: number
  /** with the streams open, over the rest period */
  cpuPercent: number
  apiserverCpuPercent: number
  rssMiB: number
  apiserverRssMiB: number
  writes: number
  seen: number
  statuses: Record<string, number>
  /** from the moment the write was sent */
  p50: number
  p99: number
  max: number
  /** from the moment the API server answered the write */
  afterAnswerP50: number
  afterAnswerP99: number
}

export interface RateFigures {
  rate: number
  /** how late the sender itself started a request, at most, for each side */
  senderLateMs: { gateway: number; baseline: number }
  ensure: { gateway: Latencies; baseline: Latencies }
  get: { gateway: Latencies; baseline: Latencies }
}

export interface Figures {
  date: string
  commit: string
  cpus: number
  loadAtStart: number[]
  loadAtEnd: number[]
  settings: Record<string, number>
  creates: { gateway: Latencies; baseline: Latencies }
  mixed: RateFigures[]
  streams: { count: number; gateway: StreamFigures; baseline: StreamFigures }
}

const ms = (value: number) => (Number.isNaN(value) ? '–' : value < 10 ? value.toFixed(1) : value.toFixed(0))
const ratio = (a: number, b: number) => (b > 0 && Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : '–')
const mib = (value: number) => value.toFixed(0)
const failures = (statuses: Record<string, number>) =>
  Object.keys(statuses).length === 0
    ? 'none'
    : Object.entries(statuses)
        .map(([status, n]) => `${n}× ${status === '0' ? 'no answer' : status}`)
        .join(', ')
const verdict = (met: boolean) => (met ? 'met' : '**missed**')

export function render(f: Figures): string {
  const s = f.settings
  const g = f.streams.gateway
  const w = f.streams.baseline
  const load = (values: number[]) => values.map((x) => x.toFixed(2)).join(' / ')
  const kib = (process: StreamFigures) =>
    (((process.rssMiB - process.rssBeforeMiB) * 1024) / f.streams.count).toFixed(0)
  const row = (figure: string, gateway: Latencies, baseline: Latencies) =>
    `| ${figure} | ${ms(gateway.p50)} / ${ms(gateway.p99)} | ${ms(baseline.p50)} / ${ms(baseline.p99)} | ${ratio(gateway.p50, baseline.p50)} / ${ratio(gateway.p99, baseline.p99)} | ${gateway.count} (${failures(gateway.statuses)}) | ${baseline.count} (${failures(baseline.statuses)}) |`
  return [
    `### ${f.date.slice(0, 16).replace('T', ' ')} UTC, commit ${f.commit}: load ${load(f.loadAtStart)} at the start, ${load(f.loadAtEnd)} at the end (1 / 5 / 15 min, ${f.cpus} cores)`,
    '',
    `Settings: ${f.mixed.map((m) => m.rate).join(' and ')} requests/s (half ensure, half get) for ${s.seconds} s per round and side, ${s.rounds} round(s), ${s.owners} owners (creates at ${s.createRate}/s), ${s.streams} streams, ${s.restSeconds} s at rest, ${s.writes} status writes at ${s.writeRate}/s. The sender started a request at most ${f.mixed.map((m) => `${m.senderLateMs.gateway.toFixed(0)} ms (gateway) / ${m.senderLateMs.baseline.toFixed(0)} ms (baseline) late at ${m.rate}/s`).join(', ')}.`,
    '',
    '| calls, ms p50 / p99 (from the moment each was due) | gateway | baseline: the same API server calls, straight | gateway ÷ baseline | answered 2xx (other) | baseline 2xx (other) |',
    '|---|---|---|---|---|---|',
    row('ensure, creating (PUT; baseline: read, definition, POST, list)', f.creates.gateway, f.creates.baseline),
    ...f.mixed.flatMap((m) => [
      row(
        `ensure, existing, at ${m.rate}/s (PUT; baseline: read, definition, list)`,
        m.ensure.gateway,
        m.ensure.baseline,
      ),
      row(`get, at ${m.rate}/s (GET; baseline: read, definition, list)`, m.get.gateway, m.get.baseline),
    ]),
    '',
    `| ${f.streams.count} streams held | gateway (SSE) | baseline: bare watches, one process | gateway ÷ baseline |`,
    '|---|---|---|---|',
    `| opened (time to open all, 50 at once) | ${g.opened} (${g.openSeconds.toFixed(1)} s) | ${w.opened} (${w.openSeconds.toFixed(1)} s) | |`,
    `| RSS with the streams open, MiB (before them) | ${mib(g.rssMiB)} (${mib(g.rssBeforeMiB)}; after the ensure and get load ${mib(g.rssAfterLoadMiB)}) | ${mib(w.rssMiB)} (${mib(w.rssBeforeMiB)}) | ${ratio(g.rssMiB, w.rssMiB)} |`,
    `| RSS per stream, KiB | ${kib(g)} | ${kib(w)} | ${ratio(Number(kib(g)), Number(kib(w)))} |`,
    `| CPU at rest over ${s.restSeconds} s, % of one core | ${g.cpuPercent.toFixed(1)} | ${w.cpuPercent.toFixed(1)} | ${ratio(g.cpuPercent, w.cpuPercent)} |`,
    `| the API server meanwhile: CPU % / RSS MiB (${mib(g.apiserverRssBeforeMiB)} before the streams) | ${g.apiserverCpuPercent.toFixed(1)} / ${mib(g.apiserverRssMiB)} | ${w.apiserverCpuPercent.toFixed(1)} / ${mib(w.apiserverRssMiB)} | |`,
    `| status write → event, ms p50 / p99 (max) | ${ms(g.p50)} / ${ms(g.p99)} (${ms(g.max)}) | ${ms(w.p50)} / ${ms(w.p99)} (${ms(w.max)}) | ${ratio(g.p50, w.p50)} / ${ratio(g.p99, w.p99)} |`,
    `| write's answer → event, ms p50 / p99 | ${ms(g.afterAnswerP50)} / ${ms(g.afterAnswerP99)} | ${ms(w.afterAnswerP50)} / ${ms(w.afterAnswerP99)} | |`,
    `| events seen of writes (write answers other than 200) | ${g.seen} of ${g.writes} (${failures(withoutOk(g.statuses))}) | ${w.seen} of ${w.writes} (${failures(withoutOk(w.statuses))}) | |`,
    '',
    '| target | measured | |',
    '|---|---|---|',
    ...f.mixed.map(
      (m) =>
        `| GET p99 ≤ 20 ms at ${m.rate} requests/s | ${ms(m.get.gateway.p99)} ms (baseline ${ms(m.get.baseline.p99)} ms) | ${verdict(m.get.gateway.p99 <= 20)} |`,
    ),
    `| event within 200 ms of the write (p99) | ${ms(g.p99)} ms | ${verdict(g.p99 <= 200 && g.seen === g.writes)} |`,
    `| ${f.streams.count} streams under 300 MiB | ${mib(g.rssMiB)} MiB | ${verdict(g.rssMiB < 300 && g.opened === f.streams.count)} |`,
    '',
  ].join('\n')
}

function withoutOk(statuses: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(statuses).filter(([status]) => status !== '200'))
}
