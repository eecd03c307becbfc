// End to end, over real HTTP: a sync costs O(the instance), not O(the catalogue). The customize hook asks for
// the instance's own definition only; siblings' costs travel in their status.cost.
import t from 'tap'
import { NS, startWorld, syncsOf, type World } from './harness.js'

const WEB = 'web-login-u-alice'

/** Bytes of the last sync request Metacontroller sent for `name` (what goes over the wire). */
function lastSyncBytes(world: World, name: string): number {
  const request = syncsOf(world.sim, name).findLast((result) => result.request !== undefined)?.request
  return Buffer.byteLength(JSON.stringify(request))
}

/** A Running instance of web-login for alice in a namespace holding `extra` other definitions. */
async function runningBeside(t: Parameters<typeof startWorld>[0], extra: number): Promise<World> {
  const world = await startWorld(t)
  world.create(world.definition('web-login'))
  for (let index = 0; index < extra; index++)
    world.create(world.definition('pwn-echo', { cost: 1 + (index % 3) }, `other-${index}`))
  world.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  await world.settle(t)
  t.hasStrict(world.status(WEB), { phase: 'Running', cost: 1 })
  return world
}

t.test('300 more definitions in the namespace add less than 10 % to a sync request', async (t) => {
  const alone = await runningBeside(t, 0)
  const crowded = await runningBeside(t, 300)
  const [small, large] = [lastSyncBytes(alone, WEB), lastSyncBytes(crowded, WEB)]
  t.ok(small > 1000, `a sync request is measured (${small} bytes)`)
  t.ok(large < small * 1.1, `with 300 more definitions: ${large} bytes against ${small} (< 10 % more)`)
  const related = syncsOf(crowded.sim, WEB).findLast((result) => result.request !== undefined)?.request?.related ?? {}
  const definitions = Object.values(related['ChallengeDefinition.challenge-hooks.dev/v1alpha1'] ?? {})
  t.strictSame(
    definitions.map((definition) => definition.metadata.name),
    ['web-login'],
    'only its own definition is related',
  )
})

t.test('an edit of one definition re-syncs only its own instances', async (t) => {
  const world = await startWorld(t, { env: { OWNER_BUDGET: '5' } })
  world.create(world.definition('web-login'))
  world.create(world.definition('pwn-echo'))
  world.create(world.challenge('web-login', 'alice'))
  world.create(world.challenge('pwn-echo', 'bob'))
  await world.run(t)
  await world.settle(t)
  t.equal(await world.sim.runUntilQuiet(), 0, 'quiet before the edit')
  const before = { web: syncsOf(world.sim, WEB).length, pwn: syncsOf(world.sim, 'pwn-echo-u-bob').length }
  const stored = world.cluster.get({
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    namespace: NS,
    name: 'pwn-echo',
  })
  world.cluster.update(
    { ...stored, spec: { ...(stored?.spec as object), displayName: 'Echo, edited' } } as never,
    'kubectl-client-side-apply',
  )
  await world.run(t)
  t.ok(syncsOf(world.sim, 'pwn-echo-u-bob').length > before.pwn, "the edited definition's instance was synced")
  t.equal(syncsOf(world.sim, WEB).length, before.web, "the other definition's instance was not")
  await world.assertQuiet(t)
})

t.test("the budget reads siblings' costs from their status: a cost change applies to the next admission", async (t) => {
  const world = await startWorld(t, { env: { OWNER_BUDGET: '3' } })
  world.create(world.definition('web-login', { cost: 2 }))
  world.create(world.definition('pwn-echo', { cost: 2 }))
  world.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  await world.settle(t)
  t.hasStrict(world.status(WEB), { phase: 'Running', cost: 2 })
  world.cluster.advance(5)
  world.create(world.challenge('pwn-echo', 'alice'))
  await world.run(t)
  t.hasStrict(world.status('pwn-echo-u-alice'), { phase: 'Pending', reason: 'Queued', cost: 2 }, '2 + 2 > 3: queued')

  // The author lowers web-login's cost: its instance writes the new cost, which re-syncs the queued sibling.
  const stored = world.cluster.get({
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    namespace: NS,
    name: 'web-login',
  })
  world.cluster.update(
    { ...stored, spec: { ...(stored?.spec as object), cost: 1 } } as never,
    'kubectl-client-side-apply',
  )
  await world.run(t)
  t.hasStrict(
    world.status(WEB),
    { phase: 'Running', cost: 1 },
    'the running instance keeps running and carries the new cost',
  )
  t.hasStrict(
    world.status('pwn-echo-u-alice'),
    { phase: 'Pending', reason: 'Starting' },
    '1 + 2 fit: admitted by itself',
  )
  await world.settle(t)
  t.hasStrict(world.status('pwn-echo-u-alice'), { phase: 'Running' })
  await world.assertQuiet(t)
})
