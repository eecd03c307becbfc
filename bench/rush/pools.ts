// The warm pools of a rush run (`--pool=N`, docs/api.md#warm-pools): what each definition's pool is sized to, when
// the pools are warm (N free ready pods each), and the figures of the run's pooled and cold instances. Pure: the run
// (bench/rush/run.ts) gives it the pods and Challenges it watched.
import type { KubeObject } from '../../test/support/simulator/index.js'
import { percentile } from './measure.js'

const DEFINITION = 'challenge-hooks.dev/definition'
const SLOT = 'challenge-hooks.dev/pool-slot'
const CLAIMED_BY = 'challenge-hooks.dev/claimed-by'
/** The hook server's POOL_MAX_PODS when the operator sets none. */
export const DEFAULT_POOL_MAX_PODS = 100
/** The most pods a definition's pool.maxPods may ask for (the CRD's and POOL_MAX_PODS's ceiling). */
const MAX_POOL_MAX_PODS = 1000

export interface Planned {
  owner: number
  definition: number
}

/**
 * The Challenges of each definition that will be admitted: each owner's first `budget` in the order of the plan
 * (every definition costs 1), by definition index.
 */
export function admittedByDefinition(plan: Planned[], budget: number, definitions: number): number[] {
  const held = new Map<number, number>()
  const admitted = Array.from({ length: definitions }, () => 0)
  for (const { owner, definition } of plan) {
    const count = held.get(owner) ?? 0
    if (count >= budget) continue
    held.set(owner, count + 1)
    admitted[definition] = (admitted[definition] ?? 0) + 1
  }
  return admitted
}

export interface PoolSizing {
  size: number
  /** the definitions' pool.maxPods; undefined when the default POOL_MAX_PODS holds the pool */
  maxPods: number | undefined
  /** the hook server's POOL_MAX_PODS; undefined to leave its default */
  serverMaxPods: number | undefined
}

/**
 * A pool of `size` that stays `size` free while every admitted Challenge of its definition holds a claimed pod (a
 * player keeps a pod for the instance's lifetime, hours): it holds the most admitted of any definition plus `size`.
 * Up to the default POOL_MAX_PODS (100) the definitions ask for no maxPods; above it they ask for what they need, and
 * the hook server is given that as its POOL_MAX_PODS.
 */
export function poolSizing(size: number, admitted: number[]): PoolSizing {
  const needed = Math.min(MAX_POOL_MAX_PODS, size + Math.max(0, ...admitted))
  if (needed <= DEFAULT_POOL_MAX_PODS) return { size, maxPods: undefined, serverMaxPods: undefined }
  return { size, maxPods: needed, serverMaxPods: needed }
}

/** What a definition of the run adds to its spec for the pool: the pool, and a flag a pooled pod can carry. */
export function poolSpec(sizing: PoolSizing): Record<string, unknown> {
  return {
    pool: sizing.maxPods === undefined ? { size: sizing.size } : { size: sizing.size, maxPods: sizing.maxPods },
    flag: { mode: 'PerInstance' },
  }
}

function ready(pod: KubeObject): boolean {
  const conditions = ((pod.status as { conditions?: Array<{ type?: string; status?: string }> } | undefined)
    ?.conditions ?? []) as Array<{ type?: string; status?: string }>
  return conditions.some((c) => c.type === 'Ready' && c.status === 'True')
}

/** Free ready pool pods by definition name: a pool slot, not claimed, not being deleted, Ready. */
export function freeReady(pods: KubeObject[]): Map<string, number> {
  const free = new Map<string, number>()
  for (const pod of pods) {
    const labels = pod.metadata.labels ?? {}
    const definition = labels[DEFINITION]
    if (labels[SLOT] === undefined || definition === undefined || labels[CLAIMED_BY] !== undefined) continue
    if (pod.metadata.deletionTimestamp !== undefined || !ready(pod)) continue
    free.set(definition, (free.get(definition) ?? 0) + 1)
  }
  return free
}

/** Every named definition's pool holds `size` free ready pods. */
export function warm(pods: KubeObject[], definitions: string[], size: number): boolean {
  const free = freeReady(pods)
  return definitions.every((name) => (free.get(name) ?? 0) >= size)
}

/** The definitions whose status.pool.state is not Ready (a Challenge waits for a claim only from a Ready pool). */
export function notReady(definitions: KubeObject[]): string[] {
  return definitions
    .filter((d) => (d.status as { pool?: { state?: string } } | undefined)?.pool?.state !== 'Ready')
    .map((d) => d.metadata.name)
}

/** A Challenge's status.pool.state, or 'none'. */
export function poolState(challenge: KubeObject): string {
  return (challenge.status as { pool?: { state?: string } } | undefined)?.pool?.state ?? 'none'
}

export interface PoolRun {
  sizing: PoolSizing
  /** the admitted Challenges of each definition, by the plan (admittedByDefinition) */
  admitted: number[]
  /** from Metacontroller's start until every pool was warm (undefined: never, within the wait) */
  warmSeconds: number | undefined
  /** each Running Challenge's status.pool.state when the bench first saw it Running */
  stateAtRunning: Map<string, string>
  /** when the bench first saw each Challenge admitted (status.admittedAt) and Claimed (status.pool.state) */
  admittedAt: Map<string, number>
  claimedAt: Map<string, number>
  createdAt: Map<string, number>
  runningAt: Map<string, number>
  /** the end of the window (every create answered), and from when every pool was full again until settled */
  windowEnd: number
  refilledAt: number | undefined
  /** pools/sync calls during the rush (start → settled), and the sizes of their request bodies (bytes) */
  poolSyncs: number
  poolSyncBytes: number[]
  /** claims the pool syncs answered (challenge_hooks_pool_claims_total, start → settled) */
  claims: number
}

const round = (value: number, digits = 1) =>
  Number.isFinite(value) ? Math.round(value * 10 ** digits) / 10 ** digits : null

function latencyFigures(values: number[]) {
  return {
    count: values.length,
    p50: round(percentile(values, 50)),
    p95: round(percentile(values, 95)),
    p99: round(percentile(values, 99)),
    max: values.length === 0 ? null : round(Math.max(...values)),
  }
}

/** The pool figures of a run's results (bench/out/rush/<label>-<challenges>.json, `pool`). */
export function poolFigures(run: PoolRun): Record<string, unknown> {
  const latencies = { Claimed: [] as number[], other: [] as number[] }
  const states: Record<string, number> = {}
  for (const [name, at] of run.runningAt) {
    const created = run.createdAt.get(name)
    const state = run.stateAtRunning.get(name) ?? 'none'
    states[state] = (states[state] ?? 0) + 1
    if (created === undefined) continue
    ;(state === 'Claimed' ? latencies.Claimed : latencies.other).push((at - created) / 1000)
  }
  // Where a pooled instance's start goes: created → admitted → Claimed (its status says so) → Running.
  const pooledSteps = { queue: [] as number[], admittedToClaimed: [] as number[], claimedToRunning: [] as number[] }
  for (const [name, at] of run.runningAt) {
    const [created, admitted, claimed] = [run.createdAt.get(name), run.admittedAt.get(name), run.claimedAt.get(name)]
    if (run.stateAtRunning.get(name) !== 'Claimed' || created === undefined) continue
    if (admitted === undefined || claimed === undefined) continue
    pooledSteps.queue.push(Math.max(0, admitted - created) / 1000)
    pooledSteps.admittedToClaimed.push(Math.max(0, claimed - admitted) / 1000)
    pooledSteps.claimedToRunning.push(Math.max(0, at - claimed) / 1000)
  }
  const running = run.runningAt.size
  const claimed = states.Claimed ?? 0
  return {
    size: run.sizing.size,
    maxPods: run.sizing.maxPods ?? null,
    serverMaxPods: run.sizing.serverMaxPods ?? null,
    admittedPerDefinition: { least: Math.min(...run.admitted), most: Math.max(...run.admitted) },
    warmSeconds: run.warmSeconds === undefined ? null : round(run.warmSeconds),
    statesAtRunning: states,
    servedFromPool: { claimed, running, share: running === 0 ? null : round((100 * claimed) / running) },
    createToRunning: { pooled: latencyFigures(latencies.Claimed), cold: latencyFigures(latencies.other) },
    pooledSteps: {
      queue: latencyFigures(pooledSteps.queue),
      admittedToClaimed: latencyFigures(pooledSteps.admittedToClaimed),
      claimedToRunning: latencyFigures(pooledSteps.claimedToRunning),
    },
    /** seconds from the end of the window until every pool had `size` free ready pods again; null: not by settle */
    refillSeconds: run.refilledAt === undefined ? null : round(Math.max(0, run.refilledAt - run.windowEnd) / 1000),
    poolSyncs: run.poolSyncs,
    poolSyncRequest: {
      medianKiB: run.poolSyncBytes.length === 0 ? null : round(percentile(run.poolSyncBytes, 50) / 1024),
      largestKiB: run.poolSyncBytes.length === 0 ? null : round(Math.max(...run.poolSyncBytes) / 1024),
    },
    claims: run.claims,
  }
}
