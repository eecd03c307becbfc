// The node-start section of bench/RESULTS.md, rendered from every run in bench/out/node-start/*.json, between its
// own two markers (below the findings marker of bench/run.ts and after the rush's section, so neither of their
// rewrites touches it, and it touches neither).
//
//   npx tsx bench/node-start/report.ts     (re-render without running; run.ts calls it after each run)
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeSection } from '../rush/report.js'

const BEGIN =
  '<!-- node-start: begin (written by npm run bench:node-start; the text between these markers is replaced) -->'
const END = '<!-- node-start: end -->'

interface Step {
  name: string
  p50: number
  p90: number
  p99: number
  max: number
}

interface Run {
  label: string
  challenges: number
  intervalMs: number
  createdInMs: number
  when: string
  commit: string
  cpus: string
  loadBefore: number
  loadAfter: number
  pollMs: number
  probeMs: number
  endpointSettleMs: number
  /** Absent in the runs before these were recorded: the stand-in, no pool. */
  pool?: number
  /** Absent in the runs before it was recorded: 0, the first create at once. */
  restSeconds?: number
  controller?: string
  steps: Step[]
}

export function writeReport(dir: string, resultsFile: string): void {
  const runs = readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .map((file) => JSON.parse(readFileSync(join(dir, file), 'utf8')) as Run)
    .sort((a, b) => a.when.localeCompare(b.when))
  writeSection(resultsFile, BEGIN, END, render(runs))
}

const s = (ms: number) => (ms / 1000).toFixed(2)

function render(runs: Run[]): string {
  const md: string[] = [BEGIN, '', '## Start latency with real pods (`npm run bench:node-start`)', '']
  md.push(
    'Written by `npm run bench:node-start` (bench/node-start/run.ts) from every run in `bench/out/node-start/`. Each run: the',
    "real node of `npm run test:node` (containerd + runc, CNI bridge, kube-proxy in iptables mode, kube-router's policies,",
    "CoreDNS; docs/real-node.md), the hook server in the benchmark's own process and the controller each run names: the",
    'Metacontroller stand-in, in that process too (it syncs one Challenge at a time, where Metacontroller runs `--workers`',
    'syncs at once: a burst queues in it), or Metacontroller itself (`METACONTROLLER_BIN`, with the flags of',
    '`manifests/metacontroller/`); with a pool, its pods are warm and ready before the first create. One',
    'namespace made like `manifests/challenges-namespace.yaml`, one definition of an app that listens at once (`tcp-echo`,',
    "egress `None`, exposed as a NodePort; the hook's default readiness probe: TCP, every second), one Challenge per owner.",
    'Each step is seen by the benchmark: the pods, Services and Challenges watched, each event timed as it arrives (runs',
    'that say "listed" read them every 100 ms instead, so up to 100 ms late; the objects\' own timestamps have one-second',
    'resolution), each node port tried every 50 ms from the moment its Service has one (a connection counts when it got',
    "the app's banner). Seconds; percentiles by nearest rank over the instances. The machine is shared: the load average",
    'is the 1-minute one at the first create and at the last instance Running.',
    '',
  )
  for (const run of runs) {
    const how =
      run.intervalMs === 0
        ? `created at once (the create calls took ${s(run.createdInMs)} s)`
        : `one created every ${run.intervalMs} ms`
    md.push(
      `### ${run.challenges} Challenges, ${how}: ${run.when.slice(0, 16).replace('T', ' ')} UTC, commit ${run.commit}`,
      '',
    )
    const pooled = (run.pool ?? 0) > 0
    const pool = pooled ? `a warm pool of ${run.pool}` : 'no pool'
    const rest =
      (run.restSeconds ?? 0) > 0
        ? `, the first create ${run.restSeconds} s after ${pooled ? 'it was warm' : 'the definition was made'}`
        : ''
    const seen = run.pollMs > 0 ? `listed every ${run.pollMs} ms` : 'watched'
    md.push(
      `${run.cpus}; load average ${run.loadBefore.toFixed(1)} → ${run.loadAfter.toFixed(1)}; \`ENDPOINT_SETTLE_MS\` ${run.endpointSettleMs}; ${run.controller ?? 'the Metacontroller stand-in'}; ${pool}${rest}; ${seen}.`,
      '',
    )
    md.push('| step | p50 | p90 | p99 | max |', '|---|---|---|---|---|')
    for (const step of run.steps)
      md.push(`| ${step.name} | ${s(step.p50)} | ${s(step.p90)} | ${s(step.p99)} | ${s(step.max)} |`)
    md.push('')
  }
  md.push(END)
  return md.join('\n')
}

if (process.argv[1]?.endsWith('node-start/report.ts')) {
  const root = new URL('../..', import.meta.url).pathname
  writeReport(join(root, 'bench/out/node-start'), join(root, 'bench/RESULTS.md'))
}
