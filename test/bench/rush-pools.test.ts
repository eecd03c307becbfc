// bench:rush with warm pools (bench/rush/pools.ts, --pool=N): the pools' sizes from the plan, when a pool is warm,
// the figures of pooled and cold instances, and the rush section of RESULTS.md with and without pools (summary.ts
// and report.ts on synthetic runs). No benchmark runs here.
import t from 'tap'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  admittedByDefinition,
  freeReady,
  notReady,
  poolFigures,
  poolSizing,
  poolSpec,
  poolState,
  warm,
  type PoolRun,
} from '../../bench/rush/pools.js'
import { writeReport } from '../../bench/rush/report.js'
import { readSettings } from '../../bench/rush/settings.js'
import { summarise, type RushInput, type Snapshot } from '../../bench/rush/summary.js'
import type { Sample } from '../../bench/rush/measure.js'
import type { KubeObject } from '../../test/support/simulator/index.js'

const env = { METACONTROLLER_BIN: '/usr/local/bin/metacontroller' }

t.test('--pool and RUSH_POOL', async (t) => {
  t.equal(readSettings(env, []).pool, 0, 'no pool by default')
  t.equal(readSettings(env, ['--pool=8']).pool, 8)
  t.equal(readSettings({ ...env, RUSH_POOL: '38' }, []).pool, 38)
  t.throws(() => readSettings(env, ['--pool=101']), {
    message: "bench:rush: pool must be a whole number from 0 to 100 (a definition's pool.size), got 101",
  })
  t.throws(() => readSettings(env, ['--pool=2.5']), { message: /^bench:rush: pool must be a whole number/ })
  t.throws(() => readSettings(env, ['--pool=-1']), { message: 'bench:rush: pool must be a number >= 0, got -1' })
})

t.test('admitted by definition: each owner first `budget` in the order of the plan', async (t) => {
  const plan = [
    { owner: 0, definition: 0 },
    { owner: 0, definition: 1 },
    { owner: 1, definition: 1 },
    { owner: 0, definition: 2 },
    { owner: 0, definition: 0 },
    { owner: 1, definition: 2 },
  ]
  t.strictSame(admittedByDefinition(plan, 3, 4), [1, 2, 2, 0], "owner 0's fourth queues; definition 3 has none")
  t.strictSame(admittedByDefinition(plan, 1, 3), [1, 1, 0])
})

t.test('sizing: maxPods only above the default POOL_MAX_PODS', async (t) => {
  t.strictSame(poolSizing(8, [7, 8, 6]), { size: 8, maxPods: undefined, serverMaxPods: undefined })
  t.strictSame(poolSizing(50, [50, 40]), { size: 50, maxPods: undefined, serverMaxPods: undefined }, '100: the default')
  t.strictSame(poolSizing(75, [75, 70]), { size: 75, maxPods: 150, serverMaxPods: 150 })
  t.strictSame(poolSizing(100, [990]), { size: 100, maxPods: 1000, serverMaxPods: 1000 }, 'at most 1000')
  t.strictSame(poolSpec(poolSizing(8, [8])), { pool: { size: 8 }, flag: { mode: 'PerInstance' } })
  t.strictSame(poolSpec(poolSizing(75, [75])), { pool: { size: 75, maxPods: 150 }, flag: { mode: 'PerInstance' } })
})

function pod(name: string, labels: Record<string, string>, ready: boolean, deleting = false): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'ctf-rush',
      labels,
      ...(deleting ? { deletionTimestamp: '2026-11-29T12:00:00Z' } : {}),
    },
    status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  }
}

const slot = (definition: string, n: number, extra: Record<string, string> = {}) => ({
  'challenge-hooks.dev/definition': definition,
  'challenge-hooks.dev/pool-slot': String(n),
  ...extra,
})

t.test('free ready pool pods, and a warm pool', async (t) => {
  const pods = [
    pod('chal-00.pool-0', slot('chal-00', 0), true),
    pod('chal-00.pool-1', slot('chal-00', 1), true),
    pod('chal-00.pool-2', slot('chal-00', 2), false),
    pod('chal-00.pool-3', slot('chal-00', 3, { 'challenge-hooks.dev/claimed-by': 'uid-1' }), true),
    pod('chal-00.pool-4', slot('chal-00', 4), true, true),
    pod('chal-01.pool-0', slot('chal-01', 0), true),
    pod('chal-01-u-player', { 'challenge-hooks.dev/definition': 'chal-01' }, true),
    { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'bare', namespace: 'ctf-rush' } },
  ]
  t.strictSame(
    [...freeReady(pods)],
    [
      ['chal-00', 2],
      ['chal-01', 1],
    ],
    'neither a pod not ready, a claimed one, a deleted one nor an instance pod is free',
  )
  t.ok(warm(pods, ['chal-00', 'chal-01'], 1))
  t.notOk(warm(pods, ['chal-00', 'chal-01'], 2), 'chal-01 has one')
  t.notOk(warm(pods, ['chal-02'], 1), 'a definition without pods')
  const definition = (name: string, state?: string): KubeObject => ({
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    metadata: { name },
    ...(state === undefined ? {} : { status: { pool: { state } } }),
  })
  t.strictSame(notReady([definition('a', 'Ready'), definition('b', 'Exhausted'), definition('c')]), ['b', 'c'])
  t.equal(poolState({ ...definition('x'), kind: 'Challenge', status: { pool: { state: 'Claimed' } } }), 'Claimed')
  t.equal(poolState(definition('y')), 'none')
})

function poolRun(overrides: Partial<PoolRun> = {}): PoolRun {
  return {
    sizing: poolSizing(2, [2, 1]),
    admitted: [2, 1],
    warmSeconds: 41.26,
    stateAtRunning: new Map([
      ['a', 'Claimed'],
      ['b', 'Claimed'],
      ['c', 'Cold'],
      ['d', 'Claimed'],
    ]),
    createdAt: new Map([
      ['a', 0],
      ['b', 1000],
      ['c', 2000],
      ['d', 3000],
    ]),
    runningAt: new Map([
      ['a', 3000],
      ['b', 5000],
      ['c', 12_000],
      ['d', 6000],
      ['e', 9000],
    ]),
    admittedAt: new Map([
      ['a', 100],
      ['b', 1100],
      ['c', 2100],
      ['d', 3200],
    ]),
    claimedAt: new Map([
      ['a', 1100],
      ['b', 3100],
      ['d', 4200],
    ]),
    windowEnd: 10_000,
    refilledAt: 25_500,
    poolSyncs: 120,
    poolSyncBytes: [2048, 4096, 10_240],
    claims: 3,
    ...overrides,
  }
}

t.test('the pool figures: served from a pool, pooled and cold, the refill', async (t) => {
  t.strictSame(poolFigures(poolRun()), {
    size: 2,
    maxPods: null,
    serverMaxPods: null,
    admittedPerDefinition: { least: 1, most: 2 },
    warmSeconds: 41.3,
    statesAtRunning: { Claimed: 3, Cold: 1, none: 1 },
    servedFromPool: { claimed: 3, running: 5, share: 60 },
    createToRunning: {
      pooled: { count: 3, p50: 3, p95: 4, p99: 4, max: 4 },
      cold: { count: 1, p50: 10, p95: 10, p99: 10, max: 10 },
    },
    pooledSteps: {
      queue: { count: 3, p50: 0.1, p95: 0.2, p99: 0.2, max: 0.2 },
      admittedToClaimed: { count: 3, p50: 1, p95: 2, p99: 2, max: 2 },
      claimedToRunning: { count: 3, p50: 1.9, p95: 1.9, p99: 1.9, max: 1.9 },
    },
    refillSeconds: 15.5,
    poolSyncs: 120,
    poolSyncRequest: { medianKiB: 4, largestKiB: 10 },
    claims: 3,
  })
  const none = poolFigures(
    poolRun({
      warmSeconds: undefined,
      refilledAt: undefined,
      runningAt: new Map(),
      poolSyncBytes: [],
      sizing: poolSizing(75, [75]),
    }),
  ) as Record<string, any>
  t.equal(none.warmSeconds, null, 'never warm')
  t.equal(none.refillSeconds, null, 'not refilled by settle')
  t.strictSame(none.servedFromPool, { claimed: 0, running: 0, share: null })
  t.strictSame(none.createToRunning.pooled, { count: 0, p50: null, p95: null, p99: null, max: null })
  t.strictSame(none.poolSyncRequest, { medianKiB: null, largestKiB: null })
  t.strictSame([none.maxPods, none.serverMaxPods], [150, 150])
  t.equal(
    (poolFigures(poolRun({ refilledAt: 9000 })) as { refillSeconds: number }).refillSeconds,
    0,
    'full at the end of the window',
  )
})

const sample = (name: string, labels: Record<string, string>, value: number): Sample => ({ name, labels, value })

function snapshot(at: string, time: number, calls: number, sizeLines: number): Snapshot {
  return {
    at,
    time,
    apiserver: [sample('apiserver_request_total', { verb: 'POST', resource: 'pods', code: '201' }, calls)],
    metacontroller: [sample('rest_client_requests_total', { method: 'GET' }, calls)],
    hook: [
      sample('challenge_hooks_hook_duration_seconds_count', { hook: 'sync', code: '200' }, calls),
      sample('challenge_hooks_hook_duration_seconds_count', { hook: 'pools/sync', code: '200' }, calls / 2),
      sample('challenge_hooks_pool_claims_total', { namespace: 'ctf-rush', definition: 'chal-00' }, calls / 4),
    ],
    cpu: { hook: calls / 100, metacontroller: calls / 50 },
    rss: { hook: 100 },
    sizeLines,
    load: 1.5,
  }
}

function rushInput(pool: boolean): RushInput {
  const settings = readSettings(env, ['--challenges=4', `--pool=${pool ? 2 : 0}`, `--label=${pool ? 'pools' : 'cold'}`])
  const run = poolRun()
  return {
    settings,
    machine: { cpu: 'AMD EPYC', cores: 2, memoryGiB: 23.5, freeGiB: 10, loadAtStart: 1.5, node: 'v24.21.0' },
    versions: { metacontroller: 'v4.17.2', kubernetes: 'v1.37.2', commit: 'abc1234' },
    controller: { resyncPeriodSeconds: 1800 },
    t0: 0,
    createdIn: 60,
    createErrors: 0,
    admitted: 4,
    createdAt: run.createdAt,
    runningAt: new Map([...run.runningAt].filter(([name]) => name !== 'e')),
    failed: 0,
    phases: new Map([['Running/Ready', 4]]),
    snapshots: [
      snapshot('start', 0, 0, 1),
      snapshot('running', 60_000, 40, 3),
      snapshot('settled', 120_000, 80, 4),
      snapshot('rest', 180_000, 100, 4),
    ],
    sizes: [
      { hook: 'pools/sync', bytes: 99_999 },
      { hook: 'sync', bytes: 40_000 },
      { hook: 'pools/sync', bytes: 3072 },
      { hook: 'pools/sync', bytes: 5120 },
    ],
    profile: undefined,
    drain: [{ seconds: 60, callsPerMinute: 40 }],
    settleRule: { rate: 1.2, windowSeconds: 240 },
    kubeletErrors: 0,
    breakdown: {},
    hookReplicas: 1,
    front: undefined,
    faults: undefined,
    checks: {},
    logs: undefined,
    pool: pool
      ? {
          sizing: run.sizing,
          admitted: run.admitted,
          warmSeconds: run.warmSeconds,
          stateAtRunning: run.stateAtRunning,
          admittedAt: run.admittedAt,
          claimedAt: run.claimedAt,
          windowEnd: run.windowEnd,
          refilledAt: run.refilledAt,
        }
      : undefined,
  }
}

t.test('the summary: pool figures from the scrapes and sizes of the rush', async (t) => {
  const pooled = summarise(rushInput(true)) as Record<string, any>
  t.match(pooled.command, / --pool=2$/, 'the command names the pool')
  t.match(pooled.pool, {
    servedFromPool: { claimed: 3, running: 4, share: 75 },
    poolSyncs: 40,
    claims: 20,
    // the first line is of before the rush (the warm-up): not counted
    poolSyncRequest: { medianKiB: 3, largestKiB: 5 },
  })
  const cold = summarise(rushInput(false)) as Record<string, any>
  t.equal(cold.pool, undefined, 'no pool figures without a pool')
  t.notMatch(cold.command, /--pool/)
})

t.test('the rush section: pool rows only when a run had pools', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rush-pools-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const results = join(dir, 'RESULTS.md')
  writeFileSync(results, '# Results\n\nhand-written\n')
  writeFileSync(join(dir, 'cold-4.json'), JSON.stringify(summarise(rushInput(false))))
  writeReport(dir, results)
  const without = readFileSync(results, 'utf8')
  t.match(without, /^# Results\n\nhand-written\n/, 'what was there is kept')
  t.match(
    without,
    /\| \*\*time until every admitted instance is Running\*\* \(from the first create\) \| \*\*12 s\*\* \|/,
  )
  t.notMatch(without, /served from a pool/, 'no pool rows')

  writeFileSync(join(dir, 'pools-4.json'), JSON.stringify(summarise(rushInput(true))))
  writeReport(dir, results)
  const both = readFileSync(results, 'utf8')
  t.match(both, /^# Results\n\nhand-written\n/)
  t.equal(both.split('<!-- rush: begin').length, 2, 'one rush section, rewritten in place')
  t.match(both, /\| \*\*served from a pool\*\* [^|]*\| no pool \| \*\*75 %\*\* \(3 \/ 4\) \|/)
  t.match(
    both,
    /\| … create → Running [^|]*pooled; cold \(s\) \| no pool \| 3 \/ 4 \/ 4 \(3\); 10 \/ 10 \/ 10 \(1\) \|/,
  )
  t.match(
    both,
    /\| … pooled: created → admitted [^|]*\| no pool \| 0\.1 \/ 0\.2 \/ 0\.2; 1 \/ 2 \/ 2; 1\.9 \/ 1\.9 \/ 1\.9 \|/,
  )
  t.match(both, /\| refill[^|]*\| no pool \| 15\.5 \|/)
  t.match(both, /\| warm pool of each definition[^|]*\| no pool \| 2 \(default\); 1–2 \|/)
  t.match(both, /\| every pool warm before the rush[^|]*\| no pool \| 41\.3 \|/)
  t.match(both, /\| pool syncs \(claims answered\)[^|]*\| no pool \| 40 \(20\); 3 \/ 5 \|/)
  t.match(both, /--label=pools --pool=2`/)
})
