// The rush section of bench/RESULTS.md, rendered from every run in bench/out/rush/*.json. It sits below the
// findings marker of bench/server/report.ts (kept when `npm run bench` rewrites the file), between its own two markers.
//
//   npx tsx bench/rush/report.ts     (re-render without running; run.ts calls it after each run)
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { SettleRule } from './settle.js'

const BEGIN = '<!-- rush: begin (written by npm run bench:rush; the text between these markers is replaced) -->'
const END = '<!-- rush: end -->'
const FINDINGS = '<!-- findings: text below this line is kept when the file is rewritten -->'

type Run = Record<string, any>

export function writeReport(dir: string, resultsFile: string): void {
  const runs: Run[] = readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .map((file) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as Run)
    .sort((a, b) => a.challenges - b.challenges || String(a.when).localeCompare(String(b.when)))
  writeSection(resultsFile, BEGIN, END, render(runs))
}

/**
 * Replaces the text between `begin` and `end` in `resultsFile` with `section` (which carries both markers); where
 * the markers are not there yet, adds it at the end, below the findings marker (added first if missing).
 */
export function writeSection(resultsFile: string, begin: string, end: string, section: string): void {
  const previous = existsSync(resultsFile) ? readFileSync(resultsFile, 'utf8') : ''
  let next: string
  if (previous.includes(begin) && previous.includes(end))
    next = previous.slice(0, previous.indexOf(begin)) + section + previous.slice(previous.indexOf(end) + end.length)
  else if (previous.includes(FINDINGS)) next = `${previous.trimEnd()}\n\n${section}\n`
  else next = `${previous.trimEnd()}\n\n${FINDINGS}\n\n${section}\n`
  writeFileSync(resultsFile, next)
}

const num = (value: unknown, digits = 1) =>
  typeof value === 'number' ? value.toLocaleString('en-US', { maximumFractionDigits: digits }) : '–'

function render(runs: Run[]): string {
  const md: string[] = [BEGIN, '', '## The opening rush: real control plane, real Metacontroller', '']
  md.push(
    "Written by `npm run bench:rush` (bench/rush/run.ts) from every run in `bench/out/rush/`. Each run: the cluster suite's control plane",
    '(etcd, kube-apiserver, kube-controller-manager), the project installed as an operator does, one namespace made like',
    '`manifests/challenges-namespace.yaml` (quota scaled to the run), 20 ChallengeDefinitions (`web-login`, cost 1, lifetime 3 h; 30 min before the settle rule), the hook',
    'server as in production (`node dist/server.js`, one replica, its own process), the kubelet stand-in of test/support',
    '(each pod: bound, ContainerCreating, Running after 1–3 s, Ready after 3–8 s), and Metacontroller itself. The Challenges',
    "are created evenly over the window (four per owner, in a seeded random order); with budget 3 each owner's fourth queues.",
    '',
  )
  if (runs.length === 0) return [...md, 'No run yet.', '', END].join('\n')
  const first = runs[0] as Run
  md.push('|  |  |', '|---|---|')
  md.push(
    `| machine | ${first.machine.cpu}, ${first.machine.cores} cores, ${num(first.machine.memoryGiB)} GiB; shared with other work (load average at each run's start below) |`,
  )
  md.push(
    `| versions | Node ${first.machine.node}; Kubernetes/etcd ${first.versions.kubernetes}; Metacontroller ${first.versions.metacontroller}; project commit ${[...new Set(runs.map((r) => r.versions.commit))].join(', ')} |`,
  )
  md.push('')
  // Two runs of one label and size differ by the controller they installed: the titles say which (runs from
  // before the backstop was recorded installed manifests/compositecontroller.yaml at 300 s).
  const backstop = (run: Run) => `${num(run.controller?.resyncPeriodSeconds ?? 300)} s`
  const title = (run: Run) => `${run.label}, ${num(run.challenges, 0)}, backstop ${backstop(run)}`
  md.push('Commands:', '')
  for (const run of runs) md.push(`- ${title(run)}: \`${run.command}\``)
  md.push('')

  const head = runs.map(title)
  const row = (name: string, cell: (run: Run) => string) => md.push(`| ${name} | ${runs.map(cell).join(' | ')} |`)
  md.push(`| figure | ${head.join(' | ')} |`, `|---|${runs.map(() => '---').join('|')}|`)
  row('Metacontroller flags', (r) =>
    r.settings.metacontrollerArgs.length > 0
      ? `\`${r.settings.metacontrollerArgs.join(' ')}\``
      : 'defaults (5 workers, QPS 5, burst 10)',
  )
  row('load average at start', (r) => num(r.load.start))
  row(
    'created (s to create all)',
    (r) =>
      `${num(r.created.count, 0)} (${num(r.created.seconds)} s)${r.created.errors > 0 ? `, ${r.created.errors} errors` : ''}`,
  )
  row(
    'admitted / Running / in Error before Running',
    (r) => `${num(r.admitted, 0)} / ${num(r.running, 0)} / ${num(r.failedBeforeRunning ?? 0, 0)}`,
  )
  row(
    '**time until every admitted instance is Running** (from the first create)',
    (r) => `**${num(r.secondsUntilAllRunning)} s**${r.allAdmittedRunning ? '' : ' (the last Running; not all were)'}`,
  )
  row(
    'create → Running p50 / p95 / p99 (s)',
    (r) => `${num(r.createToRunning.p50)} / ${num(r.createToRunning.p95)} / ${num(r.createToRunning.p99)}`,
  )
  // Runs with warm pools (--pool, bench/rush/pools.ts); the rows are there only when some run had them.
  if (runs.some((r) => r.pool != null)) poolRows(row)
  // Where the start goes (bench/rush/phases.ts): each phase at p50 / p95 / p99, seconds.
  for (const [phase, words] of [
    ['queue', 'created → admitted (queue wait)'],
    ['admittedToScheduled', 'admitted → pod scheduled'],
    ['scheduledToStarted', 'scheduled → container started'],
    ['startedToReady', 'started → ready'],
    ['readyToEndpoint', 'ready → Running (endpoint)'],
  ] as const) {
    row(`… ${words}, p50 / p95 / p99 (s)`, (r) => {
      const b = r.breakdown?.[phase] as { p50: number; p95: number; p99: number } | undefined
      return b === undefined ? '–' : `${num(b.p50)} / ${num(b.p95)} / ${num(b.p99)}`
    })
  }
  // Runs without a drain series settled by the first rule (no hook call for 15 s, or 180 s after Running); runs
  // without a recorded rule, by 1.5x over 120 s; runs whose rule says no `from`, at the end of its window.
  row(
    "settled: hook calls over a window down to a multiple of the instances' own resyncs (from the first create), s",
    (r) => {
      if (r.drain === undefined) return `${num(r.secondsUntilSettled)} (quiet rule)`
      const rule = (r.settleRule ?? { rate: 1.5, windowSeconds: 120 }) as SettleRule
      const at = rule.from === 'start' ? "from the window's start" : 'at its end'
      return `${num(r.secondsUntilSettled)} (${rule.rate}× over ${rule.windowSeconds} s, ${at})`
    },
  )
  row('… hook calls per minute from every admitted instance Running until settled (one figure a minute)', (r) => {
    const drain = (r.drain ?? []) as Array<{ callsPerMinute: number }>
    const step = Math.ceil(drain.length / 16)
    const shown = drain.filter((_, i) => i % step === 0 || i === drain.length - 1)
    return drain.length === 0
      ? '–'
      : `${shown.map((x) => num(x.callsPerMinute, 0)).join(', ')}${step > 1 ? ` (one minute in ${step})` : ''}`
  })
  row(
    'hook calls per Challenge (customize / sync / finalize)',
    (r) =>
      `${num(r.hook.callsPerChallenge, 2)} (${num(r.hook.byHook.customize, 2)} / ${num(r.hook.byHook.sync, 2)} / ${num(r.hook.byHook.finalize, 2)})`,
  )
  row(
    'hook answers 304 / refused (429)',
    (r) =>
      `${num(r.hook.status304, 0)} / ${num(
        Object.values(r.hook.rejected as Record<string, number>).reduce((a, b) => a + b, 0),
        0,
      )}`,
  )
  row('hook CPU s per Challenge', (r) => num(r.hook.cpuSecondsPerChallenge, 4))
  // The same plan sends the same requests in every run, so a call's CPU gauges the machine's speed in that run: a
  // saturated control plane turns a few per cent of it into many seconds of the queue's times.
  row("… hook CPU ms per call (the machine's speed in that run)", (r) =>
    num((r.hook.cpuSecondsPerChallenge / r.hook.callsPerChallenge) * 1000, 2),
  )
  row(
    'request size median / p99 / largest (KiB), all hooks',
    (r) =>
      `${num(r.hook.requestSize.all.medianKiB)} / ${num(r.hook.requestSize.all.p99KiB)} / ${num(r.hook.requestSize.all.largestKiB)}`,
  )
  row(
    'sync request median / largest (KiB)',
    (r) => `${num(r.hook.requestSize.sync.medianKiB)} / ${num(r.hook.requestSize.sync.largestKiB)}`,
  )
  row(
    '**API writes per Challenge** (all admitted writes ÷ Challenges)',
    (r) => `**${num(r.api.writesPerChallenge, 2)}**`,
  )
  row("… without the platform's own create", (r) => num(r.api.controlLoopWritesPerChallenge, 2))
  row(
    'Metacontroller requests (by method)',
    (r) =>
      Object.entries(r.api.metacontrollerRequests as Record<string, number>)
        .map(([k, v]) => `${k} ${num(v, 0)}`)
        .join(', ') || '–',
  )
  row(
    'Metacontroller API requests per Challenge; the least time they take at its QPS (s)',
    (r) => `${num(r.api.metacontrollerRequestsPerChallenge, 2)}; ${num(r.api.metacontrollerSecondsAtQps)}`,
  )
  row("mean wait of a parent in Metacontroller's work queue (s)", (r) =>
    num(r.api.metacontrollerQueueWaitMeanSeconds, 2),
  )
  row('API server: APF rejections', (r) =>
    num(
      Object.values(r.api.apfRejected as Record<string, number>).reduce((a, b) => a + b, 0),
      0,
    ),
  )
  row(
    'CPU s per Challenge: hook / Metacontroller / kube-apiserver / etcd / kube-controller-manager / bench (kubelet stand-in, watches)',
    (r) =>
      ['hook', 'metacontroller', 'apiserver', 'etcd', 'controllerManager', 'bench']
        .map((k) => num(r.cpuSecondsPerChallenge[k], 3))
        .join(' / '),
  )
  row('Metacontroller CPU in the parent scan (`findRelatedParents`, share of its profile)', (r) =>
    r.metacontroller.profile?.shares?.findRelatedParents !== undefined
      ? `${num(r.metacontroller.profile.shares.findRelatedParents)} %`
      : '–',
  )
  row('… as CPU seconds in the profile (scan / all of Metacontroller)', (r) => {
    const total = Number(/Total samples = ([\d.]+)s/.exec(r.metacontroller.profile?.top ?? '')?.[1])
    const share = r.metacontroller.profile?.shares?.findRelatedParents
    return Number.isFinite(total) && share !== undefined
      ? `${num((total * share) / 100)} / ${num(total)} (first ${r.metacontroller.profile.seconds} s)`
      : '–'
  })
  row('… in syncing (`processNextWorkItem`)', (r) =>
    r.metacontroller.profile?.shares?.processNextWorkItem !== undefined
      ? `${num(r.metacontroller.profile.shares.processNextWorkItem)} %`
      : '–',
  )
  row('**at rest: syncs per minute**', (r) => `**${num(r.atRest.syncsPerMinute)}** (over ${num(r.atRest.minutes)} min)`)
  row(
    'at rest: API writes per minute; CPU s per minute hook / Metacontroller',
    (r) =>
      `${num(r.atRest.writesPerMinute)}; ${num(r.atRest.hookCpuSecondsPerMinute, 2)} / ${num(r.atRest.metacontrollerCpuSecondsPerMinute, 2)}`,
  )
  row('phases at the end', (r) =>
    Object.entries(r.phases as Record<string, number>)
      .map(([k, v]) => `${k} ${v}`)
      .join(', '),
  )
  md.push('')
  if (runs.some((r) => r.drain === undefined)) {
    md.push(
      '"Quiet rule": runs made before the settle rule settled once no hook call came for 15 s, or 180 s after every admitted',
      'instance was Running; at 2,000 their "at rest" figures are Metacontroller still catching up with the rush (findings below).',
      '',
    )
  }

  md.push(
    'API writes during the rush (start → settled), by verb and resource, as the API server counted them (`apiserver_request_total`):',
    '',
  )
  const keys = [...new Set(runs.flatMap((r) => Object.keys(r.api.byResource as Record<string, number>)))]
  md.push(`| write | ${head.join(' | ')} |`, `|---|${runs.map(() => '---').join('|')}|`)
  for (const key of keys)
    md.push(
      `| ${key} | ${runs.map((r) => num((r.api.byResource as Record<string, number>)[key] ?? 0, 0)).join(' | ')} |`,
    )
  md.push('')

  const profiled = [...runs].reverse().find((r) => r.metacontroller.profile?.top)
  if (profiled !== undefined) {
    md.push(
      `Metacontroller's CPU profile in the run ${title(profiled)} (the first ${profiled.metacontroller.profile.seconds} s from the first create; \`go tool pprof -top -cum\`, top lines):`,
      '',
    )
    md.push('```', profiled.metacontroller.profile.top.trim(), '```', '')
  }
  md.push(END)
  return md.join('\n')
}

/** The rows of the warm pools' figures; a run without pools says so in each. */
function poolRows(row: (name: string, cell: (run: Run) => string) => void): void {
  const pooled = (cell: (pool: Run) => string) => (r: Run) => (r.pool == null ? 'no pool' : cell(r.pool as Run))
  const latency = (x: Run) =>
    x.count === 0 ? 'none' : `${num(x.p50)} / ${num(x.p95)} / ${num(x.p99)} (${num(x.count, 0)})`
  row(
    "warm pool of each definition: size (maxPods); the definitions' admitted Challenges, fewest–most",
    pooled(
      (p) =>
        `${num(p.size, 0)} (${p.maxPods === null ? 'default' : num(p.maxPods, 0)}); ${num(p.admittedPerDefinition.least, 0)}–${num(p.admittedPerDefinition.most, 0)}`,
    ),
  )
  row(
    "every pool warm before the rush, s from Metacontroller's start",
    pooled((p) => (p.warmSeconds === null ? 'not warm (the rush started anyway)' : num(p.warmSeconds))),
  )
  row(
    '**served from a pool** (status.pool.state Claimed when Running, of all Running)',
    pooled(
      (p) =>
        `**${num(p.servedFromPool.share)} %** (${num(p.servedFromPool.claimed, 0)} / ${num(p.servedFromPool.running, 0)})`,
    ),
  )
  row(
    '… create → Running p50 / p95 / p99 (count), pooled; cold (s)',
    pooled((p) => `${latency(p.createToRunning.pooled)}; ${latency(p.createToRunning.cold)}`),
  )
  row(
    '… pooled: created → admitted / admitted → Claimed / Claimed → Running, p50 / p95 / p99 (s)',
    pooled((p) =>
      p.pooledSteps == null
        ? '–'
        : ['queue', 'admittedToClaimed', 'claimedToRunning']
            .map((step) => {
              const x = p.pooledSteps[step] as Run
              return x.count === 0 ? 'none' : `${num(x.p50)} / ${num(x.p95)} / ${num(x.p99)}`
            })
            .join('; '),
    ),
  )
  row(
    'refill: from the end of the window until every pool was full again (s)',
    pooled((p) => (p.refillSeconds === null ? 'not refilled by settle' : num(p.refillSeconds))),
  )
  row(
    'pool syncs (claims answered); /pools/sync request median / largest (KiB)',
    pooled(
      (p) =>
        `${num(p.poolSyncs, 0)} (${num(p.claims, 0)}); ${num(p.poolSyncRequest.medianKiB)} / ${num(p.poolSyncRequest.largestKiB)}`,
    ),
  )
}

if (process.argv[1]?.endsWith('rush/report.ts')) {
  try {
    parseArgs({ args: process.argv.slice(2), options: {}, strict: true })
  } catch (error) {
    console.error(
      `bench/rush/report.ts: ${(error as Error).message}\nusage: npx tsx bench/rush/report.ts (no arguments)`,
    )
    process.exit(2)
  }
  const root = new URL('../..', import.meta.url).pathname
  writeReport(join(root, 'bench/out/rush'), join(root, 'bench/RESULTS.md'))
}
