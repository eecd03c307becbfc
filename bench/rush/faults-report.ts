// The faults section of bench/RESULTS.md, rendered from every run in bench/out/rush-faults/*.json (the fault runs
// and their pairs without faults, bench/rush/run.ts), between its own two markers (added at the end of the file).
//
//   npx tsx bench/rush/faults-report.ts     (re-render without running; run.ts calls it after each such run)
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { writeSection } from './report.js'

const BEGIN =
  '<!-- rush-faults: begin (written by npm run bench:rush --faults; the text between these markers is replaced) -->'
const END = '<!-- rush-faults: end -->'

type Run = Record<string, any>

/**
 * Each fault run with its pair: the run without faults of the same size that started last before it (a pair is run
 * without faults first, then with), else the first after it; and how much later its last instance was Running, as
 * the ratio of the two times from the first create.
 */
export function pairs(runs: Run[]): Array<{ faults: Run; without: Run | undefined; ratio: number | undefined }> {
  return runs
    .filter((run) => run.settings?.faults === true)
    .map((faults) => {
      const at = (run: Run) => Date.parse(run.when)
      const candidates = runs
        .filter((run) => run.settings?.faults !== true && run.challenges === faults.challenges)
        .sort((a, b) => at(a) - at(b))
      const without =
        candidates.filter((run) => at(run) < at(faults)).at(-1) ?? candidates.find((run) => at(run) > at(faults))
      const ratio =
        without !== undefined && faults.secondsUntilAllRunning > 0 && without.secondsUntilAllRunning > 0
          ? Math.round((faults.secondsUntilAllRunning / without.secondsUntilAllRunning) * 100) / 100
          : undefined
      return { faults, without, ratio }
    })
}

export function writeFaultsReport(dir: string, resultsFile: string): void {
  const runs: Run[] = readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .map((file) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as Run)
    .sort((a, b) => a.challenges - b.challenges || String(a.when).localeCompare(String(b.when)))
  writeSection(resultsFile, BEGIN, END, render(runs))
}

const num = (value: unknown, digits = 1) =>
  typeof value === 'number' ? value.toLocaleString('en-US', { maximumFractionDigits: digits }) : '–'
const count = (findings: unknown) => (Array.isArray(findings) ? findings.length : undefined)

function render(runs: Run[]): string {
  const md: string[] = [BEGIN, '', '## Faults during the rush', '']
  md.push(
    'Written by `npm run bench:rush -- --faults` (bench/rush/run.ts, bench/rush/faults.ts) from every run in `bench/out/rush-faults/`:',
    'the rush of the section above with two hook server replicas behind a round-robin front, with and without faults',
    '(Metacontroller SIGKILLed and started again at 20 % of the instances admitted, the hook server rolled at 40 % and',
    '80 %, the kubelet stand-in stopped for 10 s at 60 %). The end state is checked from the API server after the rush',
    "settled: every Challenge Running / Ready or Pending / Queued as its owner's budget says, no orphan child, no",
    'Challenge with two pods, every flag Secret holding the flag docs/api.md "Flags" gives (computed by the bench), mounted',
    'by its pod. The machine is shared with other work: the load average is given next to each figure.',
    '',
  )
  if (runs.length === 0) return [...md, 'No run yet.', '', END].join('\n')
  const title = (run: Run) =>
    `${run.label}, ${num(run.challenges, 0)}${run.settings?.faults === true ? ', faults' : ''}`
  md.push('Commands:', '')
  for (const run of runs) md.push(`- ${title(run)} (${run.when}, commit ${run.versions?.commit}): \`${run.command}\``)
  md.push('')
  const row = (name: string, cell: (run: Run) => string) => md.push(`| ${name} | ${runs.map(cell).join(' | ')} |`)
  md.push(`| figure | ${runs.map(title).join(' | ')} |`, `|---|${runs.map(() => '---').join('|')}|`)
  row('Metacontroller flags', (r) =>
    r.settings.metacontrollerArgs.length > 0 ? `\`${r.settings.metacontrollerArgs.join(' ')}\`` : 'defaults',
  )
  row('hook replicas', (r) => num(r.hookReplicas ?? 1, 0))
  row(
    'load average (1 min) at start / all Running / settled',
    (r) => `${num(r.load.start)} / ${num(r.load.running)} / ${num(r.load.settled)}`,
  )
  row(
    'admitted / Running / in Error before Running',
    (r) => `${num(r.admitted, 0)} / ${num(r.running, 0)} / ${num(r.failedBeforeRunning, 0)}`,
  )
  row(
    '**every admitted instance Running** (from the first create)',
    (r) => `**${num(r.secondsUntilAllRunning)} s**${r.allAdmittedRunning ? '' : ' (the last Running; not all were)'}`,
  )
  row(
    'create → Running p50 / p95 / p99 (s)',
    (r) => `${num(r.createToRunning.p50)} / ${num(r.createToRunning.p95)} / ${num(r.createToRunning.p99)}`,
  )
  row('settled (from the first create), s', (r) => num(r.secondsUntilSettled))
  row(
    'hook calls per Challenge; non-200/304 answers',
    (r) => `${num(r.hook.callsPerChallenge, 2)}; ${num(r.hook.non200, 0)}`,
  )
  row('connections through the front (per replica port); refused with none in rotation', (r) =>
    r.front === undefined
      ? '–'
      : `${Object.values(r.front.connections as Record<string, number>)
          .map((n) => num(n, 0))
          .join(', ')}; ${num(r.front.refused, 0)}`,
  )
  row('phases at the end (API server)', (r) =>
    Object.entries((r.checks?.phases ?? {}) as Record<string, number>)
      .map(([k, v]) => `${k} ${v}`)
      .join(', '),
  )
  row('children listed (Secret / NetworkPolicy / Pod / Service / Ingress)', (r) =>
    ['Secret', 'NetworkPolicy', 'Pod', 'Service', 'Ingress'].map((k) => num(r.checks?.listed?.[k], 0)).join(' / '),
  )
  row(
    '**findings**: outcome / orphan children / Challenges with two pods / flags',
    (r) =>
      `**${[r.checks?.outcome, r.checks?.orphans, r.checks?.duplicatePods, r.checks?.flags].map((f) => num(count(f), 0)).join(' / ')}**`,
  )
  row('kubelet stand-in errors', (r) => num(r.kubeletErrors, 0))
  row('error lines in the logs: Metacontroller (level error) / hook servers (level ≥ 50)', (r) => {
    if (r.logs === undefined) return '–'
    const sum = (prefix: string) =>
      Object.entries(r.logs as Record<string, { errors: number }>)
        .filter(([file]) => file.startsWith(prefix))
        .reduce((total, [, x]) => total + x.errors, 0)
    return `${num(sum('metacontroller'), 0)} / ${num(sum('hook-server'), 0)}`
  })
  md.push('')

  const paired = pairs(runs)
  if (paired.length > 0) {
    md.push('Each fault run against its pair, the run without faults of the same size just before it:', '')
    md.push(
      '| size | without faults: every admitted instance Running (load at start) | with faults (load at start) | ratio |',
      '|---|---|---|---|',
    )
    for (const { faults, without, ratio } of paired)
      md.push(
        `| ${num(faults.challenges, 0)} | ${without === undefined ? '–' : `${num(without.secondsUntilAllRunning)} s (${num(without.load.start)}; ${without.when})`} | ${num(faults.secondsUntilAllRunning)} s (${num(faults.load.start)}; ${faults.when}) | ${ratio === undefined ? '–' : `${num(ratio, 2)}×`} |`,
      )
    md.push('')
  }

  for (const run of runs.filter((r) => Array.isArray(r.faults))) {
    md.push(`The faults of ${title(run)} (${run.when}); seconds from the first create:`, '')
    md.push(
      '| fault | due at | fired at (s) | seen then: created / admitted / Running | took (s) | load | steps |',
      '|---|---|---|---|---|---|---|',
    )
    for (const f of run.faults as Run[])
      md.push(
        `| ${f.kind} | ${Math.round(f.share * 100)} % admitted (${num(f.atAdmitted, 0)}) | ${num(f.firedAtSeconds)} | ${num(f.seen.created, 0)} / ${num(f.seen.admitted, 0)} / ${num(f.seen.running, 0)} | ${num(f.doneAtSeconds - f.firedAtSeconds)} | ${num(f.load)} | ${(f.steps as Array<{ step: string; atSeconds: number }>).map((x) => `${x.step} ${num(x.atSeconds)}`).join('; ') || '–'} |`,
      )
    if ((run.faults as Run[]).length < 4)
      md.push('', `Only ${(run.faults as Run[]).length} of the 4 faults fired before the rush settled.`)
    md.push('')
  }

  const findings = runs.flatMap((run) =>
    ['outcome', 'orphans', 'duplicatePods', 'flags'].flatMap((check) =>
      ((run.checks?.[check] ?? []) as Array<{ object: string; problem: string }>).map(
        (f) => `- ${title(run)}, ${check}: ${f.object}: ${f.problem}`,
      ),
    ),
  )
  if (findings.length > 0) {
    md.push('Findings (the first 40):', '', ...findings.slice(0, 40), '')
  }
  md.push(END)
  return md.join('\n')
}

if (process.argv[1]?.endsWith('rush/faults-report.ts')) {
  try {
    parseArgs({ args: process.argv.slice(2), options: {}, strict: true })
  } catch (error) {
    console.error(
      `bench/rush/faults-report.ts: ${(error as Error).message}\nusage: npx tsx bench/rush/faults-report.ts (no arguments)`,
    )
    process.exit(2)
  }
  const root = new URL('../..', import.meta.url).pathname
  writeFaultsReport(join(root, 'bench/out/rush-faults'), join(root, 'bench/RESULTS.md'))
}
