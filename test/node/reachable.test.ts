// Running means reachable, on a real node: when a player's refresh first shows `Running`, a connection to
// `status.endpoint` gets the app's answer. NodePort from outside the cluster (the node's address, through
// kube-proxy); Internal from the owner's workstation beside the instance (a pod with the owner's labels, by the
// instance's cluster DNS name, through CoreDNS and kube-proxy).
// For each instance it measures when the status said Running and when the path first carried a connection
// (a prober that starts a connection every 20 ms from the moment the Challenge is created), and prints them.
import t from 'tap'
import { app, definition, NODE_IP, ownerLabels, startNodeSuite, workstation } from '../support/node/harness.js'
import { banner, firstAnswerThroughNodePort, table, whenRunning, type Sample } from '../support/node/timing.js'

const suite = await startNodeSuite(t)
const OWNERS = ['p1', 'p2', 'p3', 'p4', 'p5']
const BANNER = 'tcp-echo ready'

t.test('NodePort: the first Running a player sees already answers at the node address', async (t) => {
  const s = await suite.scenario(t, 'reach-nodeport')
  await s.create(
    definition('echo', {
      pod: app('tcp-echo', 9000),
      expose: { type: 'NodePort', port: 9000 },
      network: { egress: 'None' },
    }),
  )
  const samples: Sample[] = []
  for (const owner of OWNERS) {
    const name = `echo-u-${owner}`
    const since = Date.now()
    await s.create(s.challenge('echo', owner))
    const reachable = firstAnswerThroughNodePort(s, name, since, BANNER)
    const { at, status } = await whenRunning(s, name, since)
    // What a player does on seeing Running: connect to the endpoint it names.
    const endpoint = status.endpoint as { host: string; port: number }
    const answer = await banner(endpoint.host, endpoint.port)
    t.strictSame(
      status.endpoint,
      { type: 'NodePort', host: NODE_IP, port: endpoint.port, connection: `nc ${NODE_IP} ${endpoint.port}` },
      `${name}: the node's address and the node port`,
    )
    t.equal(answer, BANNER, `${name}: connecting right after Running gets the app's banner`)
    samples.push({ instance: name, running: at, reachable: await reachable })
  }
  t.comment(`NodePort, create to Running and to the first answer:\n${table(samples)}`)
  t.strictSame(
    samples.filter((x) => x.reachable > x.running + 20).map((x) => x.instance),
    [],
    'never Running before a connection works (20 ms: the prober’s period)',
  )
})

t.test(
  "Internal: the first Running a player sees already answers by the cluster DNS name, from the player's workstation",
  async (t) => {
    const s = await suite.scenario(t, 'reach-internal')
    await s.create(
      definition('echo', {
        pod: app('tcp-echo', 9000),
        expose: { type: 'Internal', port: 9000 },
        network: { egress: 'None' },
      }),
    )
    const samples: Sample[] = []
    for (const owner of OWNERS) {
      const name = `echo-u-${owner}`
      const host = `${name}.${s.ns}.svc.cluster.local`
      const client = await workstation(suite, s.ns, `box-${owner}`, ownerLabels(owner))
      const since = Date.now()
      await s.create(s.challenge('echo', owner))
      // Tries from the pod every 20 ms, resolving the name each time, until the app answers; says when (Unix ms).
      const prober = suite.kubectl(['exec', '-n', s.ns, client.name, '--', '/probe', 'until', '90', `tcp:${host}:9000`])
      const { at, status } = await whenRunning(s, name, since)
      t.strictSame(
        status.endpoint,
        { type: 'Internal', host, port: 9000, connection: `nc ${host} 9000` },
        `${name}: the Service's cluster DNS name`,
      )
      const probed = JSON.parse((await prober).stdout) as { reached: boolean; reachedAtMs: number; answer: string }
      t.equal(probed.answer, BANNER, `${name}: the owner's workstation gets the app's banner`)
      samples.push({ instance: name, running: at, reachable: probed.reachedAtMs - since })
    }
    t.comment(`Internal, create to Running and to the first answer:\n${table(samples)}`)
    t.strictSame(
      samples.filter((x) => x.reachable > x.running + 20).map((x) => x.instance),
      [],
      'never Running before a connection works (20 ms: the prober’s period)',
    )
  },
)
