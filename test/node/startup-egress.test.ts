// Isolation before any player can connect (docs/security.md, "Isolation from the first connection"). kube-router
// puts a new pod under its NetworkPolicies on its pod event, a few tens of milliseconds after the container has
// started: what the author's image runs in those first milliseconds is the author's own start-up code (trusted,
// like the image). The guarantee is about players: the instance is not Running, and no path carries a connection
// to it, before its rules are in place. Instances of the probe image with egress None try, from the moment their
// process starts and every 20 ms for 10 s, a pod of another namespace, the public and the metadata stand-ins; the
// test meanwhile reads the status every 20 ms and connects to the node port every 20 ms. Asserted: no forbidden
// target is reached from the moment the status says Running, nor from the first connection that got through;
// measured and printed: the start window (how long after the process's start its packets still got out).
import { createServer, type Server } from 'node:net'
import t from 'tap'
import { createNamespace } from '../cluster/harness.js'
import { kubectlOk } from '../support/kube/kubectl.js'
import { app, definition, METADATA_IP, podOf, PUBLIC_IP, startNodeSuite, workstation } from './harness.js'
import { firstAnswerThroughNodePort, whenRunning } from './timing.js'

const suite = await startNodeSuite(t)
const OWNERS = ['p1', 'p2', 'p3', 'p4', 'p5']
const WATCH_SECONDS = 10

interface Window {
  attempts: number
  reached: number
  /** ms from the process's start to the start of the last attempt that got through (-1: none did) */
  lastReachedMs: number
  /** the same moment in Unix ms (-1: none) */
  lastReachedAtMs: number
}

interface Instance {
  name: string
  /** Unix ms: the Challenge created, the probe's process started, the first Running read, the first connection that got the app's answer */
  created: number
  started: number
  running: number
  connected: number
  windows: Record<string, Window>
}

async function listen(address: string): Promise<Server> {
  const server = createServer((socket) => socket.on('error', () => undefined).end('stand-in\n'))
  await new Promise<void>((resolve) => server.listen(80, address, resolve))
  return server
}

t.test('egress None holds before any player can connect: from Running, and from the first connection', async (t) => {
  const servers = await Promise.all([listen(METADATA_IP), listen(PUBLIC_IP)])
  t.teardown(() => servers.forEach((server) => server.close()))
  const s = await suite.scenario(t, 'startup-egress')
  const other = await createNamespace(suite, t, 'startup-elsewhere')
  const elsewhere = await workstation(suite, other, 'elsewhere')
  const targets = `elsewhere=tcp:${elsewhere.ip}:8080 public=tcp:${PUBLIC_IP}:80 metadata=tcp:${METADATA_IP}:80`
  const env = [
    { name: 'PROBE_TARGETS', value: targets },
    { name: 'PROBE_SECONDS', value: String(WATCH_SECONDS) },
  ]
  await s.create(
    definition('early', {
      pod: app('probe', 8080, { env }),
      expose: { type: 'NodePort', port: 8080 },
      network: { egress: 'None' },
    }),
  )
  const instances: Instance[] = []
  for (const owner of OWNERS) {
    const name = `early-u-${owner}`
    const created = Date.now()
    await s.create(s.challenge('early', owner))
    const connected = firstAnswerThroughNodePort(s, name, created, 'probe 8080')
    const { at: running } = await whenRunning(s, name, created)
    const pod = await podOf(s, name)
    // The report comes WATCH_SECONDS after the process started.
    let line: string | undefined
    for (let i = 0; i < 100 && line === undefined; i++) {
      const logs = await kubectlOk(suite.kubectl, ['logs', '-n', s.ns, pod.name])
      line = logs.stdout.split('\n').find((l) => l.startsWith('PROBE '))
      if (line === undefined) await new Promise((r) => setTimeout(r, 200))
    }
    if (line === undefined) throw new Error(`${name}: no PROBE report in its log`)
    const report = JSON.parse(line.slice('PROBE '.length)) as { startedAtMs: number; startup: Record<string, Window> }
    instances.push({
      name,
      created,
      started: report.startedAtMs,
      running: created + running,
      connected: created + (await connected),
      windows: report.startup,
    })
  }
  const rows = instances.map((x) => {
    const reached = Object.entries(x.windows).map(
      ([target, w]) => `${target} ${w.reached}/${w.attempts}${w.reached > 0 ? ` until ${w.lastReachedMs} ms` : ''}`,
    )
    return `  ${x.name.padEnd(12)} process start +${x.started - x.created} ms, first connection +${x.connected - x.created} ms, Running +${x.running - x.created} ms (from create); reached from the start: ${reached.join(', ')}`
  })
  t.comment(`attempts from the container's start (every 20 ms for ${WATCH_SECONDS} s):\n${rows.join('\n')}`)
  const window = Math.max(-1, ...instances.flatMap((x) => Object.values(x.windows).map((w) => w.lastReachedMs)))
  const leaky = instances.filter((x) => Object.values(x.windows).some((w) => w.reached > 0)).length
  t.comment(
    `start window: packets of ${leaky} of ${instances.length} instances got out, the last ${window} ms after their process started; the first connection came ${Math.min(...instances.map((x) => x.connected - x.started))}–${Math.max(...instances.map((x) => x.connected - x.started))} ms after it, Running ${Math.min(...instances.map((x) => x.running - x.started))}–${Math.max(...instances.map((x) => x.running - x.started))} ms after it`,
  )

  t.ok(
    instances.every((x) => Object.values(x.windows).every((w) => w.attempts > 0)),
    'every instance tried every target',
  )
  // The watch must outlast both moments, or "nothing after them" would hold for want of attempts.
  const uncovered = instances
    .filter((x) => x.started + WATCH_SECONDS * 1000 < Math.max(x.running, x.connected) + 1000)
    .map((x) => x.name)
  t.strictSame(uncovered, [], `each probe kept trying for at least 1 s after Running and after the first connection`)
  const after = (moment: 'running' | 'connected') =>
    instances.flatMap((x) =>
      Object.entries(x.windows)
        .filter(([, w]) => w.lastReachedAtMs >= 0 && w.lastReachedAtMs >= x[moment])
        .map(([target, w]) => `${x.name} -> ${target} at ${w.lastReachedMs} ms`),
    )
  t.strictSame(after('running'), [], 'no packet of an egress-None instance gets out once its status says Running')
  t.strictSame(
    after('connected'),
    [],
    'no packet of an egress-None instance gets out once a player could connect to it',
  )
})
