/**
 * bench/out/results.json: everything one `npm run bench` measured, as data. bench/server/measure.ts writes it;
 * bench/server/render.ts renders bench/RESULTS.md and the console tables from it alone (through bench/server/analysis.ts), so a
 * report can be re-rendered, or its wording changed, without measuring again.
 */
import { readFileSync } from 'node:fs'
import type { Run, Summary } from './figures.js'
import type { SizeName } from './generate.js'
import type { ProfileSummary, StartSummary } from './profile.js'
import type { StageTimes } from './stages.js'

export const SERVERS = ['real', 'io', 'sync'] as const
export type ServerName = (typeof SERVERS)[number]
/** A server, or the real server answered 304 (`etag`: the same request with a matching If-None-Match). */
export type Variant = ServerName | 'etag'
/** Sizes the ETag figures are about. */
export const BIG: SizeName[] = ['medium', 'large', 'xlarge']
/** Bumped when the shape changes: the renderer refuses a file of another version. */
export const RESULTS_VERSION = 1

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

export interface Machine {
  cpu: string
  cores: number
  memoryGiB: number
  os: string
  node: string
  /** the commit, and whether src/ had uncommitted changes */
  commit: string
}

/** One generated request and what the servers answered to it. */
export interface RequestRecord {
  size: SizeName
  bytes: number
  what: string
  /** the real server's answer: `phase/reason` and its size */
  answerPhase: string
  answerBytes: number
  /** V8 heap of the parsed body, MB */
  heapMb: number
  /** the sync baseline answered the real server's bytes */
  sameAnswer: boolean
}

/** A measured run without its latencies (the summaries carry the percentiles). */
export type RoundRun = Omit<Run, 'latencies'>

export interface BenchResults {
  version: typeof RESULTS_VERSION
  /** when the run started measuring (ISO) */
  date: string
  machine: Machine
  settings: Settings
  /** 1, 5 and 15 minute load averages at the start and at the end */
  loadBefore: number[]
  loadAfter: number[]
  totalSeconds: number
  generateSeconds: number
  /** smallest first */
  requests: RequestRecord[]
  stages: Record<SizeName, StageTimes>
  coldStarts: number[]
  /** RSS right after start, and the largest while serving each size, MB */
  rssIdle: Record<ServerName, number>
  rssMax: Record<SizeName, Record<ServerName, number>>
  /** the rounds of every server (and `etag` for BIG sizes) per size, and their summaries */
  runs: Record<SizeName, Partial<Record<Variant, RoundRun[]>>>
  summaries: Record<SizeName, Partial<Record<Variant, Summary>>>
  profiles: Array<{ size: SizeName; summary: ProfileSummary; requests: number; file: string }>
  start?: { summary: StartSummary; file: string }
}

export function readResults(file: string): BenchResults {
  const results = JSON.parse(readFileSync(file, 'utf8')) as BenchResults
  if (results.version !== RESULTS_VERSION) {
    throw new Error(
      `${file}: results of version ${String(results.version)}, this renderer reads version ${String(RESULTS_VERSION)}: run \`npm run bench\` again`,
    )
  }
  return results
}
