// Finalizers and the finalize hook, resyncs and the clock, quiescence.
import t from 'tap'
import { Cluster } from '../support/simulator/cluster.js'
import type { KubeObject } from '../support/simulator/objects.js'
import { Simulator, type SyncRequest } from '../support/simulator/index.js'
import { challenge, controller, deployment, FakeHook, NS, secret, service, webHook } from './fixtures.js'

const FINALIZER = 'metacontroller.io/compositecontroller-challenge-hooks'
const REF = { apiVersion: 'challenge-hooks.dev/v1alpha1', kind: 'Challenge', namespace: NS, name: 'web-u-alice' }

t.test('the finalizer is added while a finalize hook exists, and removed when it does not', async (t) => {
  const cluster = new Cluster()
  cluster.create({ ...challenge(), metadata: { ...challenge().metadata, finalizers: ['example.com/other'] } })
  const sim = new Simulator(controller(), cluster, new FakeHook({ sync: () => ({ children: [] }) }))
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.equal(result.finalizerAdded, true)
  t.strictSame(cluster.get(REF)?.metadata.finalizers, ['example.com/other', FINALIZER])
  t.equal((await sim.reconcile(NS, 'web-u-alice')).finalizerAdded, false)
  sim.close()

  const without = new Simulator(
    controller({ hooks: { sync: { webhook: {} } } }),
    cluster,
    new FakeHook({ sync: () => ({ children: [] }) }),
  )
  const removed = await without.reconcile(NS, 'web-u-alice')
  t.equal(removed.finalizerRemoved, true)
  t.strictSame(cluster.get(REF)?.metadata.finalizers, ['example.com/other'])
})

t.test('finalize flow: ordered teardown, then finalized removes the finalizer', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  const finalize = (request: SyncRequest) => {
    const observed =
      Object.keys(request.children['Service.v1'] ?? {}).length +
      Object.keys(request.children['Deployment.apps/v1'] ?? {}).length
    // First the Service goes, then the Deployment; finalized once nothing is observed.
    if (observed === 0) return { status: { phase: 'Terminating' }, children: [deployment('web')], finalized: true }
    return {
      status: { phase: 'Terminating' },
      children: Object.keys(request.children['Service.v1'] ?? {}).length > 0 ? [deployment('web')] : [],
    }
  }
  const hook = new FakeHook({
    sync: () => ({ status: { phase: 'Running' }, children: [deployment('web'), service('web')] }),
    finalize,
  })
  const sim = new Simulator(controller(), cluster, hook)
  await sim.runUntilQuiet()
  t.equal(cluster.list('v1', 'Service', NS).length, 1)

  cluster.delete(REF)
  t.strictSame(sim.pending(), [`${NS}/web-u-alice`])
  const first = await sim.reconcile(NS, 'web-u-alice')
  t.equal(first.hook, 'finalize')
  t.equal(first.request?.finalizing, true)
  t.equal(first.request?.parent.metadata.generation, 2, 'the deletion bumped generation')
  t.strictSame(
    first.deleted.map((r) => r.kind),
    ['Service'],
  )
  t.match(cluster.get(REF)?.status, { phase: 'Terminating', observedGeneration: 2 })

  await sim.runUntilQuiet()
  t.equal(cluster.get(REF), undefined, 'finalized: the finalizer went and so did the parent')
  t.equal(cluster.list('apps/v1', 'Deployment', NS).length, 0, 'children in a finalized answer are not applied')
  const last = sim.history.filter((r) => r.hook === 'finalize').at(-1)
  t.match(last, { finalizerRemoved: true, statusWritten: false, created: [] })
  t.equal(sim.history.at(-1)?.outcome, 'notFound', 'the DELETED event leads to one more (empty) sync')
})

t.test('finalized: true in a sync answer removes the finalizer, which comes back: it flaps', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  const sim = new Simulator(controller(), cluster, new FakeHook({ sync: () => ({ children: [], finalized: true }) }))
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.match(result, { finalizerAdded: true, finalizerRemoved: true, warnings: [/it flaps/] })
  await t.rejects(sim.runUntilQuiet({ maxSteps: 20 }), { message: /not quiet/ })
})

t.test('a deleted parent without a finalize hook: sync is called, children are not managed', async (t) => {
  const cluster = new Cluster()
  cluster.create({ ...challenge(), metadata: { ...challenge().metadata, finalizers: ['example.com/hold'] } })
  let children = [secret('a')]
  const hook = new FakeHook({ sync: () => ({ status: { phase: 'Gone' }, children }) })
  const sim = new Simulator(controller({ hooks: { sync: { webhook: {} } } }), cluster, hook)
  await sim.runUntilQuiet()
  cluster.delete(REF)
  children = [secret('b')]
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.match(result, { hook: 'sync', request: { finalizing: false }, created: [], deleted: [], statusWritten: true })
})

t.test('a parent deleted before its first sync gets no finalizer; its finalize hook still runs', async (t) => {
  const cluster = new Cluster()
  cluster.create({ ...challenge(), metadata: { ...challenge().metadata, finalizers: ['example.com/hold'] } })
  cluster.delete(REF)
  const hook = new FakeHook({ finalize: () => ({ children: [secret('late')] }) })
  const sim = new Simulator(controller(), cluster, hook)
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.match(
    result,
    { hook: 'finalize', finalizerAdded: false, created: [] },
    'without our finalizer, children are not managed',
  )
  t.strictSame(cluster.get(REF)?.metadata.finalizers, ['example.com/hold'])
})

t.test('finalized: true without a finalizer to remove changes nothing (but is still a mistake)', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  const sim = new Simulator(
    controller({ hooks: { sync: { webhook: {} } } }),
    cluster,
    new FakeHook({ sync: () => ({ children: [], finalized: true }) }),
  )
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.match(result, { finalizerRemoved: false, warnings: [/it flaps/] })
})

t.test('a garbage-collector finalizer (orphan) stops the finalize hook from managing children', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  let children = [secret('a')]
  const sim = new Simulator(
    controller(),
    cluster,
    new FakeHook({ sync: () => ({ children }), finalize: () => ({ children: [] }) }),
  )
  await sim.runUntilQuiet()
  const parent = cluster.get(REF) as KubeObject
  cluster.update({
    ...parent,
    metadata: { ...parent.metadata, finalizers: [...(parent.metadata.finalizers ?? []), 'orphan'] },
  })
  cluster.delete(REF)
  children = []
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.match(result, { hook: 'finalize', deleted: [] })
})

t.test('resyncAfterSeconds: a sync at clock + seconds; the earliest request wins', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  const expiresAt = new Date('2025-01-01T00:10:00Z').getTime()
  // A level-based expiry: Deleted once the deadline has passed, a resync requested just after it until then.
  const sync = () => {
    const left = (expiresAt - cluster.now().getTime()) / 1000
    if (left <= 0) return { status: { phase: 'Deleted' }, children: [] }
    return { status: { phase: 'Running' }, children: [secret('s')], resyncAfterSeconds: Math.min(left, 300) }
  }
  const sim = new Simulator(controller(), cluster, new FakeHook({ sync }))
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.equal(result.resyncAfterSeconds, 300)
  t.equal(sim.scheduledAt(NS, 'web-u-alice')?.toISOString(), '2025-01-01T00:05:00.000Z')
  await sim.runUntilQuiet()
  t.equal(
    sim.scheduledAt(NS, 'web-u-alice')?.toISOString(),
    '2025-01-01T00:05:00.000Z',
    'later requests do not push it back',
  )

  t.equal(await sim.advance(299), 0, 'nothing is due before it')
  await sim.advance(1)
  t.equal(sim.scheduledAt(NS, 'web-u-alice')?.toISOString(), '2025-01-01T00:10:00.000Z')
  t.match(cluster.get(REF)?.status, { phase: 'Running' })
  await sim.advance(600)
  t.match(cluster.get(REF)?.status, { phase: 'Deleted' })
  t.equal(cluster.list('v1', 'Secret', NS).length, 0)
  t.equal(cluster.timestamp(), '2025-01-01T00:15:00Z')
  t.equal(sim.scheduledAt(NS, 'web-u-alice'), undefined)
})

t.test('resyncPeriodSeconds resyncs every parent periodically (at least every second)', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  const hook = new FakeHook({ sync: () => ({ status: {}, children: [] }) })
  const sim = new Simulator(controller({ resyncPeriodSeconds: 60 }), cluster, hook)
  await sim.runUntilQuiet()
  const calls = hook.callsOf('sync').length
  await sim.advance(180)
  t.equal(hook.callsOf('sync').length, calls + 3)

  const fast = new Simulator(controller({ resyncPeriodSeconds: 0 }), cluster, hook)
  sim.close()
  await fast.runUntilQuiet()
  const before = hook.callsOf('sync').length
  await fast.advance(3)
  t.equal(hook.callsOf('sync').length, before + 3)
})

t.test(
  'quiescence: a second sync of an unchanged world writes nothing; a status that always changes never settles',
  async (t) => {
    const cluster = new Cluster()
    cluster.create(challenge())
    const sim = new Simulator(controller(), cluster, new FakeHook({ sync: webHook }))
    t.ok((await sim.runUntilQuiet()) > 0)
    t.equal(await sim.runUntilQuiet(), 0)
    sim.enqueue(NS, 'web-u-alice')
    t.equal(await sim.runUntilQuiet(), 0)
    t.equal(
      sim.writes,
      sim.history.reduce((sum, r) => sum + r.writes, 0),
    )

    const looping = new Cluster()
    looping.create(challenge())
    let n = 0
    const hot = new Simulator(
      controller(),
      looping,
      new FakeHook({ sync: () => ({ status: { lastSync: n++ }, children: [] }) }),
    )
    await t.rejects(hot.runUntilQuiet(), { message: /not quiet after 100 syncs/ })
  },
)

t.test('ignoreStatusChanges: a status write does not queue the parent; spec, labels and deletion do', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  let n = 0
  const spec = {
    parentResource: { apiVersion: 'challenge-hooks.dev/v1alpha1', resource: 'challenges', ignoreStatusChanges: true },
  }
  const sim = new Simulator(
    controller(spec),
    cluster,
    new FakeHook({ sync: () => ({ status: { n: n++ }, children: [] }) }),
  )
  await sim.runUntilQuiet()
  t.equal(n, 1, 'neither the finalizer write nor the status write queues the parent again')
  const parent = cluster.get(REF) as KubeObject
  cluster.update({ ...parent, metadata: { ...parent.metadata, labels: { x: 'y' } } })
  t.strictSame(sim.pending(), [`${NS}/web-u-alice`])
  await sim.runUntilQuiet()
  const again = cluster.get(REF) as KubeObject
  cluster.update({ ...again, metadata: { ...again.metadata, annotations: { a: 'b' } } })
  t.strictSame(sim.pending(), [`${NS}/web-u-alice`])
  await sim.runUntilQuiet()
  cluster.delete(REF)
  t.strictSame(sim.pending(), [`${NS}/web-u-alice`])
})

t.test('a parent that is gone: nothing to do', async (t) => {
  const cluster = new Cluster()
  const sim = new Simulator(controller(), cluster, new FakeHook({}))
  t.match(await sim.reconcile(NS, 'nobody'), { outcome: 'notFound', writes: 0 })
  t.throws(
    () =>
      new Simulator(
        controller({ parentResource: { apiVersion: 'v1', resource: 'widgets' } }),
        cluster,
        new FakeHook({}),
      ),
    {
      message: `can't find resource "widgets" in apiVersion "v1"`,
    },
  )
  t.ok(new Simulator(controller({ childResources: undefined, hooks: undefined }), cluster, new FakeHook({})))
})

t.test('a full life: create, become ready, crash, heal, expire, delete', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  const sim = new Simulator(
    controller(),
    cluster,
    new FakeHook({ sync: webHook, finalize: () => ({ finalized: true }) }),
    { hookVersion: 'v2' },
  )
  await sim.runUntilQuiet()
  cluster.settle()
  await sim.runUntilQuiet()
  t.match(cluster.get(REF)?.status, { phase: 'Running' })
  cluster.setPodFailure({ namespace: NS, workload: 'web-u-alice' }, 'crashLoop')
  cluster.settle()
  await sim.runUntilQuiet()
  t.match(cluster.get(REF)?.status, { phase: 'Pending' })
  cluster.setPodFailure({ namespace: NS, workload: 'web-u-alice' }, 'none')
  cluster.settle()
  await sim.runUntilQuiet()
  t.match(cluster.get(REF)?.status, { phase: 'Running' })
  cluster.delete(REF)
  await sim.runUntilQuiet()
  t.equal(cluster.get(REF), undefined)
  cluster.settle()
  cluster.settle()
  t.strictSame(cluster.all(), [], 'garbage collection leaves nothing behind')
})
