// The settle time end to end, over real HTTP, with a path that comes after the pod's Ready: docs/api.md ("Running
// only once traffic gets through") counts ENDPOINT_SETTLE_MS from the later of the pod's Ready time and the path's
// creation (the Service, the route, a Gateway's acceptance). The harness runs without a settle time; these worlds
// set it to 2.5 s. Every instant is worked out from that rule and the simulator's clock (which starts at
// 2025-01-01T00:00:00Z and moves only when the test moves it); the hook's clock counts whole seconds.
import t from 'tap'
import type { KubeObject } from '../support/simulator/index.js'
import { exampleGateway, GATEWAY_ENV, NS, startWorld, type Json, type World } from './harness.js'

const WEB = 'web-login-u-alice'
const SETTLE = { ENDPOINT_SETTLE_MS: '2500' }
const at = (seconds: number) => new Date(Date.parse('2025-01-01T00:00:00Z') + seconds * 1000).toISOString()
const time = (seconds: number) => at(seconds).replace(/\.\d{3}Z$/, 'Z')

/** What the player sees of the instance, and when the simulator will sync it next. */
function seen(world: World) {
  const status = world.status(WEB)
  return {
    phase: status.phase,
    reason: status.reason,
    startedAt: status.startedAt,
    endpoint: status.endpoint !== undefined,
    nextSync: world.sim.scheduledAt(NS, WEB)?.toISOString(),
  }
}

t.test(
  'a Gateway that accepts the route 30 s after the pod is Ready: Running 2.5 s after the acceptance',
  async (t) => {
    const world = await startWorld(t, { components: ['gateway-api-http'], env: { ...GATEWAY_ENV, ...SETTLE } })
    world.create(world.definition('web-login'))
    world.create(world.challenge('web-login', 'alice'))
    await world.run(t)
    // The pod is Ready at :00; no Gateway exists yet, so nobody has accepted the route.
    await world.settle(t)
    t.hasStrict(world.status(WEB), { phase: 'Pending', reason: 'WaitingForEndpoint' })

    // The operator applies the example Gateway at :30: its controller accepts the route at :30.
    world.cluster.advance(30)
    world.create(exampleGateway())
    await world.settle(t)
    const route = world.cluster.get({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      namespace: NS,
      name: WEB,
    }) as KubeObject
    t.strictSame(
      ((route.status as { parents: Json[] }).parents[0]?.conditions as Json[]).map((c) => c.lastTransitionTime),
      [time(30), time(30)],
      'accepted at :30',
    )
    t.strictSame(
      seen(world),
      { phase: 'Pending', reason: 'Starting', startedAt: undefined, endpoint: false, nextSync: at(32.5) },
      ':30, accepted: not Running yet, woken when the path has settled (:32.5)',
    )
    await world.advance(t, 2)
    t.strictSame(
      seen(world),
      { phase: 'Pending', reason: 'Starting', startedAt: undefined, endpoint: false, nextSync: at(32.5) },
      ':32, still settling',
    )
    await world.advance(t, 8)
    t.hasStrict(
      seen(world),
      { phase: 'Running', reason: 'Ready', startedAt: time(33), endpoint: true },
      'Running from the first whole-second sync at or after :32.5',
    )
    await world.assertQuiet(t)
  },
)

t.test('a Service deleted while Running: created again, Pending until it has settled, the run kept', async (t) => {
  const world = await startWorld(t, { env: SETTLE })
  world.create(world.definition('web-login'))
  world.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  // Service, Ingress and the Ready pod all at :00: Running from :03 (settled at :02.5).
  await world.settle(t)
  await world.advance(t, 5)
  const before = world.status(WEB)
  t.hasStrict(before, { phase: 'Running', reason: 'Ready', startedAt: time(3) })

  // At :65 someone deletes the Service; Metacontroller creates it again at :65, at once.
  world.cluster.advance(60)
  world.cluster.delete({ apiVersion: 'v1', kind: 'Service', namespace: NS, name: WEB })
  await world.run(t)
  t.equal(
    world.cluster.get({ apiVersion: 'v1', kind: 'Service', namespace: NS, name: WEB })?.metadata.creationTimestamp,
    time(65),
    'the Service is back, created at :65',
  )
  t.strictSame(
    seen(world),
    { phase: 'Pending', reason: 'Starting', startedAt: time(3), endpoint: false, nextSync: at(67.5) },
    ':65, the new path is settling: no endpoint, the run started at :03 is kept',
  )
  t.equal(world.status(WEB).expiresAt, before.expiresAt, 'the play time is not extended')
  await world.advance(t, 2)
  t.strictSame(seen(world).phase, 'Pending', ':67, still settling')
  await world.advance(t, 8)
  t.hasStrict(
    seen(world),
    { phase: 'Running', reason: 'Ready', startedAt: time(3), endpoint: true },
    'Running again (settled at :67.5), the same run',
  )
  t.equal(world.status(WEB).expiresAt, before.expiresAt)
  await world.assertQuiet(t)
})
