// End to end, over real HTTP: TLS (raw TCP by SNI) and HTTP challenges through each routing choice, with the
// routing components of manifests/components/ applied to the CompositeController and the hook server's settings.
// The simulator's gateway controller plays the Gateway (Accepted / ResolvedRefs in the route's status); the
// Gateway itself is the one of docs/examples/routing/gateway.yaml.
import t from 'tap'
import type { KubeObject } from '../support/simulator/index.js'
import {
  challengeRef,
  conditionOf,
  deletedBy,
  exampleGateway,
  GATEWAY_ENV,
  NS,
  secondsUntil,
  startWorld,
  syncsOf,
  type Json,
  type World,
} from './harness.js'
import { ALICE, expectedHost, expectedInstanceId } from '../helpers/contract.js'

const TLS = 'pwn-tls-u-alice'
const WEB = 'web-login-u-alice'
const GATEWAY_NS = 'gateway-system'

const routeRef = (kind: string, name: string) => ({
  apiVersion: kind.endsWith('TCP') || kind === 'IngressRoute' ? 'traefik.io/v1alpha1' : 'gateway.networking.k8s.io/v1',
  kind,
  namespace: NS,
  name,
})

/** A cold instance's exposure rule: its `-isolate` policy's ingress after the rule for its own pods (docs/api.md, Children). */
function exposureRules(world: World, p: string): Json[] {
  const ref = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', namespace: NS, name: `${p}-isolate` }
  return ((world.cluster.get(ref)?.spec as Json).ingress as Json[]).slice(1)
}

function netcatWith(route: string, p: string): string[] {
  return [`Pod/${p}`, `NetworkPolicy/${p}-isolate`, `Secret/${p}-flag`, `Service/${p}`, `${route}/${p}`].sort()
}

async function startTls(world: World, t: Parameters<World['run']>[0]): Promise<string> {
  world.create(world.definition('pwn-tls'))
  world.create(world.challenge('pwn-tls', 'alice'))
  await world.run(t)
  return expectedInstanceId(world.config.flagSecret, { ...ALICE, definition: 'pwn-tls' })
}

t.test(
  'TLS through the Gateway API: a TLSRoute, Pending until the Gateway accepts it, Running with ncat --ssl',
  async (t) => {
    const world = await startWorld(t, { components: ['gateway-api-tls'], env: GATEWAY_ENV })
    const { cluster, sim } = world
    const id = await startTls(world, t)
    const host = `${id}.tcp.ctf.example.org`
    t.hasStrict(world.status(TLS), { phase: 'Pending', reason: 'Starting' })
    t.strictSame(world.children(TLS), netcatWith('TLSRoute', TLS), 'a ClusterIP Service and a TLSRoute, no node port')
    t.equal(
      (cluster.get({ apiVersion: 'v1', kind: 'Service', namespace: NS, name: TLS })?.spec as Json).type,
      'ClusterIP',
    )
    t.strictSame(cluster.get(routeRef('TLSRoute', TLS))?.spec, {
      parentRefs: [{ namespace: GATEWAY_NS, name: 'challenges', sectionName: 'tls' }],
      hostnames: [host],
      rules: [{ backendRefs: [{ name: TLS, port: 1337 }] }],
    })
    t.strictSame(
      exposureRules(world, TLS),
      [
        {
          from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': GATEWAY_NS } } }],
          ports: [{ protocol: 'TCP', port: 1337 }],
        },
      ],
      "only the Gateway's pods reach the port",
    )
    await world.assertQuiet(t)

    // The pod is ready, but no Gateway exists yet: nobody reports on the route, so it is not the endpoint.
    await world.settle(t)
    const waiting = world.status(TLS)
    t.hasStrict(waiting, {
      phase: 'Pending',
      reason: 'WaitingForEndpoint',
      message: 'The instance is ready; the gateway has not accepted its route yet (Pending).',
    })
    t.notOk('endpoint' in waiting)
    t.notOk('startedAt' in waiting, 'the play time has not started')
    t.hasStrict(conditionOf(waiting, 'EndpointReady'), {
      status: 'False',
      reason: 'RouteNotAccepted',
      message: 'Gateway gateway-system/challenges (listener tls) has not reported on the TLSRoute yet.',
    })
    await world.assertQuiet(t)

    // The operator applies the example Gateway: its controller accepts the route.
    cluster.advance(30)
    world.create(exampleGateway())
    await world.settle(t)
    const route = cluster.get(routeRef('TLSRoute', TLS)) as KubeObject
    t.hasStrict((route.status as Json).parents, [
      {
        parentRef: { namespace: GATEWAY_NS, name: 'challenges', sectionName: 'tls' },
        conditions: [
          { type: 'Accepted', status: 'True' },
          { type: 'ResolvedRefs', status: 'True' },
        ],
      },
    ])
    const running = world.status(TLS)
    t.hasStrict(running, {
      phase: 'Running',
      reason: 'Ready',
      startedAt: '2025-01-01T00:00:30Z',
      expiresAt: '2025-01-01T01:00:30Z',
      endpoint: { type: 'TLS', host, port: 443, connection: `ncat --ssl ${host} 443` },
    })
    t.notOk('url' in (running.endpoint as Json), 'no url for a TLS endpoint')
    t.hasStrict(conditionOf(running, 'EndpointReady'), {
      status: 'True',
      reason: 'EndpointAllocated',
      message: `ncat --ssl ${host} 443`,
    })
    await world.assertQuiet(t)
    t.equal(cluster.settle(), 0, "the Gateway's verdict is stable: no rewrite of the route status")

    // At expiry the route leaves first, with the Service.
    const from = sim.history.length
    await world.advance(t, secondsUntil(cluster, running.expiresAt))
    t.hasStrict(world.status(TLS), { phase: 'Deleted', reason: 'Expired' })
    const steps = syncsOf(sim, TLS, from)
      .map(deletedBy)
      .filter((deleted) => deleted.length > 0)
    t.strictSame(
      steps,
      [[`Service/${TLS}`, `TLSRoute/${TLS}`], [`Pod/${TLS}`]],
      'traffic path (route, Service) first, then the workload',
    )
    t.equal(sim.events.length, 0, 'no sync error along the way')
  },
)

t.test(
  'a Gateway that refuses the route: WaitingForEndpoint with its reason, StartupTimeout if it lasts, Running once fixed',
  async (t) => {
    const world = await startWorld(t, { components: ['gateway-api-tls'], env: GATEWAY_ENV })
    const { cluster } = world
    // The example Gateway, but its TLS listener takes routes of its own namespace only (the default).
    const gateway = exampleGateway()
    const listeners = (gateway.spec as { listeners: Json[] }).listeners
    const tlsListener = listeners.find((listener) => listener.name === 'tls') as Json
    const allowed = tlsListener.allowedRoutes
    delete tlsListener.allowedRoutes
    world.create(gateway)
    await startTls(world, t)
    await world.settle(t)
    const refused = world.status(TLS)
    t.hasStrict(refused, {
      phase: 'Pending',
      reason: 'WaitingForEndpoint',
      message: 'The instance is ready; the gateway has not accepted its route yet (NotAllowedByListeners).',
    })
    t.hasStrict(conditionOf(refused, 'EndpointReady'), {
      reason: 'RouteNotAccepted',
      message:
        'Gateway gateway-system/challenges (listener tls) has not accepted the TLSRoute: Accepted is not True (NotAllowedByListeners).',
    })
    await world.assertQuiet(t)

    // The operator fixes the listener within the startup window: the route is accepted, the instance runs.
    const fixed = cluster.get({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      namespace: GATEWAY_NS,
      name: 'challenges',
    }) as KubeObject
    ;(
      (fixed.spec as { listeners: Json[] }).listeners.find((listener) => listener.name === 'tls') as Json
    ).allowedRoutes = allowed
    cluster.update(fixed)
    await world.settle(t)
    t.hasStrict(world.status(TLS), { phase: 'Running', endpoint: { type: 'TLS', port: 443 } })
    await world.assertQuiet(t)

    // Another instance whose route the Gateway never takes (no listener of that name) runs out of time.
    const late = await startWorld(t, {
      components: ['gateway-api-tls'],
      env: { ...GATEWAY_ENV, GATEWAY_TLS_LISTENER: 'tcp' },
    })
    late.create(exampleGateway())
    await startTls(late, t)
    await late.settle(t)
    t.match(late.status(TLS), { phase: 'Pending', reason: 'WaitingForEndpoint', message: /NoMatchingParent/ })
    await late.advance(t, 120)
    t.hasStrict(late.status(TLS), {
      phase: 'Error',
      reason: 'StartupTimeout',
      message:
        'The instance did not become ready within 120 seconds. The instance was ready, but the gateway has not accepted its route yet (NoMatchingParent).',
    })
    t.strictSame(
      late.children(TLS),
      [`NetworkPolicy/${TLS}-isolate`, `Pod/${TLS}`, `Secret/${TLS}-flag`],
      'torn down, the route first: the pod is terminating, the guards wait for it',
    )
    await late.settle(t)
    t.strictSame(late.children(TLS), [], 'then everything is gone')
  },
)

t.test(
  'TLS through Traefik: an IngressRouteTCP (HostSNI, TLS ended by Traefik), Running once observed and ready',
  async (t) => {
    const world = await startWorld(t, {
      components: ['traefik-tls'],
      env: {
        BASE_DOMAIN: 'ctf.example.org',
        TLS_PORT: '1337',
        INGRESS_NAMESPACE: 'traefik',
        INGRESS_POD_SELECTOR: 'app.kubernetes.io/name=traefik',
      },
    })
    const { cluster, sim } = world
    const id = await startTls(world, t)
    const host = `${id}.ctf.example.org`
    t.strictSame(world.children(TLS), netcatWith('IngressRouteTCP', TLS))
    t.strictSame(
      cluster.get(routeRef('IngressRouteTCP', TLS))?.spec,
      {
        entryPoints: ['tcpsecure'],
        routes: [{ match: `HostSNI(\`${host}\`)`, services: [{ name: TLS, port: 1337 }] }],
        tls: {},
      },
      'TLS ended by Traefik with its default certificate, never passthrough',
    )
    t.strictSame(
      exposureRules(world, TLS),
      [
        {
          from: [
            {
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'traefik' } },
              podSelector: { matchLabels: { 'app.kubernetes.io/name': 'traefik' } },
            },
          ],
          ports: [{ protocol: 'TCP', port: 1337 }],
        },
      ],
      "only Traefik's pods, by namespace and labels together",
    )
    await world.settle(t)
    t.hasStrict(world.status(TLS), {
      phase: 'Running',
      endpoint: { type: 'TLS', host, port: 1337, connection: `ncat --ssl ${host} 1337` },
    })
    await world.assertQuiet(t)

    // Deleted by the platform: the finalize hook takes the route out with the Service, first.
    const from = sim.history.length
    cluster.delete(challengeRef(TLS))
    await world.run(t)
    const steps = syncsOf(sim, TLS, from)
      .map(deletedBy)
      .filter((deleted) => deleted.length > 0)
    t.strictSame(steps, [[`IngressRouteTCP/${TLS}`, `Service/${TLS}`], [`Pod/${TLS}`]])
    await world.settle(t)
    await world.settle(t)
    t.equal(world.get(TLS), undefined, 'gone once nothing is left')
  },
)

t.test('HTTP through the Gateway API: an HTTPRoute on the HTTPS listener, https once accepted', async (t) => {
  const world = await startWorld(t, { components: ['gateway-api-http', 'gateway-api-tls'], env: GATEWAY_ENV })
  const { cluster } = world
  world.create(exampleGateway())
  world.create(world.definition('web-login'))
  world.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  const host = expectedHost(world.config.flagSecret, ALICE, 'ctf.example.org')
  t.strictSame(world.children(WEB), netcatWith('HTTPRoute', WEB))
  t.strictSame(cluster.get(routeRef('HTTPRoute', WEB))?.spec, {
    parentRefs: [{ namespace: GATEWAY_NS, name: 'challenges', sectionName: 'https' }],
    hostnames: [host],
    rules: [{ backendRefs: [{ name: WEB, port: 8080 }] }],
  })
  await world.settle(t)
  t.hasStrict(world.status(WEB), {
    phase: 'Running',
    endpoint: { type: 'HTTP', host, port: 443, url: `https://${host}/`, connection: `https://${host}/` },
  })
  await world.assertQuiet(t)
})

t.test('HTTP through Traefik: an IngressRoute with TLS, https once observed and ready', async (t) => {
  const world = await startWorld(t, {
    components: ['traefik-http', 'traefik-tls'],
    env: { BASE_DOMAIN: 'ctf.example.org', INGRESS_NAMESPACE: 'traefik' },
  })
  const { cluster } = world
  world.create(world.definition('web-login'))
  world.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  const host = expectedHost(world.config.flagSecret, ALICE, 'ctf.example.org')
  t.strictSame(world.children(WEB), netcatWith('IngressRoute', WEB))
  t.strictSame(cluster.get(routeRef('IngressRoute', WEB))?.spec, {
    entryPoints: ['websecure'],
    routes: [{ kind: 'Rule', match: `Host(\`${host}\`)`, services: [{ name: WEB, port: 8080 }] }],
    tls: {},
  })
  await world.settle(t)
  t.hasStrict(world.status(WEB), {
    phase: 'Running',
    endpoint: { type: 'HTTP', host, port: 443, url: `https://${host}/` },
  })
  await world.assertQuiet(t)
})

t.test(
  'without its routing installed, a TLS challenge is an Error/ConfigError that says what is missing',
  async (t) => {
    // The base install: no GATEWAY, TLS_ROUTING at its default (GatewayAPI).
    const bare = await startWorld(t)
    await startTls(bare, t)
    t.hasStrict(bare.status(TLS), {
      phase: 'Error',
      reason: 'ConfigError',
      message:
        'TLS challenges cannot be exposed yet: the operator has not set GATEWAY (TLS_ROUTING=GatewayAPI) or TLS_ROUTING=Traefik.',
    })
    t.strictSame(bare.children(TLS), [], 'nothing is created')
    // GATEWAY set, but the gateway-api-tls component (its child rule) is not installed.
    const noRule = await startWorld(t, { env: GATEWAY_ENV })
    await startTls(noRule, t)
    t.hasStrict(noRule.status(TLS), {
      phase: 'Error',
      reason: 'ConfigError',
      message:
        'This challenge cannot be exposed yet: the CompositeController has no child rule for TLSRoute.gateway.networking.k8s.io/v1 (the operator must install its routing component).',
    })
    t.strictSame(noRule.children(TLS), [])
    t.equal(noRule.sim.events.length, 0, 'Metacontroller is never asked for a child it cannot manage')
    await noRule.assertQuiet(t)
  },
)
