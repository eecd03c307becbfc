// Isolation before any player can connect (docs/security.md). kube-router puts a new pod under its NetworkPolicies on
// its pod event, some time after the pod's network exists; every instance's pod starts with the isolation gate
// (docs/api.md), an init container that lets the author's container start only once 3 attempts in a row at the API
// server's Service were blocked. 100 egress-None instances of the probe image (NodePort): 20 created one after
// another, then 40 at once twice (the node starting 40 pods, and kube-router programming them, together). Each probe
// tries, from its process's start and every 20 ms for 20 s, a pod of another namespace, the public and the metadata
// stand-ins and the API server; the test meanwhile tries every node port every 20 ms. Asserted for every instance:
// the gate said when the rules were in force; the author's process started after the gate passed; it reached nothing
// it may not, ever (its watch outlasting the first connection); the first connection through the node port came
// after the rules were in force. Printed: how long the rules were still open after the gate's start (what the
// author's code would have had without it), and the margin from the rules to the first connection. (That Running
// comes after the first connection is reachable.test.ts's.)
import { loadavg } from 'node:os'
import { createServer, type Server } from 'node:net'
import t from 'tap'
// What the isolation gate prints when it passes (its instants in Unix ms).
import type { Report as GateReport } from '../../src/gate.js'
import { createNamespace } from '../support/kube/harness.js'
import { kubectlOk } from '../support/kube/kubectl.js'
import {
  app,
  definition,
  METADATA_IP,
  NODE_IP,
  PUBLIC_IP,
  startNodeSuite,
  workstation,
  type Json,
  type Scenario,
} from '../support/node/harness.js'
import { banner } from '../support/node/timing.js'

const suite = await startNodeSuite(t)
const WATCH_SECONDS = 20
const API_SERVICE = '10.0.0.1:443'
/** 100 starts: 20 one after another, then 40 at once, twice. */
const WAVES = [
  { label: 'one after another', count: 20, together: false },
  { label: '40 at once', count: 40, together: true },
  { label: '40 at once', count: 40, together: true },
]

interface Window {
  attempts: number
  reached: number
  /** ms from the process's start to the start of the last attempt that got through (-1: none did) */
  lastReachedMs: number
}

/** One instance, as the test saw it (Unix ms, the test's clock: the node's, as everything runs on one machine). */
interface Tracked {
  name: string
  wave: number
  created: number
  port?: number
  /** the start of the first connection through the node port that got the app's answer */
  connected?: number
  error?: string
}

interface Instance extends Tracked {
  connected: number
  gate: GateReport
  /** the probe's process start (Unix ms), and what it reached from there */
  started: number
  windows: Record<string, Window>
}

async function listen(address: string): Promise<Server> {
  const server = createServer((socket) => socket.on('error', () => undefined).end('stand-in\n'))
  await new Promise<void>((resolve) => server.listen(80, address, resolve))
  return server
}

/**
 * Every instance of the namespace at once: every 20 ms a connection to each node port that has not answered yet (each
 * on its own: one waiting for its timeout must not hide the moment the path opens), and every 200 ms, while one has
 * not answered, one list of the Services (their node ports) and one of the Challenges (an Error). The hook server and
 * the controller run in this process: the watch stays light.
 */
function watch(s: Scenario): { tracked: Map<string, Tracked>; stop(): void } {
  const tracked = new Map<string, Tracked>()
  let stopped = false
  let tick = 0
  const loop = async () => {
    while (!stopped) {
      const waiting = [...tracked.values()].some((one) => one.connected === undefined)
      if (waiting && tick++ % 10 === 0) {
        const [services, challenges] = await Promise.all([
          s.list(`/api/v1/namespaces/${s.ns}/services`),
          s.list(`/apis/challenge-hooks.dev/v1alpha1/namespaces/${s.ns}/challenges`),
        ])
        for (const service of services) {
          const one = tracked.get(service.metadata.name)
          const port = ((service.spec as Json | undefined)?.ports as { nodePort?: number }[] | undefined)?.[0]?.nodePort
          if (one !== undefined && one.port === undefined) one.port = port
        }
        for (const challenge of challenges) {
          const one = tracked.get(challenge.metadata.name)
          const status = (challenge.status ?? {}) as Json
          if (one === undefined) continue
          if (status.phase === 'Error') one.error = `${String(status.reason)}: ${String(status.message)}`
        }
      }
      for (const one of tracked.values()) {
        if (one.port === undefined || one.connected !== undefined) continue
        const startedAt = Date.now()
        void banner(NODE_IP, one.port).then((got) => {
          if (got === 'probe 8080' && (one.connected === undefined || startedAt < one.connected))
            one.connected = startedAt
        })
      }
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  const running = loop()
  return {
    tracked,
    stop: () => {
      stopped = true
      void running
    },
  }
}

/** Waits until every one of `names` has answered through its node port (fails on an Error). */
async function connected(tracked: Map<string, Tracked>, names: string[], timeoutMs = 240_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  const done = (one: Tracked) => one.connected !== undefined
  for (;;) {
    const all = names.map((name) => tracked.get(name) as Tracked)
    const failed = all.filter((one) => one.error !== undefined)
    if (failed.length > 0) throw new Error(failed.map((one) => `${one.name}: ${one.error as string}`).join('\n'))
    if (all.every(done)) return
    if (Date.now() > deadline) {
      const waiting = all.filter((one) => !done(one))
      throw new Error(`not reachable in time: ${waiting.map((one) => one.name).join(', ')}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** The JSON line a container's log starts with `prefix` on, once it is there (the probe's comes WATCH_SECONDS in). */
async function logLine(s: Scenario, pod: string, container: string, prefix: string): Promise<string> {
  for (let i = 0; i < 150; i++) {
    const logs = await kubectlOk(suite.kubectl, ['logs', '-n', s.ns, pod, '-c', container])
    const line = logs.stdout.split('\n').find((l) => l.startsWith(prefix))
    if (line !== undefined) return line
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`${pod}/${container}: no line starting with ${prefix} in its log`)
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
const spread = (values: number[]) =>
  values.length === 0 ? 'none' : `${Math.min(...values)}–${Math.max(...values)} ms (median ${median(values)})`

t.test(
  'the isolation gate: no author process and no connection before the egress rules are in force, over 100 starts',
  async (t) => {
    const servers = await Promise.all([listen(METADATA_IP), listen(PUBLIC_IP)])
    t.teardown(() => servers.forEach((server) => server.close()))
    const s = await suite.scenario(t, 'startup-egress')
    const other = await createNamespace(suite, t, 'startup-elsewhere')
    const elsewhere = await workstation(suite, other, 'elsewhere')
    const targets = `elsewhere=tcp:${elsewhere.ip}:8080 public=tcp:${PUBLIC_IP}:80 metadata=tcp:${METADATA_IP}:80 apiserver=tcp:${API_SERVICE}`
    await s.create(
      definition('early', {
        pod: app('probe', 8080, {
          env: [
            { name: 'PROBE_TARGETS', value: targets },
            { name: 'PROBE_SECONDS', value: String(WATCH_SECONDS) },
          ],
          // A hundred pods on two cores: small requests; half a core to start node (the gate) and the probe.
          resources: { requests: { cpu: '5m', memory: '16Mi' }, limits: { cpu: '500m', memory: '128Mi' } },
        }),
        expose: { type: 'NodePort', port: 8080 },
        network: { egress: 'None' },
      }),
    )
    const watcher = watch(s)
    t.teardown(() => watcher.stop())
    const { tracked } = watcher
    const loads: string[] = []
    const instances: Instance[] = []
    let n = 0
    for (const [wave, { label, count, together }] of WAVES.entries()) {
      const names = Array.from({ length: count }, () => `early-u-p${++n}`)
      const create = async (name: string) => {
        tracked.set(name, { name, wave, created: Date.now() })
        await s.create(s.challenge('early', name.replace('early-u-', '')))
      }
      if (together) {
        await Promise.all(names.map(create))
      } else {
        // The next one once this one answers: their starts do not overlap.
        for (const name of names) {
          await create(name)
          await connected(tracked, [name])
        }
      }
      await connected(tracked, names)
      loads.push(`load average ${loadavg()[0]?.toFixed(1)} when the last one answered`)
      // What the gates and the probes said (a probe's report comes WATCH_SECONDS after its start), ten at a time;
      // then the wave goes, so that the next one starts beside its teardown rather than beside idle pods.
      for (let at = 0; at < names.length; at += 10) {
        instances.push(
          ...(await Promise.all(
            names.slice(at, at + 10).map(async (name) => {
              const gate = JSON.parse(await logLine(s, name, 'isolation-gate', '{"isolationGate"')) as GateReport
              const probe = JSON.parse((await logLine(s, name, 'app', 'PROBE ')).slice('PROBE '.length)) as {
                startedAtMs: number
                startup: Record<string, Window>
              }
              const one = tracked.get(name) as Tracked & { connected: number }
              return { ...one, gate, started: probe.startedAtMs, windows: probe.startup }
            }),
          )),
        )
      }
      await kubectlOk(suite.kubectl, ['delete', 'challenges', '-n', s.ns, ...names, '--wait=false'])
      t.comment(
        `${label}: done at +${((Date.now() - (tracked.get(names[0] as string) as Tracked).created) / 1000).toFixed(0)} s`,
      )
    }
    watcher.stop()
    // The namespace's teardown waits a minute for what is left: the last wave's teardown goes first.
    for (let i = 0; i < 600; i++) {
      const left = await s.list(`/apis/challenge-hooks.dev/v1alpha1/namespaces/${s.ns}/challenges`)
      if (left.length === 0) break
      await new Promise((r) => setTimeout(r, 500))
    }

    const rows = instances.map((x) => {
      const open =
        x.gate.lastReachedAt === null
          ? 'in force at its first try'
          : `open until +${x.gate.lastReachedAt - x.gate.startedAt}`
      return `  ${x.name.padEnd(13)} gate +${x.gate.startedAt - x.created} ms from create: rules ${open}, blocked from +${x.gate.firstBlockedAt - x.gate.startedAt}, passed +${x.gate.passedAt - x.gate.startedAt} (${x.gate.reached}/${x.gate.attempts} reached); app +${x.started - x.gate.passedAt} after it; first connection +${x.connected - x.gate.firstBlockedAt} after the rules`
    })
    t.comment(`each instance, from the gate's start (ms):\n${rows.join('\n')}`)
    for (const [wave, { label }] of WAVES.entries()) {
      const of = instances.filter((x) => x.wave === wave)
      const open = of.filter((x) => x.gate.lastReachedAt !== null)
      t.comment(
        [
          `${label} (${of.length}): ${loads[wave] as string}`,
          `  rules not yet in force at the gate's first try: ${open.length} of ${of.length}, still open up to ${spread(open.map((x) => (x.gate.lastReachedAt as number) - x.gate.startedAt))} after the gate started`,
          `  rules seen in force (first of the 3 blocked tries) ${spread(of.map((x) => x.gate.firstBlockedAt - x.gate.startedAt))} after the gate started; the gate passed ${spread(of.map((x) => x.gate.passedAt - x.gate.startedAt))} after it started`,
          `  the author's process started ${spread(of.map((x) => x.started - x.gate.passedAt))} after the gate passed`,
          `  margin, rules in force -> first connection through the node port: ${spread(of.map((x) => x.connected - x.gate.firstBlockedAt))}`,
        ].join('\n'),
      )
    }
    t.comment(
      `all ${instances.length}: margin, rules in force -> first connection ${spread(instances.map((x) => x.connected - x.gate.firstBlockedAt))}; rules in force -> the author's process ${spread(instances.map((x) => x.started - x.gate.firstBlockedAt))}`,
    )

    t.equal(instances.length, 100, '100 starts')
    t.strictSame(
      instances
        .filter((x) => x.gate.passedAt < x.gate.firstBlockedAt || x.gate.firstBlockedAt < x.gate.startedAt)
        .map((x) => x.name),
      [],
      'every gate said when the rules were in force, before it passed',
    )
    t.strictSame(
      instances
        .filter((x) => x.started < x.gate.passedAt)
        .map((x) => `${x.name}: ${x.gate.passedAt - x.started} ms early`),
      [],
      'no author process started before its gate passed',
    )
    t.strictSame(
      instances.flatMap((x) =>
        Object.entries(x.windows)
          .filter(([, w]) => w.reached > 0)
          .map(
            ([target, w]) =>
              `${x.name} -> ${target} ${w.reached} times, the last ${w.lastReachedMs} ms after it started`,
          ),
      ),
      [],
      'no packet of an egress-None instance got out, from its process start on',
    )
    t.strictSame(
      instances
        .filter((x) => Object.values(x.windows).some((w) => w.attempts === 0) || Object.keys(x.windows).length !== 4)
        .map((x) => x.name),
      [],
      'every probe tried every target',
    )
    // The watch must outlast the first connection, or "nothing got out" would hold for want of attempts.
    t.strictSame(
      instances.filter((x) => x.started + WATCH_SECONDS * 1000 < x.connected + 1000).map((x) => x.name),
      [],
      'each probe kept trying for at least 1 s after the first connection',
    )
    t.strictSame(
      instances
        .filter((x) => x.connected < x.gate.firstBlockedAt)
        .map((x) => `${x.name}: ${x.gate.firstBlockedAt - x.connected} ms early`),
      [],
      'no connection through the node port before the egress rules were in force',
    )
  },
)
