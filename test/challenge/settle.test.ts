// The settle time when the path comes after the pod's Ready: docs/api.md ("Running only once traffic gets
// through") counts ENDPOINT_SETTLE_MS (2.5 s here, the default) from the later of the pod's Ready time and the path's
// creation (the Service, the route, a Gateway's acceptance). Each world below has its path created, accepted or
// re-created after Ready, and every instant is worked out by hand from that rule: the path's instant + 2.5 s, never
// Ready's. The same rule over generated worlds: test/fuzz/timers.test.ts (its path lost and re-created).
import t from 'tap'
import { formatTime } from '../../src/challenge/time.js'
import { loadConfig, type Config } from '../../src/config/config.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { TEST_ENV } from '../helpers/app.js'
import { at, prepared, step, type Step } from '../helpers/drive.js'
import { challenge, observedChildren, readyPodStatus, webDefinition, type Json } from '../helpers/world.js'

const T = (seconds: number) => formatTime(at(seconds).getTime())
const ROUTE_KINDS = new Set<unknown>(['Ingress', 'HTTPRoute'])

interface PathWorld {
  /** the pod Ready since (s after 12:00:00) */
  ready: number
  /** the Service created at (s), with its node port allocated; undefined: not there */
  service?: number
  /** the route created at (s); undefined: not there */
  route?: number
  /** a Gateway API route's Accepted and ResolvedRefs since (s); undefined: its Gateway has not reported yet */
  accepted?: number
}

/** An instance of `definition` under `config`, admitted at 12:00:00, and the world of its children as described. */
function instance(definition: Json, config: Partial<Config> = {}) {
  const related = [webDefinition({ lifetimeSeconds: 600, ...definition })]
  const first = prepared(challenge(), { related, config, now: at(0) })
  const world = (path: PathWorld): KubeObject[] =>
    observedChildren(first.response.children, (child) => {
      if (child.kind === 'Pod') {
        const since = T(path.ready)
        return { status: readyPodStatus([{ name: 'web' }], { scheduled: since, started: since, ready: since }) }
      }
      if (child.kind === 'Service') {
        const spec = structuredClone(child.spec) as { ports: Json[]; type: string }
        if (spec.type === 'NodePort') for (const port of spec.ports) port.nodePort = 31337
        return { metadata: { ...(child.metadata as Json), creationTimestamp: T(path.service ?? 0) }, spec }
      }
      if (ROUTE_KINDS.has(child.kind)) {
        const metadata = { ...(child.metadata as Json), creationTimestamp: T(path.route ?? 0) }
        if (path.accepted === undefined) return { metadata }
        const since = T(path.accepted)
        const parentRef = { namespace: 'gateway-system', name: 'challenges' }
        const conditions = [
          { type: 'Accepted', status: 'True', reason: 'Accepted', lastTransitionTime: since },
          { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', lastTransitionTime: since },
        ]
        return { metadata, status: { parents: [{ parentRef, conditions }] } }
      }
      return {}
    }).filter(
      (child) =>
        (child.kind !== 'Service' || path.service !== undefined) &&
        (!ROUTE_KINDS.has(child.kind) || path.route !== undefined),
    )
  const sync = (parent: Step['parent'], path: PathWorld, seconds: number): Step =>
    step(parent, { related, config, children: world(path), now: at(seconds) })
  return { parent: first.parent, sync }
}

/** What the player sees of an answer. */
function seen(s: Step) {
  return {
    phase: s.status.phase,
    reason: s.status.reason,
    message: s.status.message,
    startedAt: s.status.startedAt,
    expiresAt: s.status.expiresAt,
    endpoint: s.status.endpoint !== undefined,
    resyncAfterSeconds: s.response.resyncAfterSeconds,
  }
}

const starting = (resyncAfterSeconds: number) => ({
  phase: 'Pending',
  reason: 'Starting',
  message: 'The instance is starting.',
  startedAt: undefined,
  expiresAt: undefined,
  endpoint: false,
  resyncAfterSeconds,
})

/** Running from `started` for the definition's 600 s; woken at MAX_RESYNC_SECONDS (300), before its expiry. */
const running = (started: number) => ({
  phase: 'Running',
  reason: 'Ready',
  message: `The instance is running until ${T(started + 600)}.`,
  startedAt: T(started),
  expiresAt: T(started + 600),
  endpoint: true,
  resyncAfterSeconds: 300,
})

t.test('an Ingress created after the pod is Ready: Running 2.5 s after the route, not after Ready', async (t) => {
  const { parent, sync } = instance({})
  // Ready at :10, the Service since :00, the Ingress since :20: reachable at :22.5.
  const path = { ready: 10, service: 0, route: 20 }
  t.strictSame(seen(sync(parent, path, 21)), starting(1.5), ':21, 1.5 s before it settles')
  t.strictSame(seen(sync(parent, path, 22)), starting(0.5), ':22, half a second before')
  t.strictSame(seen(sync(parent, path, 23)), running(23), ':23')
})

t.test('a Service created after the pod is Ready (NodePort): Running 2.5 s after the Service', async (t) => {
  const { parent, sync } = instance({ expose: { type: 'NodePort', port: 8080 } })
  const before = sync(parent, { ready: 10 }, 20)
  t.strictSame(
    seen(before),
    {
      ...starting(280),
      reason: 'WaitingForEndpoint',
      message: 'The instance is ready; waiting for its address.',
    },
    ':20, ready without a Service: waiting for its address, woken at the startup deadline (:300)',
  )
  const path = { ready: 10, service: 30 }
  t.strictSame(seen(sync(before.parent, path, 31)), starting(1.5), ':31, the Service since :30')
  t.strictSame(seen(sync(before.parent, path, 32)), starting(0.5), ':32')
  t.strictSame(seen(sync(before.parent, path, 33)), running(33), ':33, settled at :32.5')
})

t.test('a Gateway that accepts the route after the pod is Ready: Running 2.5 s after the acceptance', async (t) => {
  const gateway = loadConfig({
    ...TEST_ENV,
    HTTP_ROUTING: 'GatewayAPI',
    GATEWAY: 'gateway-system/challenges',
    BASE_DOMAIN: 'ctf.example.org',
  })
  const { parent, sync } = instance({}, gateway)
  const waiting = sync(parent, { ready: 10, service: 0, route: 5 }, 20)
  t.strictSame(
    seen(waiting),
    {
      ...starting(280),
      reason: 'WaitingForEndpoint',
      message: 'The instance is ready; the gateway has not accepted its route yet (Pending).',
    },
    ':20, the route since :05 but not accepted',
  )
  // Accepted since :40: reachable at :42.5.
  const path = { ready: 10, service: 0, route: 5, accepted: 40 }
  t.strictSame(seen(sync(waiting.parent, path, 41)), starting(1.5), ':41')
  t.strictSame(seen(sync(waiting.parent, path, 42)), starting(0.5), ':42')
  t.strictSame(seen(sync(waiting.parent, path, 43)), running(43), ':43')
})

t.test('a path re-created while Running: Pending until it has settled again, the run and its times kept', async (t) => {
  for (const lost of ['route', 'service'] as const) {
    const { parent, sync } = instance({})
    // Everything since :00, Ready at :10: Running from the sync at :30, until 12:10:30.
    const first = sync(parent, { ready: 10, service: 0, route: 0 }, 30)
    t.strictSame(seen(first), running(30), `${lost}: Running at :30`)
    // At :60 the ${lost} is gone (deleted by hand); the answer asks for it again, and it is created at :60.
    const gone = sync(first.parent, { ready: 10, service: 0, route: 0, [lost]: undefined }, 60)
    t.strictSame(
      seen(gone),
      {
        phase: 'Pending',
        reason: 'WaitingForEndpoint',
        message: 'The instance is ready; waiting for its address.',
        startedAt: T(30),
        expiresAt: T(630),
        endpoint: false,
        resyncAfterSeconds: 300,
      },
      `${lost} gone at :60: no endpoint, the play time still counted from :30 (woken at MAX_RESYNC_SECONDS)`,
    )
    t.ok(
      gone.response.children.some((child) => child.kind === (lost === 'route' ? 'Ingress' : 'Service')),
      `${lost}: asked for again`,
    )
    const path = { ready: 10, service: 0, route: 0, [lost]: 60 }
    const settling = { ...starting(1.5), startedAt: T(30), expiresAt: T(630) }
    t.strictSame(seen(sync(gone.parent, path, 61)), settling, `${lost}: :61, re-created at :60, settles at :62.5`)
    t.strictSame(
      seen(sync(gone.parent, path, 62)),
      { ...settling, resyncAfterSeconds: 0.5 },
      `${lost}: :62, half a second before`,
    )
    t.strictSame(seen(sync(gone.parent, path, 63)), running(30), `${lost}: :63, Running again, same run`)
  }
})
