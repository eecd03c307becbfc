// End to end, over real HTTP: hook versions v1 and v2 give the same cluster state (and the same bytes), and
// with ETags an unchanged world is answered 304 and nothing is written.
import t, { type Test } from 'tap'
import type { KubeObject } from '../support/simulator/index.js'
import { challengeRef, NS, startWorld, TOKEN, type World, type WorldOptions } from './harness.js'

interface Recording {
  /** cluster.all() at each checkpoint */
  snapshots: KubeObject[][]
  /** the bytes of every 200 answer of sync/finalize, in order */
  answers: string[]
  world: World
}

/** Two instances through a whole life: start, run, renew, restart, expire, delete. */
async function script(t: Test, options: WorldOptions): Promise<Recording> {
  const world = await startWorld(t, options)
  const { cluster } = world
  const snapshots: KubeObject[][] = []
  const checkpoint = async (what: string) => {
    await world.assertQuiet(t)
    // The snapshot is compared across versions below; a checkpoint asserts nothing by itself.
    void what
    snapshots.push(cluster.all())
  }
  cluster.create(world.definition('web-login'))
  cluster.create(world.definition('pwn-echo'))
  cluster.create(world.challenge('web-login', 'alice'))
  cluster.create(world.challenge('pwn-echo', 'alice'))
  await world.run(t)
  await checkpoint('created')
  await world.settle(t)
  await checkpoint('running')
  await world.advance(t, 600)
  world.patchSpec('web-login-u-alice', { renewals: 1 })
  world.patchSpec('pwn-echo-u-alice', { restarts: 1 })
  await world.run(t)
  await world.settle(t)
  await world.settle(t)
  await checkpoint('renewed and restarted')
  await world.advance(t, 1800)
  await world.settle(t)
  await world.settle(t)
  await checkpoint('expired')
  cluster.delete(challengeRef('pwn-echo-u-alice'))
  cluster.delete(challengeRef('web-login-u-alice'))
  await world.run(t)
  await checkpoint('being deleted')
  await world.settle(t)
  await world.settle(t)
  await checkpoint('deleted')
  const answers = world.sim.history
    .filter((result) => result.response?.statusCode === 200)
    .map((result) => String(result.response?.text))
  return { snapshots, answers, world }
}

/** Deep equality of large JSON values: one string comparison, and tap's diff only when they differ. */
function sameJson(t: Test, found: unknown, wanted: unknown, message: string): void {
  if (JSON.stringify(found) === JSON.stringify(wanted)) t.pass(message)
  else t.strictSame(found, wanted, message)
}

t.test('v1 and v2 hooks, with and without ETags, produce the same cluster state and the same answers', async (t) => {
  // The CompositeController of manifests/ enables ETags on the sync hook.
  const v1 = await script(t, { hookVersion: 'v1' })
  const v2 = await script(t, { hookVersion: 'v2' })
  const plain = await script(t, { hookVersion: 'v1', etag: false })
  t.equal(v1.snapshots.length, 6)
  sameJson(t, v2.snapshots, v1.snapshots, 'v1 and v2: the same objects, byte for byte, at every checkpoint')
  sameJson(t, v2.answers, v1.answers, 'v1 and v2: the same answers, byte for byte')
  sameJson(t, plain.snapshots, v1.snapshots, 'with and without ETags: the same objects at every checkpoint')
  // The requests did differ: v2 keys children by namespace/name.
  const child = (world: World) =>
    world.sim.history.find(
      (result) =>
        result.parent.name === 'web-login-u-alice' &&
        Object.keys(result.request?.children['Secret.v1'] ?? {}).length > 0,
    )?.request?.children['Secret.v1']
  t.strictSame(Object.keys(child(v1.world) ?? {}), ['web-login-u-alice-flag'], 'v1: keyed by name')
  t.strictSame(Object.keys(child(v2.world) ?? {}), [`${NS}/web-login-u-alice-flag`], 'v2: keyed by namespace/name')
  t.strictSame(
    v1.snapshots
      .at(-1)
      ?.map((object) => object.kind)
      .sort(),
    ['ChallengeDefinition', 'ChallengeDefinition', 'CompositeController'],
    'everything else is gone',
  )

  const notModified = v1.world.calls.filter((call) => call.statusCode === 304)
  t.ok(notModified.length > 0, `${notModified.length} answers were 304`)
  t.ok(
    notModified.every((call) => call.ifNoneMatch && call.hook === 'sync'),
    'only sync, and only to a request carrying If-None-Match',
  )
  t.equal(
    plain.world.calls.filter((call) => call.statusCode === 304 || call.ifNoneMatch).length,
    0,
    'no ETags when disabled',
  )
})

t.test('ETag on: an unchanged re-sync is answered 304 and writes nothing', async (t) => {
  const world = await startWorld(t, { etag: true })
  world.cluster.create(world.definition('web-login'))
  world.cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  await world.settle(t)
  const before = world.cluster.get(challengeRef('web-login-u-alice'))
  const again = await world.sim.reconcile(NS, 'web-login-u-alice')
  t.equal(again.requestHeaders?.['If-None-Match'] !== undefined, true, 'the request carries If-None-Match')
  t.equal(again.response?.statusCode, 304)
  t.equal(again.response?.text, '', 'an empty body')
  t.equal(again.writes, 0, 'nothing written')
  t.strictSame(world.cluster.get(challengeRef('web-login-u-alice')), before)
  t.equal(again.answer?.status?.phase, 'Running', 'the cached answer was used')
})

t.test('the hook server behind the simulator requires the bearer token', async (t) => {
  const world = await startWorld(t)
  const call = (headers: Record<string, string>) =>
    fetch(`${world.url}/sync`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: '{}',
    })
  t.equal((await call({})).status, 401, 'no token: 401')
  t.equal((await call({ authorization: 'Bearer wrong' })).status, 401, 'a wrong token: 401')
  t.equal((await call({ authorization: `Bearer ${TOKEN}` })).status, 400, 'the right token gets as far as validation')
})
