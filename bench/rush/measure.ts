// What the rush benchmark reads off the processes it runs: Prometheus text (the API server's, Metacontroller's,
// the hook server's), CPU seconds from /proc, percentiles.
import { readFileSync } from 'node:fs'

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** Every sample of a Prometheus text exposition (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line)
    if (match === null) continue
    const labels: Record<string, string> = {}
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1] as string] = pair[2] as string
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) })
  }
  return samples
}

/** Sum of a metric's samples whose labels match `where`, grouped by the labels `by` names (joined with ' '). */
export function sumBy(
  samples: Sample[],
  name: string,
  by: string[],
  where: (labels: Record<string, string>) => boolean = () => true,
): Map<string, number> {
  const groups = new Map<string, number>()
  for (const s of samples) {
    if (s.name !== name || !where(s.labels)) continue
    const key = by.map((label) => s.labels[label] ?? '').join(' ')
    groups.set(key, (groups.get(key) ?? 0) + s.value)
  }
  return groups
}

export function total(samples: Sample[], name: string, where?: (labels: Record<string, string>) => boolean): number {
  return [...sumBy(samples, name, [], where).values()].reduce((a, b) => a + b, 0)
}

/** b - a, key by key (counters between two scrapes). */
export function delta(a: Map<string, number>, b: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>()
  for (const [key, value] of b) {
    const d = value - (a.get(key) ?? 0)
    if (d !== 0) out.set(key, d)
  }
  return out
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat; 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // utime and stime are fields 14 and 15 of stat(5); fields[0] here is field 3.
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return 0
  }
}

/** Resident set size in MiB, from /proc/<pid>/status. */
export function rssMiB(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) / 1024 : 0
  } catch {
    return 0
  }
}

/** Nearest-rank percentile of an unsorted list; NaN when empty. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number
}

/** A deterministic pseudo-random generator (mulberry32): the same run plan for the same seed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
