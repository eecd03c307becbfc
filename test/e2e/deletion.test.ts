// End to end, over real HTTP: deleting a running Challenge (the finalize hook): Terminating/Deleting, ordered
// teardown, and the finalizer removed only once no child is left.
import t from 'tap'
import { challengeRef, deletedBy, deletionLog, FINALIZER, firstGone, lastGone, NS, startWorld, syncsOf, webChildren } from './harness.js'

const NAME = 'web-login-u-alice'

t.test('delete a Running Challenge: Terminating/Deleting, ordered teardown, finalizer last, object gone', async (t) => {
  const world = await startWorld(t)
  const { cluster, sim } = world
  cluster.create(world.definition('web-login'))
  cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  await world.settle(t)
  t.match(world.status(NAME), { phase: 'Running' })
  await world.advance(t, 90)

  const log = deletionLog(cluster)
  t.teardown(log.stop)
  const from = sim.history.length
  cluster.delete(challengeRef(NAME))
  t.ok(world.get(NAME)?.metadata.deletionTimestamp, 'marked for deletion, kept by the finalizer')
  await world.run(t)

  const terminating = world.status(NAME)
  t.match(terminating, {
    phase: 'Terminating',
    reason: 'Deleting',
    message: 'The instance is being deleted.',
    startedAt: '2025-01-01T00:00:00Z',
    finishedAt: '2025-01-01T00:01:30Z',
  })
  t.notOk('endpoint' in terminating)
  t.same(world.get(NAME)?.metadata.finalizers, [FINALIZER], 'the finalizer stays while children remain')
  const finalizes = syncsOf(sim, NAME, from)
  t.ok(finalizes.every((result) => result.hook === 'finalize' && result.request?.finalizing === true), 'only the finalize hook is called')
  t.same(
    finalizes.map(deletedBy).filter((deleted) => deleted.length > 0),
    [[`Ingress/${NAME}`, `Service/${NAME}`], [`Deployment/${NAME}`]],
    'traffic path first, then the workload',
  )
  t.ok(finalizes.every((result) => result.answer?.finalized === false), 'not finalized while children are observed')
  t.same(world.children(NAME), [`NetworkPolicy/${NAME}-expose`, `NetworkPolicy/${NAME}-isolate`, `Secret/${NAME}-flag`])
  t.equal(world.pods(NAME).length, 1, 'the pod is still there')
  t.equal(finalizes.at(-1)?.resyncAfterSeconds, 10, 'a waiting finalize asks to be called again')

  // The pod is collected (terminating) in one settle step, and gone in the next.
  await world.settle(t)
  t.equal(world.pods(NAME).length, 1)
  t.same(world.get(NAME)?.metadata.finalizers, [FINALIZER])
  t.same(world.children(NAME).length, 3, 'a terminating pod stays isolated and keeps its flag')
  await world.advance(t, 10)
  t.same(world.get(NAME)?.metadata.finalizers, [FINALIZER], 'still waiting for the pod')
  t.match(world.status(NAME), { phase: 'Terminating', reason: 'Deleting', finishedAt: '2025-01-01T00:01:30Z' }, 'finishedAt is sticky')

  cluster.settle()
  await sim.runUntilQuiet()
  t.equal(world.get(NAME), undefined, 'the Challenge is gone')
  t.same(world.pods(NAME), [])
  t.same(cluster.all().filter((object) => object.kind !== 'ChallengeDefinition' && object.kind !== 'CompositeController'), [], 'nothing of the instance is left')

  const all = syncsOf(sim, NAME, from)
  const last = all.findLast((result) => result.hook === 'finalize')
  t.match(last, { finalizerRemoved: true, answer: { finalized: true, children: [] } })
  t.same(
    Object.values(last?.request?.children ?? {}).map((group) => Object.keys(group).length),
    [0, 0, 0, 0, 0],
    'finalized only by a request that observed no child',
  )
  t.equal(all.filter((result) => result.finalizerRemoved).length, 1, 'the finalizer is removed once')

  const order = log.log
  t.ok(lastGone(order, 'Service') < firstGone(order, 'Deployment'), `Service before Deployment: ${order.join(', ')}`)
  t.ok(lastGone(order, 'Ingress') < firstGone(order, 'Deployment'))
  t.ok(lastGone(order, 'Pod') < firstGone(order, 'NetworkPolicy'), 'the pod before the policies')
  t.ok(lastGone(order, 'Pod') < firstGone(order, 'Secret'), 'the pod before the flag Secret')
  t.ok(lastGone(order, 'Secret') < firstGone(order, 'Challenge'), 'the Challenge last')
  t.equal(sim.events.length, 0, 'no sync error along the way')
})

t.test('deleting a Challenge that never got children finalizes at once', async (t) => {
  const world = await startWorld(t)
  world.cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  t.match(world.status(NAME), { phase: 'Error', reason: 'DefinitionNotFound' })
  world.cluster.delete(challengeRef(NAME))
  await world.run(t)
  t.equal(world.get(NAME), undefined)
  t.same(world.children(NAME), [])
})

t.test('deleting a Challenge while Pending tears its children down too', async (t) => {
  const world = await startWorld(t)
  world.cluster.create(world.definition('web-login'))
  world.cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  t.same(world.children(NAME), webChildren(NAME))
  world.cluster.delete(challengeRef(NAME))
  await world.run(t)
  t.equal(world.get(NAME), undefined, 'no pod was ever created, so nothing to wait for')
  t.same(world.cluster.list('apps/v1', 'Deployment', NS), [])
})
