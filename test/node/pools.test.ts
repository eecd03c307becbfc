// A definition's warm pool on the real node: its pods start for real (their isolation gate passes under the pool's
// own policy), nobody reaches them before a claim (a workstation beside them is refused, packets dropped), and a
// Challenge that claims one is reachable through its node port about a settle time after its creation, where a cold
// start waits for the whole pod. Prints create → Running and create → first answer, claimed beside cold.
import t from 'tap'
import {
  app,
  definition,
  NODE_IP,
  poolPods,
  probeFrom,
  startNodeSuite,
  warmPool,
  workstation,
  type Json,
} from '../support/node/harness.js'
import { banner, firstAnswerThroughNodePort, table, whenRunning, type Sample } from '../support/node/timing.js'

const suite = await startNodeSuite(t)
const BANNER = 'tcp-echo ready'
const POOLED = 3

t.test('a warm pool on the real node: unreachable until claimed, then the claimant’s at once', async (t) => {
  const s = await suite.scenario(t, 'pools')
  await s.create(
    definition('echo', {
      pod: app('tcp-echo', 9000),
      expose: { type: 'NodePort', port: 9000 },
      network: { egress: 'None' },
      flag: { mode: 'PerInstance' },
      pool: { size: POOLED, maxPods: POOLED },
    }),
  )
  await warmPool(s, POOLED, 120_000)

  // Before any claim: a pod beside the pool, allowed out anywhere, reaches no pooled pod.
  const prober = await workstation(suite, s.ns, 'neighbour')
  const targets = Object.fromEntries(
    (await poolPods(s)).map((pod) => [pod.metadata.name, `tcp:${String((pod.status as Json).podIP)}:9000`]),
  )
  const before = await probeFrom(suite, s.ns, prober.name, targets)
  t.strictSame(
    Object.values(before).map((result) => result.reached),
    Array(POOLED).fill(false),
    'no pooled pod is reachable before its claim',
  )

  const samples: Sample[] = []
  for (const owner of ['p1', 'p2', 'p3', 'p4']) {
    const name = `echo-u-${owner}`
    const since = Date.now()
    await s.create(s.challenge('echo', owner))
    const reachable = firstAnswerThroughNodePort(s, name, since, BANNER)
    const { at, status } = await whenRunning(s, name, since)
    const endpoint = status.endpoint as { host: string; port: number }
    t.equal(await banner(NODE_IP, endpoint.port), BANNER, `${name}: Running answers at its node port`)
    const served = String((status.pool as Json).state)
    t.equal(served, owner === 'p4' ? 'Cold' : 'Claimed', `${name}: ${owner === 'p4' ? 'the pool is spent' : 'claimed'}`)
    samples.push({ instance: `${name} (${served})`, running: at, reachable: await reachable })
  }
  t.comment(`warm pool on the real node, create to Running and to the first answer (ms):\n${table(samples)}`)
  t.strictSame(
    samples.filter((x) => x.reachable > x.running + 20).map((x) => x.instance),
    [],
    'never Running before a connection works (20 ms: the prober’s period)',
  )

  // Once claimed, the claimant's expose policy selects the pod: a NodePort challenge takes any source on its port, as
  // a cold one does, so the neighbour now reaches each claimed pod, and nothing else changed.
  const after = await probeFrom(suite, s.ns, prober.name, targets)
  t.strictSame(
    Object.values(after).map((result) => result.reached),
    Array(POOLED).fill(true),
    'each claimed pod is reached as its instance is: through its own expose policy',
  )
})
