/**
 * A pull's cost in the start of an instance, on the real node (run as bench:node-start is): ROUNDS rounds, one
 * instance at a time, each round a cold pull and its baseline in the same minute:
 *   cold     an instance of a copy of BENCH_IMAGE (http-app) pushed to the suite's registry just before
 *            (`registry push -unique`: a layer of its own, so nothing of it is on the node: the kubelet pulls,
 *            containerd downloads and unpacks);
 *   present  a second instance of the same reference, right after: the image is on the node ("already present").
 * Both go before the next round.
 * Measures, per instance, create → container running and create → Running (the Challenge's phase), seen by this
 * process polling every POLL_MS, and the kubelet's own figure for the pull (its `Pulled` event).
 *
 *   npm run bench:node-pulls                                         # 5 rounds of http-app (2.7 MB), BENCH_ROUNDS=N
 *   BENCH_IMAGE=coredns BENCH_PORT=53 npm run bench:node-pulls       # a larger image (CoreDNS, 79 MB: its default
 *                                                                    # server answers on port 53)
 *
 * Writes bench/out/node-pulls/<image>.json and prints the figures (bench/RESULTS.md has them, hand-written).
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { eventually } from '../../test/support/eventually.js'
import { repoRoot } from '../../test/support/kube/controlplane.js'
import {
  app,
  definition,
  kubeletSaid,
  startNodeSuite,
  type Json,
  type Scenario,
} from '../../test/support/node/harness.js'
import { pushImage } from '../../test/support/node/registry.js'
import { percentile } from '../rush/measure.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
/** The test image copied (a short name of controlplane/images/images.txt) and the port it listens on. */
const IMAGE = process.env.BENCH_IMAGE ?? 'http-app'
const PORT = Number(process.env.BENCH_PORT ?? 8080)
const POLL_MS = 50

interface Start {
  kind: 'cold' | 'present'
  instance: string
  /** ms after the create call */
  containerRunning: number
  running: number
  /** what the kubelet said of the image (its Pulled event) */
  kubelet: string
}

const suite = await startNodeSuite(t)

void t.test(`${ROUNDS} rounds of a cold pull and the same image present`, async (t) => {
  const s = await suite.scenario(t, 'node-pulls')
  const loadBefore = loadavg()
  const starts: Start[] = []
  for (let round = 1; round <= ROUNDS; round++) {
    const [image] = await pushImage(IMAGE, [`public/bench-${round}:1`], { unique: true })
    if (image === undefined) throw new Error('nothing pushed')
    await s.create(
      definition(`pull-${round}`, {
        pod: app(IMAGE, PORT, { image: image.reference }),
        expose: { type: 'NodePort', port: PORT },
        network: { egress: 'None' },
      }),
    )
    // An owner per instance (an owner holds one instance at a time), both removed before the next round.
    for (const [kind, owner] of [
      ['cold', `c${round}`],
      ['present', `w${round}`],
    ] as const) {
      const instance = `pull-${round}-u-${owner}`
      starts.push({ kind, instance, ...(await start(s, `pull-${round}`, owner, instance)) })
    }
    for (const owner of [`c${round}`, `w${round}`])
      await suite.rest.call(
        'DELETE',
        `/apis/challenge-hooks.dev/v1alpha1/namespaces/${s.ns}/challenges/pull-${round}-u-${owner}`,
      )
    await eventually(
      `round ${round}'s pods gone`,
      async () => (await s.list(`/api/v1/namespaces/${s.ns}/pods`)).length === 0,
      () => '',
      {
        timeoutMs: 60_000,
      },
    )
  }
  const loadAfter = loadavg()
  const figures = (kind: Start['kind'], key: 'containerRunning' | 'running') => {
    const values = starts.filter((x) => x.kind === kind).map((x) => x[key])
    return { median: percentile(values, 50), min: Math.min(...values), max: Math.max(...values) }
  }
  const summary = {
    when: new Date().toISOString(),
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim(),
    cpus: `${cpus()[0]?.model.trim()}, ${cpus().length} cores`,
    loadBefore: loadBefore[0],
    loadAfter: loadAfter[0],
    rounds: ROUNDS,
    image: IMAGE,
    pollMs: POLL_MS,
    cold: { containerRunning: figures('cold', 'containerRunning'), running: figures('cold', 'running') },
    present: { containerRunning: figures('present', 'containerRunning'), running: figures('present', 'running') },
    // Paired per round: the same image, cold then present, a minute apart at most.
    pullCostMs: starts
      .filter((x) => x.kind === 'cold')
      .map((cold, index) => {
        const present = starts.filter((x) => x.kind === 'present')[index] as Start
        return {
          containerRunning: cold.containerRunning - present.containerRunning,
          running: cold.running - present.running,
        }
      }),
    starts,
  }
  for (const x of starts)
    t.comment(
      `${x.kind.padEnd(7)} ${x.instance}: container running ${x.containerRunning} ms, Running ${x.running} ms; ${x.kubelet}`,
    )
  t.comment(
    `median create → container running: cold ${summary.cold.containerRunning.median} ms, present ${summary.present.containerRunning.median} ms`,
  )
  t.comment(
    `median create → Running: cold ${summary.cold.running.median} ms, present ${summary.present.running.median} ms`,
  )
  t.comment(
    `paired differences (cold − present): ${JSON.stringify(summary.pullCostMs)}; load ${loadBefore[0]?.toFixed(1)} → ${loadAfter[0]?.toFixed(1)}`,
  )
  // The figures mean something only if each cold start pulled and none of the others did.
  t.strictSame(
    starts.map((x) => [x.instance, x.kubelet.startsWith('Successfully pulled image ')]),
    starts.map((x) => [x.instance, x.kind === 'cold']),
    'the kubelet pulled for each cold start, and for no other',
  )
  const out = join(repoRoot, 'bench/out/node-pulls')
  mkdirSync(out, { recursive: true })
  writeFileSync(join(out, `${IMAGE}.json`), `${JSON.stringify(summary, null, 2)}\n`)
})

/** Creates the instance and waits until it is Running; when its container ran and when it was Running. */
async function start(
  s: Scenario,
  definitionName: string,
  owner: string,
  instance: string,
): Promise<Omit<Start, 'kind' | 'instance'>> {
  const createdAt = Date.now()
  await s.create(s.challenge(definitionName, owner))
  let containerRunning = -1
  for (;;) {
    const now = Date.now()
    if (now - createdAt > 180_000) throw new Error(`${instance} not Running within 3 minutes`)
    const [pods, status] = await Promise.all([s.list(`/api/v1/namespaces/${s.ns}/pods`), s.status(instance)])
    const pod = pods.find((one) => one.metadata.labels?.['challenge-hooks.dev/instance'] === instance)
    const app = (((pod?.status as Json | undefined)?.containerStatuses ?? []) as Json[]).find((c) => c.name === 'app')
    if (containerRunning < 0 && (app?.state as Json | undefined)?.running !== undefined)
      containerRunning = now - createdAt
    if (status.phase === 'Running') {
      const [pulled] = await kubeletSaid(s, instance, 'Pulled')
      return { containerRunning, running: now - createdAt, kubelet: pulled ?? '(no Pulled event)' }
    }
    if (status.phase === 'Error') throw new Error(`${instance}: ${JSON.stringify(status)}`)
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
}
