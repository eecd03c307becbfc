// A TLS and an HTTP challenge end to end on a real API server, with each routing choice installed as an operator
// installs it (the route CRDs of the pinned releases, then manifests/ with the routing components) and driven by
// the controller: Gateway API routes keep the instance Pending / WaitingForEndpoint until the test, playing the
// gateway controller, writes the route's Accepted status; Traefik routes count once they exist. Deletion takes
// the route out with the traffic path, first.
import t, { type Test } from 'tap'
import { expectedHost } from '../helpers/contract.js'
import { orderProblem } from '../helpers/order.js'
import { kubectlOk } from '../support/kube/kubectl.js'
import { routeParentStatus, type KubeObject } from '../support/simulator/index.js'
import { CRD_FILES, GATEWAY_API_MODULE, missingCrds, TRAEFIK_MODULE } from '../support/route-crds.js'
import { connect, startSuite, type Json, type Scenario, type Suite } from '../support/kube/harness.js'

const skip = missingCrds()
const env = skip === false ? await connect(t) : undefined
const TLS = { expose: { type: 'TLS', port: 1337 } }
const GATEWAY = 'gateway-system/challenges'

if (env !== undefined && env.owned) {
  for (const file of new Set(Object.values(CRD_FILES)))
    await kubectlOk(env.kubectl, ['apply', '--server-side', '-f', file])
  await kubectlOk(env.kubectl, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/httproutes.gateway.networking.k8s.io',
    'crd/tlsroutes.gateway.networking.k8s.io',
    'crd/ingressroutes.traefik.io',
    'crd/ingressroutetcps.traefik.io',
  ])
}
const skipReason = skip || (env?.owned === false ? 'an existing cluster: its route CRDs are left alone' : false)

/** The route the Challenge controls, once it exists. */
async function routeOf(s: Scenario, name: string, path: string): Promise<KubeObject> {
  for (let i = 0; ; i++) {
    const uid = (await s.get(name))?.metadata.uid
    const route = (await s.suite.rest.get<{ items: KubeObject[] }>(path)).items.find((r) =>
      r.metadata.ownerReferences?.some((ref) => ref.uid === uid),
    )
    if (route !== undefined) return route
    if (i > 150) throw new Error(`no route for ${name} at ${path}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/** What a gateway controller writes: the route's parent status, Accepted and ResolvedRefs as given. */
async function admitRoute(suite: Suite, path: string, route: KubeObject, accepted: true | string): Promise<void> {
  const parentRef = ((route.spec as Json).parentRefs as Json[])[0] as { name: string }
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z')
  const status = { parents: [routeParentStatus(route, parentRef, { accepted, resolvedRefs: true }, now)] }
  await suite.rest.call('PUT', `${path}/${route.metadata.name}/status`, { body: { ...route, status } })
}

async function deletedInOrder(t: Test, s: Scenario, name: string, routeKind: string): Promise<void> {
  const before = s.suite.recorder.deletions(s.ns).length
  await s.suite.kubectl(['delete', 'chal', name, '-n', s.ns, '--wait=true', '--timeout=60s'])
  const order = (await s.suite.recorder.deletionsThrough(s.ns, `Challenge/${name}`)).slice(before)
  t.equal(
    orderProblem(order, routeKind, 'Pod'),
    undefined,
    `the ${routeKind} leaves before the workload (${order.join(', ')})`,
  )
}

t.test(
  `Gateway API routing (${GATEWAY_API_MODULE}): Pending until the Gateway accepts the route, then Running`,
  { skip: skipReason },
  async (t) => {
    const suite = await startSuite(t, {
      components: ['gateway-api-http', 'gateway-api-tls'],
      hookEnv: {
        HTTP_ROUTING: 'GatewayAPI',
        TLS_ROUTING: 'GatewayAPI',
        GATEWAY,
        GATEWAY_HTTP_LISTENER: 'https',
        GATEWAY_TLS_LISTENER: 'tls',
        TLS_BASE_DOMAIN: 'tcp.ctf.example.org',
      },
    })
    const s = await suite.scenario(t, 'gateway-api')
    await s.create(s.definition('pwn-echo', TLS, 'pwn-tls'))
    await s.create(s.definition('web-login'))
    await s.create(s.challenge('pwn-tls', 'alice'))
    await s.create(s.challenge('web-login', 'alice'))
    for (const [name, kind, path] of [
      ['pwn-tls-u-alice', 'TLSRoute', `/apis/gateway.networking.k8s.io/v1/namespaces/${s.ns}/tlsroutes`],
      ['web-login-u-alice', 'HTTPRoute', `/apis/gateway.networking.k8s.io/v1/namespaces/${s.ns}/httproutes`],
    ] as const) {
      await t.test(kind, async (t) => {
        const waiting = await s.until(
          name,
          (st) => st.reason === 'WaitingForEndpoint',
          'WaitingForEndpoint (workload ready, route not accepted yet)',
        )
        t.hasStrict(waiting, { phase: 'Pending', reason: 'WaitingForEndpoint' })
        t.notOk('endpoint' in waiting, 'no endpoint before the Gateway accepts the route')
        const route = await routeOf(s, name, path)
        t.hasStrict(
          route.spec,
          {
            parentRefs: [
              { namespace: 'gateway-system', name: 'challenges', sectionName: kind === 'TLSRoute' ? 'tls' : 'https' },
            ],
          },
          'attached to the configured Gateway and listener',
        )
        await admitRoute(suite, path, route, 'NotAllowedByListeners')
        const refused = await s.until(
          name,
          (st) => st.reason === 'WaitingForEndpoint' && /NotAllowedByListeners|not accepted/i.test(String(st.message)),
          'the refusal in the message',
        )
        t.hasStrict(refused, { phase: 'Pending', reason: 'WaitingForEndpoint' }, 'a refused route keeps it Pending')
        await admitRoute(suite, path, await routeOf(s, name, path), true)
        const running = await s.until(name, (st) => st.phase === 'Running', 'Running')
        const owner = { namespace: s.ns, definition: name.split('-u-')[0] as string, kind: 'User', id: 'alice' }
        const host = expectedHost(
          suite.flagSecret,
          owner,
          kind === 'TLSRoute' ? 'tcp.ctf.example.org' : 'challenges.localhost',
        )
        if (kind === 'TLSRoute')
          t.strictSame(
            running.endpoint,
            { type: 'TLS', host, port: 443, connection: `ncat --ssl ${host} 443` },
            'the TLS endpoint',
          )
        else t.hasStrict(running.endpoint, { type: 'HTTP', host, url: `https://${host}/` }, 'the HTTPS endpoint')
        await deletedInOrder(t, s, name, kind)
      })
    }
  },
)

t.test(
  `Traefik routing (${TRAEFIK_MODULE}): Running once the workload is ready and the route exists`,
  { skip: skipReason },
  async (t) => {
    const suite = await startSuite(t, {
      components: ['traefik-http', 'traefik-tls'],
      hookEnv: {
        HTTP_ROUTING: 'Traefik',
        TLS_ROUTING: 'Traefik',
        TLS_BASE_DOMAIN: 'tcp.ctf.example.org',
        TLS_PORT: '8443',
      },
    })
    const s = await suite.scenario(t, 'traefik')
    await s.create(s.definition('pwn-echo', TLS, 'pwn-tls'))
    await s.create(s.definition('web-login'))
    await s.create(s.challenge('pwn-tls', 'bob'))
    await s.create(s.challenge('web-login', 'bob'))
    for (const [name, kind, path] of [
      ['pwn-tls-u-bob', 'IngressRouteTCP', `/apis/traefik.io/v1alpha1/namespaces/${s.ns}/ingressroutetcps`],
      ['web-login-u-bob', 'IngressRoute', `/apis/traefik.io/v1alpha1/namespaces/${s.ns}/ingressroutes`],
    ] as const) {
      await t.test(kind, async (t) => {
        const running = await s.until(name, (st) => st.phase === 'Running', 'Running')
        const route = await routeOf(s, name, path)
        t.equal(route.kind, kind)
        const owner = { namespace: s.ns, definition: name.split('-u-')[0] as string, kind: 'User', id: 'bob' }
        if (kind === 'IngressRouteTCP') {
          const host = expectedHost(suite.flagSecret, owner, 'tcp.ctf.example.org')
          t.strictSame(
            running.endpoint,
            { type: 'TLS', host, port: 8443, connection: `ncat --ssl ${host} 8443` },
            'the TLS endpoint on TLS_PORT',
          )
          t.hasStrict(
            route.spec,
            { routes: [{ match: `HostSNI(\`${host}\`)` }], tls: {} },
            'HostSNI, TLS terminated by Traefik',
          )
          t.notOk(((route.spec as Json).tls as Json).passthrough, 'never passthrough')
        } else {
          t.hasStrict(running.endpoint, {
            type: 'HTTP',
            url: `https://${expectedHost(suite.flagSecret, owner, 'challenges.localhost')}/`,
          })
        }
        await deletedInOrder(t, s, name, kind)
      })
    }
  },
)
