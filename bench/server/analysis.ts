/**
 * What a run's figures say: ratios, time per request against size, and each target met or missed with its cause,
 * computed from bench/out/results.json alone. bench/server/measure.ts asks it which sizes to profile; bench/server/report.ts
 * renders it.
 */
import { fmt, kib, median, pairedRatio, pct, type Summary } from './figures.js'
import type { SizeName } from './generate.js'
import { BIG, SERVERS, type BenchResults, type RoundRun, type ServerName, type Variant } from './results.js'

/**
 * The real server's req/s over the I/O baseline's, per size: small 0.4, medium and large 0.8 (the targets of
 * Node 24, whose JSON.parse, the limit's own work, is about twice as fast as Node 20's), xlarge 0.85.
 */
export const TARGET_RATIOS: Record<SizeName, number> = { small: 0.4, medium: 0.8, large: 0.8, xlarge: 0.85 }
export const TARGET_COLD_START_MS = 300
/** The real server's RSS under load at most this times the I/O baseline's, per size. */
export const TARGET_RSS_RATIO = 1.3
/** time per request may grow at most like size^1.1 between consecutive sizes (10 % for noise) */
export const TARGET_EXPONENT = 1.1
/** The steps of size whose growth is a target (from small to medium the fixed cost per call dominates). */
export const STEPS: Array<[SizeName, SizeName]> = [
  ['medium', 'large'],
  ['large', 'xlarge'],
]

export interface Target {
  target: string
  value: string
  met: boolean
  cause?: string
}

export type Figures = ReturnType<typeof figuresOf>

/** The figures of a run, as functions of size and server. */
export function figuresOf(results: BenchResults) {
  const sizes = results.requests.map((request) => request.size)
  const bytes = (size: SizeName) =>
    (results.requests.find((request) => request.size === size) as { bytes: number }).bytes
  const rounds = (size: SizeName, variant: Variant) => results.runs[size]?.[variant] ?? ([] as RoundRun[])
  const summary = (size: SizeName, variant: Variant) => results.summaries[size]?.[variant] as Summary
  const ratioOf = (size: SizeName, base: ServerName) => pairedRatio(rounds(size, 'real'), rounds(size, base))
  const ratio = (size: SizeName, base: ServerName) => ratioOf(size, base).median
  const stage = (size: SizeName) => results.stages[size]
  const usPerRequest = (size: SizeName, server: ServerName) => 1e6 / summary(size, server).rps
  return {
    sizes,
    bytes,
    summary,
    ratioOf,
    ratio,
    ratioText: (size: SizeName, base: ServerName) => {
      const r = ratioOf(size, base)
      return `${fmt(r.median, 2)} (${fmt(r.min, 2)}–${fmt(r.max, 2)})`
    },
    syncVsIo: (size: SizeName) => pairedRatio(rounds(size, 'sync'), rounds(size, 'io')).median,
    /** The same ratio from the servers' CPU per request (/proc): less sensitive to other work on the machine. */
    cpuRatio: (size: SizeName, base: ServerName) => summary(size, base).serverCpuUs / summary(size, 'real').serverCpuUs,
    usPerRequest,
    exponent: (a: SizeName, b: SizeName, server: ServerName = 'real') =>
      Math.log(usPerRequest(b, server) / usPerRequest(a, server)) / Math.log(bytes(b) / bytes(a)),
    stage,
    /** In process: the work of a call beyond the I/O baseline's (decode + JSON.parse), µs. */
    beyondUs: (size: SizeName) => {
      const t = stage(size)
      return t.validate + t.sync + t.stringify + t.etag
    },
    realRss: (size: SizeName) => results.rssMax[size].real,
    ioRss: (size: SizeName) => results.rssMax[size].io,
    coldMedian: median(results.coldStarts),
    nonOk: sizes.reduce((n, size) => n + SERVERS.reduce((m, s) => m + summary(size, s).unexpected, 0), 0),
    nonNotModified: BIG.reduce((n, size) => n + (summary(size, 'etag')?.unexpected ?? 0), 0),
  }
}

/** Sizes whose ratio to the I/O baseline missed its target. */
export function ratioMissed(f: Figures): SizeName[] {
  return f.sizes.filter((size) => f.ratio(size, 'io') < TARGET_RATIOS[size])
}

export function targetsOf(results: BenchResults, f: Figures = figuresOf(results)): Target[] {
  const targets: Target[] = [
    ...f.sizes.map((size) => ({
      target: `≥ ${TARGET_RATIOS[size]} of the I/O baseline's req/s, ${size}`,
      value: `${fmt(f.ratio(size, 'io'), 3)} (rounds ${fmt(f.ratioOf(size, 'io').min, 2)}–${fmt(f.ratioOf(size, 'io').max, 2)}); by CPU per request ${fmt(f.cpuRatio(size, 'io'), 3)}`,
      met: f.ratio(size, 'io') >= TARGET_RATIOS[size],
    })),
    {
      target: `cold start ≤ ${TARGET_COLD_START_MS} ms (median of ${results.settings.coldStarts})`,
      value: `${fmt(f.coldMedian)} ms`,
      met: f.coldMedian <= TARGET_COLD_START_MS,
    },
    ...f.sizes.map((size) => ({
      target: `RSS under load ≤ ${TARGET_RSS_RATIO}× the I/O baseline's, ${size} (max)`,
      value: `${fmt(f.realRss(size), 1)} MB against ${fmt(f.ioRss(size), 1)} MB: ${fmt(f.realRss(size) / f.ioRss(size), 2)}×`,
      met: f.realRss(size) <= TARGET_RSS_RATIO * f.ioRss(size),
    })),
    ...STEPS.map(([a, b]) => ({
      target: `time per request grows no faster than size, ${a} → ${b} (k ≤ ${TARGET_EXPONENT} in time ∝ size^k)`,
      value: fmt(f.exponent(a, b), 2),
      met: f.exponent(a, b) <= TARGET_EXPONENT,
    })),
  ]
  for (const target of targets) if (!target.met) target.cause = causeOf(target, results, f)
  return targets
}

/** Why a target was missed, from the figures and profiles. */
function causeOf(target: Target, results: BenchResults, f: Figures): string | undefined {
  const { profiles, start } = results
  const ratioSize = f.sizes.find((s) => target.target.endsWith(`baseline's req/s, ${s}`))
  if (ratioSize !== undefined) {
    const size = ratioSize
    // The profile of this size, or of the nearest size profiled.
    const distance = (p: { size: SizeName }) => Math.abs(Math.log(f.bytes(p.size) / f.bytes(size)))
    const profile = [...profiles].sort((a, b) => distance(a) - distance(b))[0]
    const beyond = profile?.summary.stages.filter((s) => !s.shared) ?? []
    const beyondShare = beyond.reduce((n, s) => n + s.share, 0)
    const t0 = f.stage(size)
    return (
      `In process, per call: the limit's own work (UTF-8 decode + JSON.parse) ${fmt(t0.decode + t0.jsonParse)} µs; beyond it ${fmt(f.beyondUs(size))} µs ` +
      `(validation ${fmt(t0.validate)}, sync ${fmt(t0.sync)}, stringify + ETag ${fmt(t0.stringify + t0.etag)}), ` +
      `which alone would allow ${fmt((t0.decode + t0.jsonParse) / (t0.decode + t0.jsonParse + f.beyondUs(size)), 2)}; inside the server, under load, the same work costs more per call than in this loop (the HTTP figures and the profile say how much). ` +
      `The hook's own work: the sync baseline (the same JSON.parse, sync and JSON.stringify, no framework) runs at ${fmt(f.syncVsIo(size), 2)} of the I/O baseline's req/s ` +
      `(${fmt(f.summary(size, 'io').serverCpuUs / f.summary(size, 'sync').serverCpuUs, 2)} by CPU per request). The framework and checks around it: the real server runs at ${fmt(f.ratio(size, 'sync'), 2)} of the sync baseline.` +
      (profile
        ? ` Profile (${profile.size}): ${pct(beyondShare)} of the real server's busy time is work the I/O baseline does not do, largest first: ${beyond
            .slice(0, 6)
            .map((s) => `${s.stage} ${pct(s.share)}`)
            .join(', ')}.`
        : '')
    )
  }
  if (target.target.startsWith('cold start')) {
    return start
      ? `profiled cold start (${fmt(start.summary.spanMs)} ms with the profiler on): ${start.summary.phases
          .filter((p) => p.ms >= 5)
          .map((p) => `${p.phase} ${fmt(p.ms)} ms`)
          .join(', ')}; \`node -e ''\` alone is part of the first.`
      : 'not profiled'
  }
  if (target.target.startsWith('RSS')) {
    const size = f.sizes.find((s) => target.target.endsWith(`, ${s} (max)`)) as SizeName
    const heapMb = (results.requests.find((request) => request.size === size) as { heapMb: number }).heapMb
    return (
      `the server holds ${fmt(results.rssIdle.real, 1)} MB right after its start (the I/O baseline ${fmt(results.rssIdle.io, 1)} MB); ` +
      `under the same load the I/O baseline (bare node:http + JSON.parse) grows to ${fmt(f.ioRss(size), 1)} MB: one parsed ${size} request is ${fmt(heapMb * 1024)} KiB of V8 heap ` +
      `(JSON.parse of the body, after a full GC) plus its ${fmt(kib(f.bytes(size)) / 1024, 1)} MB body string, ${results.settings.concurrency} in flight, and V8 lets garbage grow between collections.`
    )
  }
  return undefined
}
