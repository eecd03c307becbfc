// End to end, over real HTTP: netcat challenges on a NodePort and on a LoadBalancer.
import t from 'tap'
import { conditionOf, netcatChildren, NS, startWorld } from './harness.js'

const NAME = 'pwn-echo-u-alice'

t.test('NodePort: Running with nc PUBLIC_HOST <nodePort>', async (t) => {
  const world = await startWorld(t, { env: { PUBLIC_HOST: 'play.ctf.example.org' } })
  const { cluster } = world
  cluster.create(world.definition('pwn-echo'))
  cluster.create(world.challenge('pwn-echo', 'alice'))
  await world.run(t)
  t.hasStrict(world.status(NAME), { phase: 'Pending', reason: 'Starting' })
  t.strictSame(world.children(NAME), netcatChildren(NAME), 'no Ingress for a NodePort challenge')
  await world.assertQuiet(t)

  await world.settle(t)
  const service = cluster.get({ apiVersion: 'v1', kind: 'Service', namespace: NS, name: NAME })
  const ports = (service?.spec as { type: string; ports: Array<{ port: number; nodePort: number }> }).ports
  const nodePort = ports[0]?.nodePort as number
  t.equal((service?.spec as { type: string }).type, 'NodePort')
  t.ok(nodePort >= 30000 && nodePort <= 32767, 'the API server allocated a node port')
  const status = world.status(NAME)
  t.hasStrict(status, {
    phase: 'Running',
    reason: 'Ready',
    expiresAt: '2025-01-01T01:00:00Z',
    endpoint: {
      type: 'NodePort',
      host: 'play.ctf.example.org',
      port: nodePort,
      connection: `nc play.ctf.example.org ${nodePort}`,
    },
  })
  t.notOk('url' in (status.endpoint as object), 'no url for a netcat endpoint')
  await world.assertQuiet(t)
  t.equal(cluster.settle(), 0)
})

t.test('LoadBalancer: Pending/WaitingForEndpoint until the address is allocated, then Running', async (t) => {
  const world = await startWorld(t)
  const { cluster } = world
  cluster.create(world.definition('pwn-echo', { expose: { type: 'LoadBalancer', port: 1337 } }))
  cluster.create(world.challenge('pwn-echo', 'alice'))
  cluster.setLoadBalancerReady(NS, NAME, false)
  await world.run(t)
  t.strictSame(world.children(NAME), netcatChildren(NAME))
  t.equal(
    (cluster.get({ apiVersion: 'v1', kind: 'Service', namespace: NS, name: NAME })?.spec as { type: string }).type,
    'LoadBalancer',
  )

  await world.settle(t)
  const waiting = world.status(NAME)
  t.hasStrict(waiting, {
    phase: 'Pending',
    reason: 'WaitingForEndpoint',
    message: 'The instance is ready; waiting for its address.',
  })
  t.notOk('endpoint' in waiting)
  t.notOk('startedAt' in waiting, 'the play time has not started')
  t.hasStrict(conditionOf(waiting, 'WorkloadReady'), { status: 'True' })
  t.hasStrict(conditionOf(waiting, 'EndpointReady'), { status: 'False', reason: 'NoEndpoint' })
  await world.assertQuiet(t)
  t.equal(cluster.settle(), 0, 'nothing changes while the cloud has no address')
  await world.advance(t, 60)
  t.hasStrict(world.status(NAME), { phase: 'Pending', reason: 'WaitingForEndpoint' })

  cluster.setLoadBalancerReady(NS, NAME, true)
  await world.settle(t)
  const service = cluster.get({ apiVersion: 'v1', kind: 'Service', namespace: NS, name: NAME })
  const ip = (service?.status as { loadBalancer: { ingress: Array<{ ip: string }> } }).loadBalancer.ingress[0]
    ?.ip as string
  t.match(ip, /^203\.0\.113\.\d+$/)
  t.hasStrict(world.status(NAME), {
    phase: 'Running',
    reason: 'Ready',
    startedAt: '2025-01-01T00:01:00Z',
    expiresAt: '2025-01-01T01:01:00Z',
    endpoint: { type: 'LoadBalancer', host: ip, port: 1337, connection: `nc ${ip} 1337` },
  })
  t.hasStrict(conditionOf(world.status(NAME), 'EndpointReady'), { status: 'True', message: `nc ${ip} 1337` })
  await world.assertQuiet(t)
  t.equal(cluster.settle(), 0)
})
