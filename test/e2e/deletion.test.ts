// End to end, over real HTTP: deleting a running Challenge (the finalize hook): Terminating/Deleting, ordered
// teardown, and the finalizer removed only once no child is left.
import { orderProblem } from '../helpers/order.js'
import t from 'tap'
import { challengeRef, deletedBy, deletionLog, FINALIZER, NS, startWorld, syncsOf, webChildren } from './harness.js'

const NAME = 'web-login-u-alice'

t.test('delete a Running Challenge: Terminating/Deleting, ordered teardown, finalizer last, object gone', async (t) => {
  const world = await startWorld(t)
  const { cluster, sim } = world
  cluster.create(world.definition('web-login'))
  cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  await world.settle(t)
  t.hasStrict(world.status(NAME), { phase: 'Running' })
  await world.advance(t, 90)

  const log = deletionLog(cluster)
  t.teardown(log.stop)
  const from = sim.history.length
  cluster.delete(challengeRef(NAME))
  t.ok(world.get(NAME)?.metadata.deletionTimestamp, 'marked for deletion, kept by the finalizer')
  await world.run(t)

  const terminating = world.status(NAME)
  t.hasStrict(terminating, {
    phase: 'Terminating',
    reason: 'Deleting',
    message: 'The instance is being deleted.',
    startedAt: '2025-01-01T00:00:00Z',
    finishedAt: '2025-01-01T00:01:30Z',
  })
  t.notOk('endpoint' in terminating)
  t.strictSame(world.get(NAME)?.metadata.finalizers, [FINALIZER], 'the finalizer stays while children remain')
  const finalizes = syncsOf(sim, NAME, from)
  t.ok(
    finalizes.every((result) => result.hook === 'finalize' && result.request?.finalizing === true),
    'only the finalize hook is called',
  )
  t.strictSame(
    finalizes.map(deletedBy).filter((deleted) => deleted.length > 0),
    [[`Ingress/${NAME}`, `Service/${NAME}`], [`Pod/${NAME}`]],
    'traffic path first, then the workload',
  )
  t.ok(
    finalizes.every((result) => result.answer?.finalized === false),
    'not finalized while children are observed',
  )
  t.strictSame(
    world.children(NAME),
    [`NetworkPolicy/${NAME}-isolate`, `Pod/${NAME}`, `Secret/${NAME}-flag`],
    'a terminating pod stays isolated and keeps its flag',
  )
  t.not(
    cluster.get({ apiVersion: 'v1', kind: 'Pod', namespace: NS, name: NAME })?.metadata.deletionTimestamp,
    undefined,
    'the pod is terminating',
  )
  t.equal(finalizes.at(-1)?.resyncAfterSeconds, 10, 'a waiting finalize asks to be called again')

  // The kubelet has not finished the pod yet: the finalize hook keeps waiting.
  await world.advance(t, 10)
  t.strictSame(world.get(NAME)?.metadata.finalizers, [FINALIZER], 'still waiting for the pod')
  t.hasStrict(
    world.status(NAME),
    { phase: 'Terminating', reason: 'Deleting', finishedAt: '2025-01-01T00:01:30Z' },
    'finishedAt is sticky',
  )
  t.equal(world.children(NAME).length, 3, 'the Pod, its policy and its flag Secret')

  cluster.settle()
  await sim.runUntilQuiet()
  t.equal(world.get(NAME), undefined, 'the Challenge is gone')
  t.strictSame(world.pods(NAME), [])
  t.strictSame(
    cluster.all().filter((object) => object.kind !== 'ChallengeDefinition' && object.kind !== 'CompositeController'),
    [],
    'nothing of the instance is left',
  )

  const all = syncsOf(sim, NAME, from)
  const last = all.findLast((result) => result.hook === 'finalize')
  t.hasStrict(last, { finalizerRemoved: true, answer: { finalized: true, children: [] } })
  t.strictSame(
    Object.values(last?.request?.children ?? {}).map((group) => Object.keys(group).length),
    [0, 0, 0, 0, 0, 0],
    'finalized only by a request that observed no child (six child groups)',
  )
  t.equal(all.filter((result) => result.finalizerRemoved).length, 1, 'the finalizer is removed once')

  const order = log.log
  t.equal(orderProblem(order, 'Service', 'Pod'), undefined, `Service before the pod: ${order.join(', ')}`)
  t.equal(orderProblem(order, 'Ingress', 'Pod'), undefined)
  t.equal(orderProblem(order, 'Pod', 'NetworkPolicy'), undefined, 'the pod before the policies')
  t.equal(orderProblem(order, 'Pod', 'Secret'), undefined, 'the pod before the flag Secret')
  t.equal(orderProblem(order, 'Secret', 'Challenge'), undefined, 'the Challenge last')
  t.equal(sim.events.length, 0, 'no sync error along the way')
})

t.test('deleting a Challenge that never got children finalizes at once', async (t) => {
  const world = await startWorld(t)
  world.cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  t.hasStrict(world.status(NAME), { phase: 'Error', reason: 'DefinitionNotFound' })
  world.cluster.delete(challengeRef(NAME))
  await world.run(t)
  t.equal(world.get(NAME), undefined)
  t.strictSame(world.children(NAME), [])
})

t.test('deleting a Challenge while Pending tears its children down too', async (t) => {
  const world = await startWorld(t)
  world.cluster.create(world.definition('web-login'))
  world.cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  t.strictSame(world.children(NAME), webChildren(NAME))
  world.cluster.delete(challengeRef(NAME))
  await world.run(t)
  t.equal(world.get(NAME), undefined, 'the pod was never scheduled, so the API server deleted it at once')
  t.strictSame(world.cluster.list('v1', 'Pod', NS), [])
})
