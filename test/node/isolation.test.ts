// Isolation by packets: from inside player A's pod (the probe image), for egress None, DNS and Internet, which
// addresses its packets reach: player B's pod (its exposed port, another port, UDP), B's Service and NodePort, a
// pod of another namespace, the API server (directly and as the `kubernetes` Service), the node's kubelet, a
// stand-in cloud metadata address, a stand-in public address, and DNS through kube-dns. Then the same from B
// towards A, and from two places that must reach everything that listens: the node itself, and a pod of another
// namespace with no policy of its own (which also shows the ingress side: only the exposed port of an instance
// answers anyone). The expected table is the contract's (challenge-api.md: isolate, expose, internet policies).
import { createServer, type Server } from 'node:net'
import { createSocket } from 'node:dgram'
import { connect } from 'node:net'
import { Resolver } from 'node:dns/promises'
import t from 'tap'
import { createNamespace } from '../support/kube/harness.js'
import { eventually } from '../support/eventually.js'
import {
  API_PORT,
  app,
  definition,
  DNS_SERVICE_IP,
  KUBELET_PORT,
  METADATA_IP,
  NODE_IP,
  podOf,
  probeFrom,
  PUBLIC_IP,
  PUBLIC_NAME,
  running,
  startNodeSuite,
  workstation,
  type Json,
  type Scenario,
} from '../support/node/harness.js'

const suite = await startNodeSuite(t)
const EGRESS = ['None', 'DNS', 'Internet'] as const
type Place = 'node' | 'elsewhere' | 'A None' | 'A DNS' | 'A Internet' | 'B'

/** Small listeners on the stand-in addresses (they live in the node's namespace, where this test runs). */
async function listen(address: string, answer: string): Promise<Server> {
  // A prober that gives up early resets its connection: not this listener's error.
  const server = createServer((socket) => socket.on('error', () => undefined).end(`${answer}\n`))
  await new Promise<void>((resolve) => server.listen(80, address, resolve))
  return server
}

interface Instance {
  pod: { name: string; ip: string }
  clusterIP: string
  nodePort: number
}

async function instance(s: Scenario, name: string): Promise<Instance> {
  await running(s, name)
  const service = await suite.rest.get<{ spec: { clusterIP: string; ports: { nodePort: number }[] } }>(
    `/api/v1/namespaces/${s.ns}/services/${name}`,
  )
  return {
    pod: await podOf(s, name),
    clusterIP: service.spec.clusterIP,
    nodePort: (service.spec.ports[0] as { nodePort: number }).nodePort,
  }
}

/** The targets, by label, towards one instance (its pod, Service, NodePort) and the rest of the world. */
function targets(to: Instance, elsewhere: string): Record<string, string> {
  return {
    'instance port 8080 (exposed)': `tcp:${to.pod.ip}:8080`,
    'instance port 9090': `tcp:${to.pod.ip}:9090`,
    'instance UDP 9053': `udp:${to.pod.ip}:9053`,
    'instance Service': `tcp:${to.clusterIP}:8080`,
    'instance NodePort': `tcp:${NODE_IP}:${to.nodePort}`,
    'pod of another namespace': `tcp:${elsewhere}:8080`,
    'API server': `tcp:${NODE_IP}:${API_PORT}`,
    'API server Service': 'tcp:10.0.0.1:443',
    kubelet: `tcp:${NODE_IP}:${KUBELET_PORT}`,
    'cloud metadata': `tcp:${METADATA_IP}:80`,
    'public address': `tcp:${PUBLIC_IP}:80`,
    'DNS: cluster name': 'dns:kubernetes.default.svc.cluster.local',
    'DNS: public name': `dns:${PUBLIC_NAME}`,
  }
}

/** The same targets tried from this process, on the node (DNS asked of kube-dns's Service address). */
async function fromNode(list: Record<string, string>): Promise<Record<string, boolean>> {
  const resolver = new Resolver({ timeout: 2000, tries: 1 })
  resolver.setServers([DNS_SERVICE_IP])
  const one = async (target: string): Promise<boolean> => {
    const [kind, host, port] = target.split(':') as [string, string, string]
    if (kind === 'dns')
      return resolver.resolve4(host).then(
        (a) => a.length > 0,
        () => false,
      )
    if (kind === 'udp') return udpAnswered(host, Number(port))
    return new Promise((resolve) => {
      const socket = connect({ host, port: Number(port), timeout: 2000 })
      socket.on('connect', () => (socket.destroy(), resolve(true)))
      socket.on('timeout', () => (socket.destroy(), resolve(false)))
      socket.on('error', () => resolve(false))
    })
  }
  return Object.fromEntries(
    await Promise.all(Object.entries(list).map(async ([label, target]) => [label, await one(target)] as const)),
  )
}

function udpAnswered(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4')
    const timer = setTimeout(() => (socket.close(), resolve(false)), 2000)
    socket.on('message', () => (clearTimeout(timer), socket.close(), resolve(true)))
    socket.on('error', () => (clearTimeout(timer), socket.close(), resolve(false)))
    socket.send('ping', port, host)
  })
}

async function reached(ns: string, pod: string, list: Record<string, string>): Promise<Record<string, boolean>> {
  const results = await probeFrom(suite, ns, pod, list)
  return Object.fromEntries(Object.keys(list).map((label) => [label, results[label]?.reached === true]))
}

/** What the contract promises: reached (true) or not (false), per target, per place. */
function expected(place: Place, target: string): boolean {
  // The node reaches every pod and every address (NetworkPolicy never governs a pod's own node).
  if (place === 'node') return true
  const instanceTarget = target.startsWith('instance')
  // No policy restricts the other namespace's pod: it reaches what listens, except the ports an instance
  // does not expose (expose: NodePort admits any source, on the exposed port only).
  if (place === 'elsewhere') return !instanceTarget || !['instance port 9090', 'instance UDP 9053'].includes(target)
  // A player's pod: nothing of another instance, the cluster or the node; DNS unless None; public only for Internet.
  const egress = place === 'B' ? 'DNS' : place.slice(2)
  if (target.startsWith('DNS')) return egress !== 'None'
  if (target === 'public address') return egress === 'Internet'
  return false
}

t.test('isolation by packets: what each place reaches, both ways', async (t) => {
  const servers = await Promise.all([listen(METADATA_IP, 'metadata'), listen(PUBLIC_IP, 'public')])
  t.teardown(() => servers.forEach((server) => server.close()))
  const s = await suite.scenario(t, 'isolation')
  const other = await createNamespace(suite, t, 'elsewhere')
  const elsewhere = await workstation(suite, other, 'elsewhere')
  const probeApp = app('probe', 8080)
  for (const egress of EGRESS) {
    await s.create(
      definition(`iso-${egress.toLowerCase()}`, {
        pod: probeApp,
        expose: { type: 'NodePort', port: 8080 },
        network: { egress },
      }),
    )
    await s.create(s.challenge(`iso-${egress.toLowerCase()}`, 'alice'))
  }
  await s.create(s.challenge('iso-dns', 'bob'))
  const a: Record<string, Instance> = {}
  for (const egress of EGRESS) a[egress] = await instance(s, `iso-${egress.toLowerCase()}-u-alice`)
  const b = await instance(s, 'iso-dns-u-bob')
  const towardsB = targets(b, elsewhere.ip)
  const towardsA = targets(a.DNS as Instance, elsewhere.ip)

  // Every path that must carry packets is open before anything is asserted: a Service or NodePort may lag Running
  // by a second (reachable.test.ts), which is not what this test is about.
  // (Towards A too: B's view of A's Service must not pass only because it is not programmed yet.)
  const allReached = (list: Record<string, string>) =>
    eventually(
      'the node to reach every target',
      async () => {
        const seen = await fromNode(list)
        return Object.values(seen).every(Boolean) && seen
      },
      undefined,
      { timeoutMs: 15_000 },
    ).catch(() => fromNode(list))
  const control = await allReached(towardsB)
  t.ok(
    Object.values(await allReached(towardsA)).every(Boolean),
    "the node reaches every target towards alice's DNS instance too",
  )
  const seen: Record<Place, Record<string, boolean>> = {
    node: control,
    elsewhere: await reached(other, elsewhere.name, towardsB),
    'A None': await reached(s.ns, (a.None as Instance).pod.name, towardsB),
    'A DNS': await reached(s.ns, (a.DNS as Instance).pod.name, towardsB),
    'A Internet': await reached(s.ns, (a.Internet as Instance).pod.name, towardsB),
    B: await reached(s.ns, b.pod.name, towardsA),
  }
  const places = Object.keys(seen) as Place[]
  const want = Object.fromEntries(
    places.map((place) => [
      place,
      Object.fromEntries(Object.keys(towardsB).map((target) => [target, expected(place, target)])),
    ]),
  )
  const header = `  ${'target'.padEnd(30)}${places.map((place) => place.padEnd(12)).join('')}`
  const rows = Object.keys(towardsB).map(
    (target) =>
      `  ${target.padEnd(30)}${places.map((place) => (seen[place][target] ? 'reached' : '-').padEnd(12)).join('')}`,
  )
  t.comment(
    `what each place reached (A = alice's instances by egress, towards bob's; B = bob's, egress DNS, towards alice's DNS one):\n${header}\n${rows.join('\n')}`,
  )
  for (const place of places)
    t.strictSame(seen[place], want[place], `${place}: reaches exactly what the contract allows`)
})

export type { Json }
