// The figures of one rush run, from what bench/rush/run.ts recorded: watch times, scrapes of the three metrics
// endpoints and /proc at four moments (start, every admitted instance Running, settled, after the rest window),
// the size of every hook call, and Metacontroller's CPU profile.
import type { ProfileSummary } from './processes.js'
import { delta, percentile, sumBy, type Sample } from './measure.js'
import { DEFAULT_BUDGET, type RushSettings } from './settings.js'
import { poolFigures, type PoolRun } from './pools.js'
import type { SettleRule } from './settle.js'

export interface Snapshot {
  at: string
  time: number
  apiserver: Sample[]
  metacontroller: Sample[]
  hook: Sample[]
  cpu: Record<string, number>
  rss: Record<string, number>
  /** hook calls recorded by request-sizes.mjs so far */
  sizeLines: number
  load: number
}

export interface RushInput {
  settings: RushSettings
  machine: Record<string, string | number>
  versions: Record<string, string>
  /** The CompositeController as the run installed it (from manifests/). */
  controller: { resyncPeriodSeconds: number | undefined }
  t0: number
  createdIn: number
  createErrors: number
  admitted: number
  createdAt: Map<string, number>
  runningAt: Map<string, number>
  /** admitted instances in Error before ever Running */
  failed: number
  phases: Map<string, number>
  snapshots: [Snapshot, Snapshot, Snapshot, Snapshot]
  sizes: Array<{ hook: string; bytes: number }>
  profile: ProfileSummary | undefined
  /** hook calls per minute, sampled each minute from every admitted instance Running until settled */
  drain: Array<{ seconds: number; callsPerMinute: number }>
  /** settled once the hook calls over a window were at most `rate` x what the instances' resyncs ask for */
  settleRule: SettleRule
  /** the start of the first window the rule accepted (ms); undefined when none did within --settle-max-seconds */
  settledFrom?: number
  kubeletErrors: number
  /** per phase of an instance's start, seconds at p50 / p95 / p99 (bench/rush/phases.ts) */
  breakdown: Record<string, unknown>
  /** hook server replicas behind one address (1: no front) */
  hookReplicas: number
  front: { connections: Record<string, number>; refused: number } | undefined
  /** the faults injected (a fault run), when and what each did */
  faults: unknown[] | undefined
  /** the end state's checks (bench/rush/fault-run.ts) */
  checks: unknown
  /** error lines of Metacontroller's and the hook servers' logs (runs with several hook replicas) */
  logs: unknown
  /** a run with warm pools (--pool): what the run saw of them; the rest of the pool figures come from the scrapes */
  pool?: Omit<PoolRun, 'createdAt' | 'runningAt' | 'poolSyncs' | 'poolSyncBytes' | 'claims'>
}

// apiserver_request_total names verbs by HTTP method (POST, PUT), not by the API's create and update.
const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION'])
const round = (value: number, digits = 2) =>
  Number.isFinite(value) ? Math.round(value * 10 ** digits) / 10 ** digits : null
const record = (map: Map<string, number>) => Object.fromEntries([...map].sort((a, b) => b[1] - a[1]))

export function summarise(input: RushInput): Record<string, unknown> {
  const { settings: s } = input
  const [start, running, settled, rest] = input.snapshots
  const n = input.createdAt.size
  const perChallenge = (value: number) => round(value / Math.max(1, n), 3)

  const latencies = [...input.runningAt].flatMap(([name, at]) => {
    const created = input.createdAt.get(name)
    return created === undefined ? [] : [(at - created) / 1000]
  })
  const lastRunning = Math.max(...input.runningAt.values())
  const allRunning = input.runningAt.size >= input.admitted

  const hookCalls = (a: Snapshot, b: Snapshot) =>
    delta(
      sumBy(a.hook, 'challenge_hooks_hook_duration_seconds_count', ['hook', 'code']),
      sumBy(b.hook, 'challenge_hooks_hook_duration_seconds_count', ['hook', 'code']),
    )
  const sum = (map: Map<string, number>, where: (key: string) => boolean = () => true) =>
    [...map].filter(([key]) => where(key)).reduce((total, [, value]) => total + value, 0)
  const rushCalls = hookCalls(start, settled)
  const restCalls = hookCalls(settled, rest)
  const restMinutes = (rest.time - settled.time) / 60_000

  const writes = (a: Snapshot, b: Snapshot) => {
    const by = ['verb', 'resource', 'subresource', 'code']
    const where = (labels: Record<string, string>) => WRITE_VERBS.has(labels.verb ?? '')
    return delta(
      sumBy(a.apiserver, 'apiserver_request_total', by, where),
      sumBy(b.apiserver, 'apiserver_request_total', by, where),
    )
  }
  const rushWrites = writes(start, settled)
  const byResource = new Map<string, number>()
  for (const [key, value] of rushWrites) {
    const [verb, resource, subresource, code] = key.split(' ')
    const name = `${verb?.toLowerCase()} ${resource}${subresource ? `/${subresource}` : ''}${code?.startsWith('2') ? '' : ` (${code})`}`
    byResource.set(name, (byResource.get(name) ?? 0) + value)
  }
  const admittedWrites = sum(rushWrites, (key) => (key.split(' ')[3] ?? '').startsWith('2'))
  const platformCreates = input.createdAt.size
  const restWrites = sum(writes(settled, rest))

  const reads = delta(
    sumBy(start.apiserver, 'apiserver_request_total', ['verb', 'resource', 'subresource'], (l) => l.verb === 'GET'),
    sumBy(settled.apiserver, 'apiserver_request_total', ['verb', 'resource', 'subresource'], (l) => l.verb === 'GET'),
  )
  const mcRequests = delta(
    sumBy(start.metacontroller, 'rest_client_requests_total', ['method']),
    sumBy(settled.metacontroller, 'rest_client_requests_total', ['method']),
  )
  const qps = Number(s.metacontrollerArgs.find((arg) => arg.startsWith('--client-go-qps='))?.split('=')[1] ?? 5)
  const mcTotal = sum(mcRequests)
  const queueWait = (snapshot: Snapshot, suffix: string) =>
    sumBy(snapshot.metacontroller, `workqueue_queue_duration_seconds_${suffix}`, []).get('') ?? 0
  const workqueueAdds = delta(
    sumBy(start.metacontroller, 'workqueue_adds_total', ['name']),
    sumBy(settled.metacontroller, 'workqueue_adds_total', ['name']),
  )
  const apfRejected = delta(
    sumBy(start.apiserver, 'apiserver_flowcontrol_rejected_requests_total', ['priority_level']),
    sumBy(settled.apiserver, 'apiserver_flowcontrol_rejected_requests_total', ['priority_level']),
  )
  const apfWait = delta(
    sumBy(start.apiserver, 'apiserver_flowcontrol_request_wait_duration_seconds_sum', ['priority_level']),
    sumBy(settled.apiserver, 'apiserver_flowcontrol_request_wait_duration_seconds_sum', ['priority_level']),
  )
  const rejected = delta(
    sumBy(start.hook, 'challenge_hooks_rejected_total', ['cause']),
    sumBy(settled.hook, 'challenge_hooks_rejected_total', ['cause']),
  )

  const rushSizes = input.sizes.slice(start.sizeLines, settled.sizeLines)
  const sizeFigures = (hook?: string) => {
    const bytes = rushSizes.filter((x) => hook === undefined || x.hook === hook).map((x) => x.bytes)
    return {
      calls: bytes.length,
      medianKiB: round(percentile(bytes, 50) / 1024, 1),
      p99KiB: round(percentile(bytes, 99) / 1024, 1),
      largestKiB: round(Math.max(...bytes) / 1024, 1),
    }
  }

  const cpu = (a: Snapshot, b: Snapshot) =>
    Object.fromEntries(Object.keys(b.cpu).map((key) => [key, round((b.cpu[key] ?? 0) - (a.cpu[key] ?? 0), 1)]))
  const rushCpu = cpu(start, settled)

  return {
    label: s.label,
    challenges: s.challenges,
    settings: s,
    command: commandLine(s),
    machine: input.machine,
    versions: input.versions,
    controller: input.controller,
    when: new Date(input.t0).toISOString(),
    created: { count: n, seconds: round(input.createdIn, 1), errors: input.createErrors },
    admitted: input.admitted,
    running: input.runningAt.size,
    failedBeforeRunning: input.failed,
    allAdmittedRunning: allRunning,
    secondsUntilAllRunning: input.runningAt.size > 0 ? round((lastRunning - input.t0) / 1000, 1) : null,
    breakdown: input.breakdown,
    createToRunning: {
      p50: round(percentile(latencies, 50), 1),
      p95: round(percentile(latencies, 95), 1),
      p99: round(percentile(latencies, 99), 1),
      max: round(Math.max(...latencies), 1),
    },
    // The metrics of "settled" are scraped at the end of the accepted window (a resync period of rest included).
    secondsUntilSettled: round(((input.settledFrom ?? settled.time) - input.t0) / 1000, 1),
    /** from every admitted instance Running until settled: hook calls per minute, each minute */
    drain: input.drain,
    settleRule: input.settleRule,
    phases: record(input.phases),
    hook: {
      callsPerChallenge: perChallenge(sum(rushCalls)),
      byHook: Object.fromEntries(
        ['customize', 'sync', 'finalize'].map((hook) => [
          hook,
          perChallenge(sum(rushCalls, (key) => key.startsWith(`${hook} `))),
        ]),
      ),
      non200: sum(rushCalls, (key) => !key.endsWith(' 200') && !key.endsWith(' 304')),
      status304: sum(rushCalls, (key) => key.endsWith(' 304')),
      rejected: record(rejected),
      cpuSecondsPerChallenge: round((rushCpu.hook ?? 0) / Math.max(1, n), 4),
      requestSize: { all: sizeFigures(), sync: sizeFigures('sync'), customize: sizeFigures('customize') },
    },
    cpuSeconds: rushCpu,
    cpuSecondsPerChallenge: Object.fromEntries(
      Object.entries(rushCpu).map(([key, value]) => [key, round((value ?? 0) / Math.max(1, n), 4)]),
    ),
    rssMiB: settled.rss,
    api: {
      writes: admittedWrites,
      writesPerChallenge: perChallenge(admittedWrites),
      controlLoopWritesPerChallenge: perChallenge(admittedWrites - platformCreates),
      refused: sum(rushWrites) - admittedWrites,
      byResource: record(byResource),
      /** single-object GETs by resource (everyone's: the bench's watches are LIST + WATCH, not GET) */
      gets: record(reads),
      metacontrollerRequests: record(mcRequests),
      metacontrollerRequestsPerChallenge: perChallenge(mcTotal),
      /** at --client-go-qps, the client's token bucket alone needs this long for those requests */
      metacontrollerSecondsAtQps: round(mcTotal / qps, 1),
      /** mean time a parent waited in Metacontroller's work queue before a worker took it */
      metacontrollerQueueWaitMeanSeconds: round(
        (queueWait(settled, 'sum') - queueWait(start, 'sum')) /
          Math.max(1, queueWait(settled, 'count') - queueWait(start, 'count')),
        2,
      ),
      apfRejected: record(apfRejected),
      apfWaitSeconds: record(new Map([...apfWait].map(([key, value]) => [key, round(value, 1) as number]))),
    },
    metacontroller: { workqueueAdds: record(workqueueAdds), profile: input.profile },
    atRest: {
      minutes: round(restMinutes, 2),
      syncsPerMinute: round(sum(restCalls, (key) => key.startsWith('sync ')) / restMinutes, 1),
      hookCallsPerMinute: round(sum(restCalls) / restMinutes, 1),
      writesPerMinute: round(restWrites / restMinutes, 1),
      hookCpuSecondsPerMinute: round(((rest.cpu.hook ?? 0) - (settled.cpu.hook ?? 0)) / restMinutes, 2),
      metacontrollerCpuSecondsPerMinute: round(
        ((rest.cpu.metacontroller ?? 0) - (settled.cpu.metacontroller ?? 0)) / restMinutes,
        2,
      ),
    },
    load: {
      start: round(start.load, 1),
      running: round(running.load, 1),
      settled: round(settled.load, 1),
      rest: round(rest.load, 1),
    },
    kubeletErrors: input.kubeletErrors,
    hookReplicas: input.hookReplicas,
    front: input.front,
    faults: input.faults,
    checks: input.checks,
    logs: input.logs,
    pool:
      input.pool === undefined
        ? undefined
        : poolFigures({
            ...input.pool,
            createdAt: input.createdAt,
            runningAt: input.runningAt,
            poolSyncs: sum(rushCalls, (key) => key.startsWith('pools/sync ')),
            poolSyncBytes: rushSizes.filter((x) => x.hook === 'pools/sync').map((x) => x.bytes),
            claims: sum(
              delta(
                sumBy(start.hook, 'challenge_hooks_pool_claims_total', []),
                sumBy(settled.hook, 'challenge_hooks_pool_claims_total', []),
              ),
            ),
          }),
  }
}

function commandLine(s: RushSettings): string {
  const env = [`METACONTROLLER_BIN=${s.metacontroller.replace(/^.*\//, '…/')}`]
  if (s.metacontrollerArgs.length > 0) env.push(`METACONTROLLER_ARGS='${s.metacontrollerArgs.join(' ')}'`)
  if (s.apiserverArgs.length > 0) env.push(`RUSH_APISERVER_ARGS='${s.apiserverArgs.join(' ')}'`)
  // Every setting that changes what the run does, so that the line recorded runs it again.
  const optional = [
    s.budget !== DEFAULT_BUDGET ? ` --budget=${s.budget}` : '',
    s.budgetScope !== 'Namespace' ? ` --budget-scope=${s.budgetScope}` : '',
    s.hookReplicas > 1 ? ` --hook-replicas=${s.hookReplicas}` : '',
    s.pool > 0 ? ` --pool=${s.pool}` : '',
    s.faults ? ' --faults' : '',
  ].join('')
  return `${env.join(' ')} npm run bench:rush -- --challenges=${s.challenges} --owners=${s.owners} --definitions=${s.definitions} --window-seconds=${s.windowSeconds} --rest-seconds=${s.restSeconds} --settle-max-seconds=${s.settleMaxSeconds} --label=${s.label}${optional}`
}
