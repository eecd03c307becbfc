// Isolation from the first instant: code that runs as soon as a player's container starts must meet the same
// firewall as code that runs later. Instances of the probe image with egress None try, from the moment their
// process starts and every 20 ms for 3 s, a pod of another namespace, the public and the metadata stand-ins; their
// report (in the container's log) says how many attempts got through and when the last one that did started.
import { createServer, type Server } from 'node:net'
import t from 'tap'
import { createNamespace } from '../cluster/harness.js'
import { kubectlOk } from '../support/kube/kubectl.js'
import { app, definition, METADATA_IP, podOf, PUBLIC_IP, running, startNodeSuite, workstation } from './harness.js'

const suite = await startNodeSuite(t)
const OWNERS = ['p1', 'p2', 'p3']

interface Window {
  attempts: number
  reached: number
  lastReachedMs: number
}

async function listen(address: string): Promise<Server> {
  const server = createServer((socket) => socket.on('error', () => undefined).end('stand-in\n'))
  await new Promise<void>((resolve) => server.listen(80, address, resolve))
  return server
}

t.test('egress None holds from the moment the container starts', async (t) => {
  const servers = await Promise.all([listen(METADATA_IP), listen(PUBLIC_IP)])
  t.teardown(() => servers.forEach((server) => server.close()))
  const s = await suite.scenario(t, 'startup-egress')
  const other = await createNamespace(suite, t, 'startup-elsewhere')
  const elsewhere = await workstation(suite, other, 'elsewhere')
  const targets = `elsewhere=tcp:${elsewhere.ip}:8080 public=tcp:${PUBLIC_IP}:80 metadata=tcp:${METADATA_IP}:80`
  const env = [
    { name: 'PROBE_TARGETS', value: targets },
    { name: 'PROBE_SECONDS', value: '3' },
  ]
  await s.create(definition('early', { pod: app('probe', 8080, { env }), expose: { type: 'Internal', port: 8080 }, network: { egress: 'None' } }))
  const reports: Record<string, Record<string, Window>> = {}
  for (const owner of OWNERS) {
    const name = `early-u-${owner}`
    await s.create(s.challenge('early', owner))
    await running(s, name)
    const pod = await podOf(s, name)
    // The report comes 3 s after the process started.
    let line: string | undefined
    for (let i = 0; i < 50 && line === undefined; i++) {
      const logs = await kubectlOk(suite.kubectl, ['logs', '-n', s.ns, pod.name])
      line = logs.stdout.split('\n').find((l) => l.startsWith('PROBE '))
      if (line === undefined) await new Promise((r) => setTimeout(r, 200))
    }
    if (line === undefined) throw new Error(`${name}: no PROBE report in its log`)
    reports[name] = (JSON.parse(line.slice('PROBE '.length)) as { startup: Record<string, Window> }).startup
  }
  const rows = Object.entries(reports).map(
    ([name, windows]) => `  ${name.padEnd(16)}${Object.entries(windows).map(([target, w]) => `${target}: ${w.reached}/${w.attempts} reached${w.reached > 0 ? `, last at ${w.lastReachedMs} ms` : ''}`).join('; ')}`,
  )
  t.comment(`attempts from the container's start (every 20 ms for 3 s):\n${rows.join('\n')}`)
  const leaks = Object.entries(reports).flatMap(([name, windows]) => Object.entries(windows).filter(([, w]) => w.reached > 0).map(([target]) => `${name} -> ${target}`))
  t.ok(Object.values(reports).every((windows) => Object.values(windows).every((w) => w.attempts > 0)), 'every instance tried every target')
  t.strictSame(leaks, [], 'no packet of an egress-None instance got through, not even in its first milliseconds', {
    todo: 'issue 27, needs a decision: kube-router puts a new pod under its policies only after the pod starts (first ~60-150 ms here); the product renders the policies before the pod, but nothing holds the container back until they are enforced',
  })
})
