// End to end, over real HTTP: a web (HTTP) challenge from creation to expiry and teardown.
import { orderProblem } from '../helpers/order.js'
import t from 'tap'
import { conditionOf, deletedBy, deletionLog, NS, secondsUntil, startWorld, syncsOf, webChildren } from './harness.js'
import { ALICE, expectedHost } from '../helpers/contract.js'

const NAME = 'web-login-u-alice'

t.test(
  'web challenge: Pending/Starting, Running with an https endpoint, Expired at expiresAt, ordered teardown',
  async (t) => {
    const world = await startWorld(t, {
      env: { INGRESS_TLS_SECRET: 'wildcard-tls', INGRESS_CLASS_NAME: 'nginx', BASE_DOMAIN: 'ctf.example.org' },
    })
    const { cluster, sim } = world
    cluster.create(world.definition('web-login'))
    cluster.create(world.challenge('web-login', 'alice'))

    t.ok((await world.run(t)) > 0)
    const pending = world.status(NAME)
    t.hasStrict(pending, {
      phase: 'Pending',
      reason: 'Starting',
      message: 'The instance is starting.',
      run: 0,
      admittedAt: '2025-01-01T00:00:00Z',
    })
    t.notOk('endpoint' in pending, 'no endpoint before traffic can reach the instance')
    t.notOk('startedAt' in pending)
    t.match(pending.instanceId, /^[0-9a-f]{16}$/)
    t.notOk('flagSecretRef' in pending, 'not Running yet: no flag Secret reference')
    t.strictSame(world.children(NAME), webChildren(NAME), 'every child is created at once')
    t.hasStrict(world.get(NAME)?.metadata.finalizers, ['metacontroller.io/compositecontroller-challenge-hooks'])
    await world.assertQuiet(t)

    // The scheduler and the kubelet run: the pod becomes ready.
    t.ok((await world.settle(t)) > 0)
    const running = world.status(NAME)
    const host = expectedHost(world.config.flagSecret, ALICE, 'ctf.example.org')
    t.hasStrict(running, {
      phase: 'Running',
      reason: 'Ready',
      startedAt: '2025-01-01T00:00:00Z',
      expiresAt: '2025-01-01T00:30:00Z',
      endpoint: { type: 'HTTP', host, port: 443, url: `https://${host}/`, connection: `https://${host}/` },
    })
    t.hasStrict(conditionOf(running, 'Ready'), { status: 'True', reason: 'Ready' })
    t.hasStrict(conditionOf(running, 'EndpointReady'), { status: 'True' })
    const ingress = cluster.get({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: NS, name: NAME })
    t.hasStrict(ingress?.spec, {
      ingressClassName: 'nginx',
      tls: [{ hosts: [host], secretName: 'wildcard-tls' }],
      rules: [{ host }],
    })
    t.equal(world.pods(NAME).length, 1)
    await world.assertQuiet(t)
    t.equal(cluster.settle(), 0, 'the cluster has settled too')

    // Just before expiresAt: still Running, the whole workload in place.
    await world.advance(t, secondsUntil(cluster, running.expiresAt) - 1)
    t.equal(cluster.timestamp(), '2025-01-01T00:29:59Z')
    t.hasStrict(world.status(NAME), { phase: 'Running', reason: 'Ready', expiresAt: '2025-01-01T00:30:00Z' })
    t.strictSame(world.children(NAME), webChildren(NAME))
    t.ok(sim.scheduledAt(NS, NAME), 'a resync is scheduled')
    t.ok((sim.scheduledAt(NS, NAME) as Date).getTime() <= Date.parse('2025-01-01T00:30:00Z'), 'no later than expiresAt')

    // At expiresAt: Deleted / Expired, and the teardown starts with the traffic path.
    const log = deletionLog(cluster)
    t.teardown(log.stop)
    const from = sim.history.length
    await world.advance(t, 1)
    const expired = world.status(NAME)
    t.hasStrict(expired, {
      phase: 'Deleted',
      reason: 'Expired',
      finishedAt: '2025-01-01T00:30:00Z',
      startedAt: '2025-01-01T00:00:00Z',
    })
    t.notOk('endpoint' in expired, 'no endpoint once the run is over')
    t.notOk('expiresAt' in expired)
    t.hasStrict(conditionOf(expired, 'Expired'), { status: 'True', reason: 'Expired' })
    t.hasStrict(conditionOf(expired, 'Ready'), { status: 'False', reason: 'Expired' })
    const steps = syncsOf(sim, NAME, from)
      .map(deletedBy)
      .filter((deleted) => deleted.length > 0)
    t.strictSame(
      steps,
      [[`Ingress/${NAME}`, `Service/${NAME}`], [`Pod/${NAME}`]],
      'traffic path first, then the workload, one step per sync',
    )
    t.strictSame(
      world.children(NAME),
      [`NetworkPolicy/${NAME}-isolate`, `Pod/${NAME}`, `Secret/${NAME}-flag`],
      'policies and flag stay while the pod terminates',
    )
    t.equal(world.pods(NAME).length, 1, 'the pod is terminating (graceful termination)')
    await world.assertQuiet(t)

    // The kubelet ends the terminating pod; then the guards go.
    await world.settle(t)
    t.strictSame(world.pods(NAME), [], 'the pod is gone')
    t.strictSame(world.children(NAME), [], 'then the policies and the flag Secret go')

    const order = log.log
    t.equal(orderProblem(order, 'Ingress', 'Pod'), undefined, `Ingress before the pod: ${order.join(', ')}`)
    t.equal(orderProblem(order, 'Service', 'Pod'), undefined, 'Service before the pod')
    t.equal(orderProblem(order, 'Pod', 'NetworkPolicy'), undefined, 'the pod is gone before the policies')
    t.equal(orderProblem(order, 'Pod', 'Secret'), undefined, 'the pod is gone before the flag Secret')

    // Deleted is sticky: the record stays, later syncs change nothing.
    t.hasStrict(world.status(NAME), { phase: 'Deleted', reason: 'Expired', finishedAt: '2025-01-01T00:30:00Z' })
    await world.assertQuiet(t)
    t.equal(cluster.settle(), 0)
    await world.advance(t, 3600)
    t.hasStrict(world.status(NAME), { phase: 'Deleted', reason: 'Expired', finishedAt: '2025-01-01T00:30:00Z' })
    t.strictSame(world.children(NAME), [])
    t.equal(sim.events.length, 0, 'no sync error along the way')
  },
)

t.test('without INGRESS_TLS_SECRET the endpoint is plain http on port 80', async (t) => {
  const world = await startWorld(t)
  world.cluster.create(world.definition('web-login'))
  world.cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  await world.settle(t)
  const status = world.status(NAME)
  const host = expectedHost(world.config.flagSecret, ALICE, 'challenges.localhost')
  t.hasStrict(status, {
    phase: 'Running',
    endpoint: { type: 'HTTP', host, port: 80, url: `http://${host}/`, connection: `http://${host}/` },
  })
  const ingress = world.cluster.get({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', namespace: NS, name: NAME })
  t.notOk('tls' in (ingress?.spec as object), 'no TLS section')
  await world.assertQuiet(t)
})
