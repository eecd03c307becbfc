// End to end, over real HTTP: the owner budget (OWNER_BUDGET=1): one instance runs, the next one queues
// without children and is admitted by itself when the first ends.
import t, { type Test } from 'tap'
import { netcatChildren, NS, startWorld, webChildren, type World } from './harness.js'

const WEB = 'web-login-u-alice'
const PWN = 'pwn-echo-u-alice'

async function budgetWorld(t: Test): Promise<World> {
  const world = await startWorld(t, { env: { OWNER_BUDGET: '1' } })
  world.cluster.create(world.definition('web-login'))
  world.cluster.create(world.definition('pwn-echo'))
  return world
}

/** Web first (Running), pwn-echo ten seconds later (Queued). */
async function oneRunningOneQueued(t: Test): Promise<World> {
  const world = await budgetWorld(t)
  world.cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  await world.settle(t)
  t.hasStrict(world.status(WEB), { phase: 'Running' })
  world.cluster.advance(10)
  world.cluster.create(world.challenge('pwn-echo', 'alice'))
  await world.run(t)
  const queued = world.status(PWN)
  t.hasStrict(queued, {
    phase: 'Pending',
    reason: 'Queued',
    message: 'Waiting for another of your instances to end: 1 of your 1 unit is in use, and this challenge needs 1.',
  })
  t.notOk('admittedAt' in queued)
  t.strictSame(world.children(PWN), [], 'a queued instance has no children')
  t.hasStrict(world.status(WEB), { phase: 'Running' }, 'the first one is untouched')
  await world.assertQuiet(t)
  t.equal(world.cluster.settle(), 0)
  return world
}

t.test('stopping the running instance admits the queued one by itself', async (t) => {
  const world = await oneRunningOneQueued(t)
  world.cluster.advance(20)
  world.patchSpec(WEB, { desiredState: 'Stopped' })
  await world.run(t)
  t.hasStrict(world.status(WEB), { phase: 'Deleted', reason: 'Stopped' })
  t.hasStrict(
    world.status(PWN),
    { phase: 'Pending', reason: 'Starting', admittedAt: '2025-01-01T00:00:30Z' },
    'admitted with no other nudge',
  )
  t.strictSame(world.children(PWN), netcatChildren(PWN))
  await world.settle(t)
  t.hasStrict(world.status(PWN), { phase: 'Running', reason: 'Ready' })
  await world.settle(t)
  t.strictSame(world.children(WEB), [], 'the stopped one is torn down')
  await world.assertQuiet(t)
})

t.test('deleting the running instance admits the queued one by itself', async (t) => {
  const world = await oneRunningOneQueued(t)
  world.cluster.delete({ apiVersion: 'challenge-hooks.dev/v1alpha1', kind: 'Challenge', namespace: NS, name: WEB })
  await world.run(t)
  t.hasStrict(world.status(PWN), { phase: 'Pending', reason: 'Starting' }, 'a Challenge being deleted holds no budget')
  await world.settle(t)
  await world.settle(t)
  t.equal(world.get(WEB), undefined, 'the deleted one is gone')
  t.hasStrict(world.status(PWN), { phase: 'Running', reason: 'Ready' })
  await world.assertQuiet(t)
})

/** Which of the two are admitted (hold children), and which are queued. */
function admission(world: World): { admitted: string[]; queued: string[] } {
  const names = [WEB, PWN]
  return {
    admitted: names.filter((name) => world.status(name).admittedAt !== undefined && world.children(name).length > 0),
    queued: names.filter((name) => world.status(name).reason === 'Queued' && world.children(name).length === 0),
  }
}

for (const first of [WEB, PWN]) {
  t.test(`two created in the same second, ${first} reconciled first: exactly one admitted`, async (t) => {
    const world = await budgetWorld(t)
    world.cluster.create(world.challenge('web-login', 'alice'))
    world.cluster.create(world.challenge('pwn-echo', 'alice'))
    t.equal(
      world.get(WEB)?.metadata.creationTimestamp,
      world.get(PWN)?.metadata.creationTimestamp,
      'same creationTimestamp',
    )
    await world.sim.reconcile(NS, first)
    await world.run(t)
    await world.settle(t)
    const { admitted, queued } = admission(world)
    t.equal(admitted.length, 1, `exactly one admitted: ${admitted.join(', ')}`)
    t.equal(queued.length, 1, `the other one queued: ${queued.join(', ')}`)
    // Both were visible to each other: the deterministic order (creationTimestamp, then name) decides.
    t.strictSame(admitted, [PWN])
    t.hasStrict(world.status(PWN), { phase: 'Running' })
    await world.assertQuiet(t)
  })
}

for (const first of [WEB, PWN]) {
  t.test(`two created in the same second, ${first} admitted before the other exists: it keeps its slot`, async (t) => {
    const world = await budgetWorld(t)
    const [definition, other] =
      first === WEB ? (['web-login', 'pwn-echo'] as const) : (['pwn-echo', 'web-login'] as const)
    world.cluster.create(world.challenge(definition, 'alice'))
    await world.run(t)
    world.cluster.create(world.challenge(other, 'alice'))
    await world.run(t)
    await world.settle(t)
    const { admitted, queued } = admission(world)
    t.strictSame(admitted, [first], 'the one reconciled first wins')
    t.equal(queued.length, 1)
    t.hasStrict(world.status(first), { phase: 'Running' })
    t.strictSame(world.children(first), first === WEB ? webChildren(WEB) : netcatChildren(PWN))
    await world.assertQuiet(t)
  })
}

/** The same owner in two namespaces: pwn-echo in a second one, `challenges-baseline`. */
async function twoNamespaces(
  t: Test,
  components: string[],
): Promise<{ world: World; otherStatus: () => Record<string, unknown> }> {
  const world = await startWorld(t, { components, env: { OWNER_BUDGET: '1' } })
  const other = 'challenges-baseline'
  const inOther = <T extends { metadata: { namespace?: string } }>(object: T): T => ({
    ...object,
    metadata: { ...object.metadata, namespace: other },
  })
  world.cluster.create(world.definition('web-login'))
  world.cluster.create(inOther(world.definition('pwn-echo')))
  world.cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  await world.settle(t)
  t.hasStrict(world.status(WEB), { phase: 'Running' })
  world.cluster.advance(10)
  world.cluster.create(inOther(world.challenge('pwn-echo', 'alice')))
  await world.run(t)
  const ref = { apiVersion: 'challenge-hooks.dev/v1alpha1', kind: 'Challenge', namespace: other, name: PWN }
  return { world, otherStatus: () => (world.cluster.get(ref)?.status ?? {}) as Record<string, unknown> }
}

t.test('OWNER_BUDGET counts in each namespace apart by default: the owner holds one in each', async (t) => {
  const { otherStatus } = await twoNamespaces(t, [])
  t.hasStrict(otherStatus(), { phase: 'Pending', reason: 'Starting' }, 'the other namespace has its own budget')
})

t.test(
  "budget-across-namespaces: the owner's instance in another namespace counts, and queues the second",
  async (t) => {
    const { world, otherStatus } = await twoNamespaces(t, ['budget-across-namespaces'])
    t.hasStrict(otherStatus(), {
      phase: 'Pending',
      reason: 'Queued',
      message: 'Waiting for another of your instances to end: 1 of your 1 unit is in use, and this challenge needs 1.',
    })
    // The first one ends: the queued one, in the other namespace, is admitted by itself (its related rule selects
    // the owner's Challenges everywhere, so the status write of the first re-syncs it).
    world.cluster.advance(20)
    world.patchSpec(WEB, { desiredState: 'Stopped' })
    await world.run(t)
    t.hasStrict(otherStatus(), { phase: 'Pending', reason: 'Starting', admittedAt: '2025-01-01T00:00:30Z' })
  },
)
