// End to end, over real HTTP: the platform's buttons (renew, restart, stop) and the time gates (deadline,
// availableFrom), as a player refreshing the page reads them.
import t, { type Test } from 'tap'
import { conditionOf, deletedBy, NS, secondsUntil, startWorld, syncsOf, webChildren, type World } from './harness.js'

const NAME = 'web-login-u-alice'

async function runningWeb(
  t: Test,
  challengeSpec: Record<string, unknown> = {},
  definitionSpec: Record<string, unknown> = {},
): Promise<World> {
  const world = await startWorld(t)
  world.cluster.create(world.definition('web-login', definitionSpec))
  world.cluster.create(world.challenge('web-login', 'alice', challengeSpec))
  await world.run(t)
  await world.settle(t)
  t.hasStrict(world.status(NAME), { phase: 'Running', reason: 'Ready', startedAt: '2025-01-01T00:00:00Z' })
  return world
}

t.test('renew: accepted while Running and below maxRenewals, refused at maxRenewals', async (t) => {
  const world = await runningWeb(t)
  t.hasStrict(world.status(NAME), { expiresAt: '2025-01-01T00:30:00Z', renewalsSeen: 0, renewalsApplied: 0 })
  t.notOk(conditionOf(world.status(NAME), 'RenewalAccepted'), 'no renewal condition before one is asked for')

  await world.advance(t, 600)
  world.patchSpec(NAME, { renewals: 1 })
  await world.run(t)
  let status = world.status(NAME)
  t.hasStrict(status, {
    phase: 'Running',
    reason: 'Ready',
    lastRenewedAt: '2025-01-01T00:10:00Z',
    expiresAt: '2025-01-01T00:40:00Z',
    message: 'The instance is running until 2025-01-01T00:40:00Z.',
    renewalsSeen: 1,
    renewalsApplied: 1,
    startedAt: '2025-01-01T00:00:00Z',
  })
  t.hasStrict(conditionOf(status, 'RenewalAccepted'), {
    status: 'True',
    reason: 'Renewed',
    message: 'Renewal 1 of 2 accepted.',
  })
  await world.assertQuiet(t)

  await world.advance(t, 600)
  world.patchSpec(NAME, { renewals: 2 })
  await world.run(t)
  t.hasStrict(world.status(NAME), {
    lastRenewedAt: '2025-01-01T00:20:00Z',
    expiresAt: '2025-01-01T00:50:00Z',
    renewalsApplied: 2,
  })
  t.hasStrict(
    conditionOf(world.status(NAME), 'RenewalAccepted'),
    { status: 'True', message: 'Renewal 2 of 2 accepted.', lastTransitionTime: '2025-01-01T00:10:00Z' },
    'lastTransitionTime moves only when the condition status flips',
  )
  t.hasStrict(conditionOf(world.status(NAME), 'Ready'), { status: 'True', lastTransitionTime: '2025-01-01T00:00:00Z' })

  await world.advance(t, 600)
  world.patchSpec(NAME, { renewals: 3 })
  await world.run(t)
  status = world.status(NAME)
  t.hasStrict(status, {
    phase: 'Running',
    lastRenewedAt: '2025-01-01T00:20:00Z',
    expiresAt: '2025-01-01T00:50:00Z',
    renewalsSeen: 3,
    renewalsApplied: 2,
  })
  t.hasStrict(conditionOf(status, 'RenewalAccepted'), {
    status: 'False',
    reason: 'MaxRenewalsReached',
    lastTransitionTime: '2025-01-01T00:30:00Z',
  })
  await world.assertQuiet(t)

  // The refused renewal changed nothing: the instance ends at the last accepted expiry.
  await world.advance(t, secondsUntil(world.cluster, status.expiresAt))
  t.hasStrict(world.status(NAME), { phase: 'Deleted', reason: 'Expired', finishedAt: '2025-01-01T00:50:00Z' })
})

t.test('restart: run + 1, a new pod, Running again with the same flag', async (t) => {
  const world = await runningWeb(t)
  const { cluster } = world
  const flagRef = { apiVersion: 'v1', kind: 'Secret', namespace: NS, name: `${NAME}-flag` }
  const flag = (cluster.get(flagRef)?.data as Record<string, string>).flag
  const podRef = { apiVersion: 'v1', kind: 'Pod', namespace: NS, name: NAME }
  const firstUid = cluster.get(podRef)?.metadata.uid
  t.ok(firstUid, 'the first run has a pod')
  await world.advance(t, 300)
  world.patchSpec(NAME, { renewals: 1 })
  await world.run(t)
  t.hasStrict(world.status(NAME), { renewalsApplied: 1 })

  world.patchSpec(NAME, { restarts: 1 })
  await world.run(t)
  const restarting = world.status(NAME)
  t.hasStrict(restarting, {
    phase: 'Pending',
    reason: 'Starting',
    run: 1,
    admittedAt: '2025-01-01T00:05:00Z',
    renewalsApplied: 0,
    renewalsSeen: 1,
  })
  for (const field of ['startedAt', 'lastRenewedAt', 'expiresAt', 'endpoint', 'finishedAt'])
    t.notOk(field in restarting, `${field} reset`)
  t.notOk(conditionOf(restarting, 'RenewalAccepted'), 'conditions start afresh')
  const podOfRun = cluster.get(podRef)
  t.equal(
    podOfRun?.metadata.annotations?.['challenge-hooks.dev/run'],
    '0',
    'the pod of the old run is still there (terminating: Recreate deletes it first)',
  )
  t.not(podOfRun?.metadata.deletionTimestamp, undefined, 'and is being deleted')
  t.strictSame(world.children(NAME), webChildren(NAME))

  // Recreate: the old pod goes first, the new one starts once it is gone.
  await world.settle(t)
  t.hasStrict(world.status(NAME), { phase: 'Pending', reason: 'Starting', run: 1 })
  await world.settle(t)
  t.strictSame(world.pods(NAME), [`Pod/${NAME}`], 'one pod, named for the Challenge')
  const newPod = cluster.get(podRef)
  t.not(newPod?.metadata.uid, firstUid, 'a new pod')
  t.equal(newPod?.metadata.annotations?.['challenge-hooks.dev/run'], '1', 'of the new run')
  t.hasStrict(world.status(NAME), {
    phase: 'Running',
    reason: 'Ready',
    run: 1,
    startedAt: '2025-01-01T00:05:00Z',
    expiresAt: '2025-01-01T00:35:00Z',
  })
  t.equal(
    (cluster.get(flagRef)?.data as Record<string, string>).flag,
    flag,
    'the PerOwner flag is the same in every run',
  )
  await world.assertQuiet(t)
  t.equal(cluster.settle(), 0)
})

t.test('restart relaunches a Deleted instance', async (t) => {
  const world = await runningWeb(t)
  await world.advance(t, 1800)
  t.hasStrict(world.status(NAME), { phase: 'Deleted', reason: 'Expired' })
  await world.settle(t)
  await world.settle(t)
  t.strictSame(world.children(NAME), [])
  world.patchSpec(NAME, { restarts: 1 })
  await world.run(t)
  t.hasStrict(world.status(NAME), { phase: 'Pending', reason: 'Starting', run: 1 })
  t.notOk('finishedAt' in world.status(NAME))
  await world.settle(t)
  t.hasStrict(world.status(NAME), { phase: 'Running', run: 1, startedAt: '2025-01-01T00:30:00Z' })
  await world.assertQuiet(t)
})

t.test('stop with stopReason Solved: Deleted/Solved, the workload torn down, the record kept', async (t) => {
  const world = await runningWeb(t)
  await world.advance(t, 420)
  const from = world.sim.history.length
  world.patchSpec(NAME, { desiredState: 'Stopped', stopReason: 'Solved' })
  await world.run(t)
  const status = world.status(NAME)
  t.hasStrict(status, {
    phase: 'Deleted',
    reason: 'Solved',
    message: 'The instance was stopped: "Solved".',
    startedAt: '2025-01-01T00:00:00Z',
    finishedAt: '2025-01-01T00:07:00Z',
  })
  t.notOk('endpoint' in status)
  t.hasStrict(conditionOf(status, 'Expired'), { status: 'False' }, 'stopped is not expired')
  const steps = syncsOf(world.sim, NAME, from)
    .map(deletedBy)
    .filter((deleted) => deleted.length > 0)
  t.strictSame(steps, [[`Ingress/${NAME}`, `Service/${NAME}`], [`Pod/${NAME}`]])
  await world.settle(t)
  await world.settle(t)
  t.strictSame(world.children(NAME), [])
  t.strictSame(world.pods(NAME), [])
  t.hasStrict(world.status(NAME), { phase: 'Deleted', reason: 'Solved', finishedAt: '2025-01-01T00:07:00Z' })
  await world.assertQuiet(t)
})

t.test('stop without a reason: Deleted/Stopped', async (t) => {
  const world = await runningWeb(t)
  world.patchSpec(NAME, { desiredState: 'Stopped' })
  await world.run(t)
  t.hasStrict(world.status(NAME), { phase: 'Deleted', reason: 'Stopped', message: 'The instance was stopped.' })
  await world.assertQuiet(t)
})

t.test('spec.deadline caps expiresAt; at the deadline the instance is Deleted/PastDeadline', async (t) => {
  const world = await runningWeb(t, { deadline: '2025-01-01T00:10:00Z' })
  t.hasStrict(world.status(NAME), {
    expiresAt: '2025-01-01T00:10:00Z',
    message: 'The instance is running until 2025-01-01T00:10:00Z.',
  })
  await world.advance(t, 599)
  t.hasStrict(world.status(NAME), { phase: 'Running' })
  await world.advance(t, 1)
  const status = world.status(NAME)
  t.hasStrict(status, {
    phase: 'Deleted',
    reason: 'PastDeadline',
    message: 'The challenge is past its deadline.',
    finishedAt: '2025-01-01T00:10:00Z',
  })
  t.hasStrict(conditionOf(status, 'Expired'), { status: 'True', reason: 'PastDeadline' })
  await world.settle(t)
  await world.settle(t)
  t.strictSame(world.children(NAME), [])
  await world.assertQuiet(t)
})

t.test('availableFrom: Pending/NotYetAvailable without children, admitted at availableFrom', async (t) => {
  const world = await startWorld(t)
  const { cluster, sim } = world
  cluster.create(world.definition('web-login', { availableFrom: '2025-01-01T01:00:00Z' }))
  cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  const waiting = world.status(NAME)
  t.hasStrict(waiting, {
    phase: 'Pending',
    reason: 'NotYetAvailable',
    message: 'The challenge opens at 2025-01-01T01:00:00Z.',
  })
  t.notOk('admittedAt' in waiting, 'holds no budget')
  t.strictSame(world.children(NAME), [])
  await world.assertQuiet(t)
  t.equal(cluster.settle(), 0)

  await world.advance(t, 3599)
  t.hasStrict(world.status(NAME), { phase: 'Pending', reason: 'NotYetAvailable' })
  t.strictSame(world.children(NAME), [])
  t.equal(sim.scheduledAt(NS, NAME)?.toISOString(), '2025-01-01T01:00:00.000Z', 'woken at availableFrom')
  await world.advance(t, 1)
  t.hasStrict(world.status(NAME), { phase: 'Pending', reason: 'Starting', admittedAt: '2025-01-01T01:00:00Z' })
  t.strictSame(world.children(NAME), webChildren(NAME))
  await world.settle(t)
  t.hasStrict(world.status(NAME), { phase: 'Running', startedAt: '2025-01-01T01:00:00Z' })
  await world.assertQuiet(t)
})
