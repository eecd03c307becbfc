import t from 'tap'
// Uses the public entry point, as the project's own tests will.
import { Cluster, Simulator } from '../support/simulator/index.js'
import { challenge, controller, FakeHook, NS, webHook } from './fixtures.js'

t.test('a parent goes from Pending to Running and then stays quiet', async (t) => {
  const cluster = new Cluster()
  const hook = new FakeHook({ sync: webHook, finalize: () => ({ finalized: true }) })
  cluster.create(challenge())
  const sim = new Simulator(controller(), cluster, hook)

  t.ok((await sim.runUntilQuiet()) > 0)
  let parent = cluster.get({
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'Challenge',
    namespace: NS,
    name: 'web-u-alice',
  })
  t.strictSame(parent?.metadata.finalizers, ['metacontroller.io/compositecontroller-challenge-hooks'])
  t.strictSame(parent?.status, { phase: 'Pending', observedGeneration: 1 })
  t.equal(cluster.list('apps/v1', 'Deployment', NS).length, 1)

  cluster.settle()
  t.ok((await sim.runUntilQuiet()) > 0)
  parent = cluster.get({
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'Challenge',
    namespace: NS,
    name: 'web-u-alice',
  })
  t.equal((parent?.status as any).phase, 'Running')

  const again = await sim.reconcile(NS, 'web-u-alice')
  t.equal(again.writes, 0, 'an unchanged world is not written to')
  t.equal(await sim.runUntilQuiet(), 0)
  t.equal(cluster.settle(), 0, 'the cluster settled too')
})
