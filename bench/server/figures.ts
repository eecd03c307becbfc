/** The bench's figures: a measured run, rounds pooled into a summary, paired ratios, and how numbers are printed. */
import { execFileSync } from 'node:child_process'
import { percentile, type LoadResult } from './load.js'

export interface Run extends LoadResult {
  /** the server's CPU seconds in the window */
  serverCpuSeconds: number
}

/** Rounds of one server and size, pooled. */
export interface Summary {
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

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

export function summarize(runs: Run[]): Summary {
  const all = Float64Array.from(runs.flatMap((run) => [...run.latencies])).sort()
  const requests = runs.reduce((n, run) => n + run.requests, 0)
  const statuses: Record<string, number> = {}
  for (const run of runs)
    for (const [code, n] of Object.entries(run.statuses)) statuses[code] = (statuses[code] ?? 0) + n
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
export function pairedRatio(
  a: ReadonlyArray<{ rps: number }>,
  b: ReadonlyArray<{ rps: number }>,
): { median: number; min: number; max: number } {
  const ratios = a.map((run, i) => run.rps / (b[i] as { rps: number }).rps)
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) }
}

export const kib = (bytes: number) => bytes / 1024
export const fmt = (n: number, digits = 0) =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : 'n/a'
export const pct = (share: number) => `${fmt(share * 100, 1)} %`
export const sizeLabel = (bytes: number) =>
  bytes >= 1024 * 1024 ? `${fmt(bytes / 1024 / 1024, 2)} MiB` : `${fmt(kib(bytes), 1)} KiB`

export function table(header: string[], rows: string[][]): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n')
}

export function plain(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)))
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i < 2 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number))).join('  ')
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n')
}

export function gitDescription(root: string): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root }).toString().trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: root }).toString().trim() !== ''
    return `${commit}${dirty ? ' (src/ has uncommitted changes)' : ''}`
  } catch {
    return 'unknown'
  }
}
