/**
 * A TLS instance through the pure hook, stage by stage: its route, Pending until the route carries traffic (for
 * Gateway API: until its Gateway accepts it), Running with `ncat --ssl`, the startup timeout's cause, the
 * configuration errors, and a teardown that takes the route out with the Service.
 */
import t from 'tap'
import { at, kinds, prepared, step } from '../helpers/drive.js'
import { challenge, conditionOf, observedChildren, readyWorld, tlsDefinition, type Json } from '../helpers/world.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { testConfig } from '../helpers/app.js'
import { ALICE, expectedHost } from '../helpers/contract.js'

const NAME = 'pwn-tls-u-alice'
const config = {
  gateway: { namespace: 'gateway-system', name: 'challenges' },
  gatewayTlsListener: 'tls',
  tlsBaseDomain: 'tcp.ctf.example.org',
  tlsPort: 8443,
}
const parent = () => challenge({ name: NAME, definition: 'pwn-tls' })
const related = [tlsDefinition()]

/** The observed children, the TLSRoute with the verdict of its Gateway. */
function withVerdict(children: KubeObject[], accepted: string, resolved = 'True'): KubeObject[] {
  const condition = (type: string, status: string) => ({
    type,
    status: status === 'True' ? 'True' : 'False',
    reason: status === 'True' ? type : status,
    message: '',
    observedGeneration: 1,
    lastTransitionTime: '2026-11-22T12:00:00Z',
  })
  return children.map((child) =>
    child.kind === 'TLSRoute'
      ? {
          ...child,
          status: {
            parents: [
              {
                parentRef: { namespace: 'gateway-system', name: 'challenges', sectionName: 'tls' },
                controllerName: 'example.net/gw',
                conditions: [condition('Accepted', accepted), condition('ResolvedRefs', resolved)],
              },
            ],
          },
        }
      : child,
  )
}

t.test(
  'Gateway API: WaitingForEndpoint until the Gateway accepts the TLSRoute, then Running with ncat --ssl',
  async (t) => {
    const first = prepared(parent(), { related, config })
    t.strictSame(kinds(first.response), [
      `Secret/${NAME}-flag`,
      `NetworkPolicy/${NAME}-isolate`,
      `Pod/${NAME}`,
      `Service/${NAME}`,
      `TLSRoute/${NAME}`,
    ])
    const ready = readyWorld(first.response.children)

    const unreported = step(first.parent, { related, children: ready, config, now: at(10) })
    t.hasStrict(unreported.status, {
      phase: 'Pending',
      reason: 'WaitingForEndpoint',
      message: 'The instance is ready; the gateway has not accepted its route yet (Pending).',
    })
    t.hasStrict(conditionOf(unreported.status, 'WorkloadReady'), { status: 'True' })
    t.hasStrict(conditionOf(unreported.status, 'EndpointReady'), {
      status: 'False',
      reason: 'RouteNotAccepted',
      message: 'Gateway gateway-system/challenges (listener tls) has not reported on the TLSRoute yet.',
    })

    const refused = step(unreported.parent, {
      related,
      children: withVerdict(ready, 'NotAllowedByListeners'),
      config,
      now: at(20),
    })
    t.hasStrict(refused.status, {
      phase: 'Pending',
      reason: 'WaitingForEndpoint',
      message: 'The instance is ready; the gateway has not accepted its route yet (NotAllowedByListeners).',
    })
    t.equal(
      conditionOf(refused.status, 'EndpointReady')?.lastTransitionTime,
      conditionOf(unreported.status, 'EndpointReady')?.lastTransitionTime,
      'still False: no transition',
    )
    t.notOk('endpoint' in refused.status)
    t.notOk('startedAt' in refused.status)
    t.strictSame(
      step(refused.parent, { related, children: withVerdict(ready, 'NotAllowedByListeners'), config, now: at(50) })
        .status,
      refused.status,
      'an unchanged verdict changes nothing',
    )

    const running = step(refused.parent, { related, children: withVerdict(ready, 'True'), config, now: at(30) })
    const host = expectedHost(testConfig().flagSecret, { ...ALICE, definition: 'pwn-tls' }, 'tcp.ctf.example.org')
    t.hasStrict(running.status, {
      phase: 'Running',
      reason: 'Ready',
      startedAt: '2026-11-22T12:00:30Z',
      endpoint: { type: 'TLS', host, port: 8443, connection: `ncat --ssl ${host} 8443` },
    })
    t.notOk('url' in (running.status.endpoint as Json))
    t.hasStrict(conditionOf(running.status, 'EndpointReady'), {
      status: 'True',
      reason: 'EndpointAllocated',
      message: `ncat --ssl ${host} 8443`,
      lastTransitionTime: '2026-11-22T12:00:30Z',
    })
  },
)

t.test('Traefik: Running as soon as the IngressRouteTCP is observed and the workload ready', async (t) => {
  const traefik = { ...config, tlsRouting: 'Traefik' as const, gateway: undefined }
  const first = prepared(parent(), { related, config: traefik })
  t.equal(first.response.children.at(-1)?.kind, 'IngressRouteTCP')
  const withoutRoute = readyWorld(first.response.children.slice(0, -1))
  t.hasStrict(
    step(first.parent, { related, children: withoutRoute, config: traefik, now: at(5) }).status,
    {
      phase: 'Pending',
      reason: 'WaitingForEndpoint',
      message: 'The instance is ready; waiting for its address.',
    },
    'not before the route exists',
  )
  const running = step(first.parent, {
    related,
    children: readyWorld(first.response.children),
    config: traefik,
    now: at(5),
  })
  t.hasStrict(running.status, { phase: 'Running', endpoint: { type: 'TLS', port: 8443 } })
})

t.test(
  'a route never accepted: StartupTimeout names the cause; a route gone with the pod not ready says nothing of it',
  async (t) => {
    const first = prepared(parent(), { related, config })
    const ready = withVerdict(readyWorld(first.response.children), 'True', 'BackendNotFound')
    const timedOut = step(first.parent, { related, children: ready, config, now: at(300) })
    t.hasStrict(timedOut.status, {
      phase: 'Error',
      reason: 'StartupTimeout',
      message:
        'The instance did not become ready within 300 seconds. The instance was ready, but the gateway has not accepted its route yet (BackendNotFound).',
    })
    const routeGone = observedChildren(first.response.children).filter((child) => child.kind !== 'TLSRoute')
    const notReady = step(first.parent, { related, children: routeGone, config, now: at(300) })
    t.equal(notReady.status.message, 'The instance did not become ready within 300 seconds.')
    const refusedNotReady = step(first.parent, {
      related,
      children: withVerdict(observedChildren(first.response.children), 'NotAllowedByListeners'),
      config,
      now: at(300),
    })
    t.equal(
      refusedNotReady.status.message,
      'The instance did not become ready within 300 seconds.',
      'a refused route with a workload never ready: the route is not the cause named',
    )
  },
)

t.test(
  'no Gateway for TLS, or no child rule for its route: Error / ConfigError, nothing rendered, recovers when fixed',
  async (t) => {
    const noGateway = step(parent(), { related })
    t.hasStrict(noGateway.status, {
      phase: 'Error',
      reason: 'ConfigError',
      message:
        'TLS challenges cannot be exposed yet: the operator has not set GATEWAY (TLS_ROUTING=GatewayAPI) or TLS_ROUTING=Traefik.',
    })
    t.strictSame(noGateway.response.children, [])
    t.notOk('admittedAt' in noGateway.status, 'it holds no budget meanwhile')
    const noRule = step(parent(), { related, config, groups: ['Secret.v1', 'Service.v1'] })
    t.match(noRule.status, {
      phase: 'Error',
      reason: 'ConfigError',
      message: /no child rule for TLSRoute\.gateway\.networking\.k8s\.io\/v1/,
    })
    const fixed = step(noRule.parent, { related, config, now: at(30) })
    t.hasStrict(fixed.status, { phase: 'Pending', reason: 'Starting', admittedAt: '2026-11-22T12:00:30Z' })
  },
)

t.test('teardown: the route leaves with the Service, the Pod once both are gone', async (t) => {
  const first = prepared(parent(), { related, config })
  const ready = withVerdict(readyWorld(first.response.children), 'True')
  const running = step(first.parent, { related, children: ready, config, now: at(10) })
  const stopped = { ...running.parent, spec: { ...running.parent.spec, desiredState: 'Stopped' } }
  const firstStep = step(stopped, { related, children: ready, config, now: at(20) })
  t.strictSame(kinds(firstStep.response), [`Pod/${NAME}`, `NetworkPolicy/${NAME}-isolate`, `Secret/${NAME}-flag`])
  const routeLeft = ready.filter((child) => child.kind !== 'Service')
  const waiting = step(firstStep.parent, { related, children: routeLeft, config, now: at(21) })
  t.ok(kinds(waiting.response).includes(`Pod/${NAME}`), 'the workload stays while the route is still observed')
  const trafficGone = ready.filter((child) => child.kind !== 'Service' && child.kind !== 'TLSRoute')
  t.notOk(
    kinds(step(firstStep.parent, { related, children: trafficGone, config, now: at(22) }).response).includes(
      `Pod/${NAME}`,
    ),
    'then it goes',
  )
})
