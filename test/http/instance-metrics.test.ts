// The instance metrics of /metrics, from the answers of one instance's life driven through the app with a clock:
// where its start's time went (queue, scheduling, starting, readiness, endpoint), the phase it was last answered
// with, since when it waits, and its transitions. The expected seconds come from the instants this test sets.
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { Registry } from 'prom-client'
import { createInstanceMetrics, INSTANCE_TTL_MS, MAX_INSTANCES } from '../../src/http/instance-metrics.js'
import { buildTestApp } from '../helpers/app.js'
import { T0 } from '../helpers/instant.js'
import { CREATED, liveToRunning, post, readyChildren } from '../helpers/lives.js'
import { challenge, syncRequest } from '../helpers/world.js'

/** The value of one series of the /metrics text, by its exact name and labels; undefined when absent. */
async function series(app: FastifyInstance, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const text = (await app.ops.inject({ method: 'GET', url: '/metrics' })).body
  const wanted = `${name}{${Object.entries(labels)
    .map(([key, value]) => `${key}="${value}"`)
    .join(',')}}`
  const line = text.split('\n').find((each) => each.startsWith(`${wanted} `))
  return line === undefined ? undefined : Number(line.slice(wanted.length + 1))
}

async function seriesNamed(app: FastifyInstance, name: string): Promise<string[]> {
  const text = (await app.ops.inject({ method: 'GET', url: '/metrics' })).body
  return text.split('\n').filter((line) => line.startsWith(`${name}{`))
}

async function live(t: Test) {
  const clock = { now: new Date(T0) }
  const app = await buildTestApp(t, {}, () => clock.now)
  return { app, clock, ...(await liveToRunning(app, clock)) }
}

t.test('a start: each step observed once, per definition, with the seconds between its instants', async (t) => {
  const { app, running } = await live(t)
  t.equal(running.status.phase, 'Running')
  const labels = { namespace: 'challenges', definition: 'web-login' }
  // queue 11:59:00 → 12:00:00, scheduling → :02, starting → :05, readiness → :09, endpoint → :20
  const expected: Record<string, number> = { queue: 60, scheduling: 2, starting: 3, readiness: 4, endpoint: 11 }
  for (const [phase, seconds] of Object.entries(expected)) {
    t.strictSame(
      await series(app, 'challenge_hooks_start_phase_seconds_sum', { ...labels, phase }),
      seconds,
      `${phase}: ${seconds} s`,
    )
    t.strictSame(await series(app, 'challenge_hooks_start_phase_seconds_count', { ...labels, phase }), 1)
  }
  t.strictSame(await series(app, 'challenge_hooks_start_seconds_sum', labels), 80, 'created to Running')
  t.strictSame(await series(app, 'challenge_hooks_start_seconds_bucket', { le: '60', ...labels }), 0)
  t.strictSame(await series(app, 'challenge_hooks_start_seconds_bucket', { le: '120', ...labels }), 1)
})

t.test('the same Running answered again is not a second start; a restart is, without a queue step', async (t) => {
  const { app, clock, parent, definition, running, ready } = await live(t)
  const runningParent = { ...parent, status: running.status }
  clock.now = new Date(T0 + 30_000)
  await post(app, '/sync', syncRequest(runningParent, { related: [definition], children: ready }))
  t.strictSame(
    await series(app, 'challenge_hooks_start_seconds_count', { namespace: 'challenges', definition: 'web-login' }),
    1,
    'still one start',
  )

  // The restart: run 1, admitted at :40, its new pod scheduled :41, started :42, ready :43; Running at :50.
  const restarted = { ...runningParent, spec: { ...runningParent.spec, restarts: 1 } }
  clock.now = new Date(T0 + 40_000)
  const pending = await post(app, '/sync', syncRequest(restarted, { related: [definition], children: ready }))
  t.equal(pending.status.run, 1)
  const newPod = { scheduled: '2026-11-22T12:00:41Z', started: '2026-11-22T12:00:42Z', ready: '2026-11-22T12:00:43Z' }
  const again = readyChildren(pending, newPod)
  clock.now = new Date(T0 + 50_000)
  const back = await post(
    app,
    '/sync',
    syncRequest({ ...restarted, status: pending.status }, { related: [definition], children: again }),
  )
  t.strictSame({ phase: back.status.phase, run: back.status.run }, { phase: 'Running', run: 1 })
  const labels = { namespace: 'challenges', definition: 'web-login' }
  t.strictSame(
    await series(app, 'challenge_hooks_start_phase_seconds_count', { ...labels, phase: 'queue' }),
    1,
    'a restart has no queue step',
  )
  t.strictSame(await series(app, 'challenge_hooks_start_phase_seconds_sum', { ...labels, phase: 'scheduling' }), 2 + 1)
  t.strictSame(await series(app, 'challenge_hooks_start_phase_seconds_sum', { ...labels, phase: 'endpoint' }), 11 + 7)
  t.strictSame(
    await series(app, 'challenge_hooks_start_seconds_sum', labels),
    80 + 10,
    'a restart counts from its admission',
  )
})

t.test(
  'the instance as last answered: phase, reason, when, since when it waits; gone once finalized or silent for an hour',
  async (t) => {
    const { app, clock, parent, definition, first, running, ready } = await live(t)
    const key = { namespace: 'challenges', challenge: 'web-login-u-alice', definition: 'web-login' }
    t.strictSame(await seriesNamed(app, 'challenge_hooks_instance_answered_timestamp_seconds'), [
      `challenge_hooks_instance_answered_timestamp_seconds{namespace="challenges",challenge="web-login-u-alice",definition="web-login",phase="Running",reason="Ready"} ${(T0 + 20_000) / 1000}`,
    ])
    t.strictSame(
      await seriesNamed(app, 'challenge_hooks_instance_pending_since_timestamp_seconds'),
      [],
      'not waiting any more',
    )
    t.strictSame(
      await series(app, 'challenge_hooks_transitions_total', { phase: 'Pending', reason: 'Starting' }),
      1,
      'entered Pending/Starting once',
    )
    t.strictSame(await series(app, 'challenge_hooks_transitions_total', { phase: 'Running', reason: 'Ready' }), 1)
    t.equal(first.status.phase, 'Pending')

    // A second instance, first synced 25 s in: not Ready since it was made.
    const bob = challenge({
      name: 'web-login-u-bob',
      owner: 'bob',
      uid: '0b0b0b0b-0000-4000-8000-000000000001',
      createdAt: CREATED,
    })
    clock.now = new Date(T0 + 25_000)
    await post(app, '/sync', syncRequest(bob, { related: [definition] }))
    t.strictSame(
      await series(app, 'challenge_hooks_instance_pending_since_timestamp_seconds', {
        ...key,
        challenge: 'web-login-u-bob',
        reason: 'Starting',
      }),
      Date.parse(CREATED) / 1000,
    )

    // Deleted: the finalize answer that finalizes forgets the instance.
    const deleting = {
      ...parent,
      status: running.status,
      metadata: { ...parent.metadata, deletionTimestamp: '2026-11-22T12:00:30Z' },
    }
    clock.now = new Date(T0 + 30_000)
    const step1 = await post(
      app,
      '/finalize',
      syncRequest(deleting, { related: [definition], children: ready, finalizing: true }),
    )
    t.equal(step1.finalized, false)
    t.ok(
      await series(app, 'challenge_hooks_instance_answered_timestamp_seconds', {
        ...key,
        phase: 'Terminating',
        reason: 'Deleting',
      }),
      'Terminating while children remain',
    )
    const done = await post(
      app,
      '/finalize',
      syncRequest({ ...deleting, status: step1.status }, { related: [definition], children: [], finalizing: true }),
    )
    t.equal(done.finalized, true)
    const left = await seriesNamed(app, 'challenge_hooks_instance_answered_timestamp_seconds')
    t.strictSame(
      left.map((line) => /challenge="([^"]+)"/.exec(line)?.[1]),
      ['web-login-u-bob'],
      'only bob is left',
    )

    clock.now = new Date(T0 + 25_000 + INSTANCE_TTL_MS)
    t.strictSame(
      await seriesNamed(app, 'challenge_hooks_instance_answered_timestamp_seconds'),
      [],
      'an hour without an answer: forgotten',
    )
    t.strictSame(await seriesNamed(app, 'challenge_hooks_instance_pending_since_timestamp_seconds'), [])
  },
)

t.test('at most MAX_INSTANCES are remembered: the least recently answered go first', async (t) => {
  const registry = new Registry()
  const clock = { now: new Date(T0) }
  const metrics = createInstanceMetrics(registry, () => clock.now)
  const answer = { status: { phase: 'Pending', reason: 'Starting', run: 0, conditions: [] }, children: [] }
  const request = (index: number) => {
    const parent = challenge({ name: `c-${index}`, uid: `uid-${index}` })
    return syncRequest(parent)
  }
  for (let index = 0; index <= MAX_INSTANCES; index++) metrics.observe(request(index), answer, clock.now)
  const lines = (await registry.getSingleMetricAsString('challenge_hooks_instance_answered_timestamp_seconds'))
    .split('\n')
    .filter((line) => line.startsWith('challenge_hooks_'))
  t.equal(lines.length, MAX_INSTANCES)
  t.notOk(
    lines.some((line) => line.includes('challenge="c-0"')),
    'the first answered is forgotten',
  )
  t.ok(
    lines.some((line) => line.includes(`challenge="c-${MAX_INSTANCES}"`)),
    'the last one is kept',
  )
})
