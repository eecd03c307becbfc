// The simulator's Gateway API controller: which listener takes a route, the conditions it writes, and that it
// writes nothing new while nothing changes.
import t from 'tap'
import { Cluster } from '../support/simulator/cluster.js'
import { GATEWAY_CONTROLLER, routeParentStatus } from '../support/simulator/gateways.js'
import type { KubeObject } from '../support/simulator/objects.js'
import { NS, service } from './fixtures.js'

const API = 'gateway.networking.k8s.io/v1'
type Json = Record<string, unknown>

function gateway(listeners: Json[], namespace = 'gw'): KubeObject {
  return {
    apiVersion: API,
    kind: 'Gateway',
    metadata: { name: 'ctf', namespace },
    spec: { gatewayClassName: 'x', listeners },
  }
}

function route(kind: string, spec: Json = {}): KubeObject {
  return {
    apiVersion: API,
    kind,
    metadata: { name: 'r', namespace: NS },
    spec: {
      parentRefs: [{ namespace: 'gw', name: 'ctf' }],
      hostnames: ['a.ctf.example.org'],
      rules: [{ backendRefs: [{ name: 'svc', port: 80 }] }],
      ...spec,
    },
  }
}

/** The (Accepted, ResolvedRefs) reasons the controller writes for the route, or 'none' without an entry. */
function verdict(listeners: Json[], object: KubeObject): string {
  const cluster = new Cluster()
  cluster.create(service('svc', 'ClusterIP'))
  cluster.create(gateway(listeners))
  cluster.create(object)
  cluster.settle()
  const stored = cluster.get({ apiVersion: API, kind: object.kind, namespace: NS, name: 'r' }) as KubeObject
  const parents = (stored.status as { parents: { conditions: { reason: string }[]; controllerName: string }[] }).parents
  return parents.length === 0
    ? 'none'
    : parents.map((entry) => entry.conditions.map((c) => c.reason).join('/')).join(', ')
}

const allFrom = { namespaces: { from: 'All' } }
const tls = (extra: Json = {}) => ({ name: 'tls', protocol: 'TLS', port: 443, allowedRoutes: allFrom, ...extra })
const https = (extra: Json = {}) => ({ name: 'https', protocol: 'HTTPS', port: 443, allowedRoutes: allFrom, ...extra })

t.test('which listener takes a route, and why not', async (t) => {
  const cases: [string, Json[], KubeObject, string][] = [
    ['a TLS listener takes a TLSRoute', [tls()], route('TLSRoute'), 'Accepted/ResolvedRefs'],
    ['an HTTPS listener takes an HTTPRoute', [https()], route('HTTPRoute'), 'Accepted/ResolvedRefs'],
    ['an HTTP listener too', [https({ protocol: 'HTTP' })], route('HTTPRoute'), 'Accepted/ResolvedRefs'],
    ['an HTTPS listener does not take a TLSRoute', [https()], route('TLSRoute'), 'NotAllowedByListeners/ResolvedRefs'],
    [
      'a TCP listener takes neither',
      [tls({ protocol: 'TCP' })],
      route('TLSRoute'),
      'NotAllowedByListeners/ResolvedRefs',
    ],
    [
      'allowedRoutes.kinds decides over the protocol',
      [tls({ allowedRoutes: { ...allFrom, kinds: [{ kind: 'HTTPRoute' }] } })],
      route('TLSRoute'),
      'NotAllowedByListeners/ResolvedRefs',
    ],
    [
      'by sectionName',
      [https(), tls()],
      route('TLSRoute', { parentRefs: [{ namespace: 'gw', name: 'ctf', sectionName: 'tls' }] }),
      'Accepted/ResolvedRefs',
    ],
    [
      'no listener of that name',
      [tls()],
      route('TLSRoute', { parentRefs: [{ namespace: 'gw', name: 'ctf', sectionName: 'tcp' }] }),
      'NoMatchingParent/ResolvedRefs',
    ],
    [
      'Same namespace by default',
      [tls({ allowedRoutes: undefined })],
      route('TLSRoute'),
      'NotAllowedByListeners/ResolvedRefs',
    ],
    [
      "Same namespace, the route in the Gateway's",
      [tls({ allowedRoutes: undefined })],
      route('TLSRoute', { parentRefs: [{ name: 'ctf' }] }),
      'none',
    ],
    [
      'Selector on the namespace name',
      [
        tls({
          allowedRoutes: {
            namespaces: { from: 'Selector', selector: { matchLabels: { 'kubernetes.io/metadata.name': NS } } },
          },
        }),
      ],
      route('TLSRoute'),
      'Accepted/ResolvedRefs',
    ],
    [
      'Selector on a label the namespace lacks',
      [tls({ allowedRoutes: { namespaces: { from: 'Selector', selector: { matchLabels: { ctf: 'true' } } } } })],
      route('TLSRoute'),
      'NotAllowedByListeners/ResolvedRefs',
    ],
    [
      'a wildcard hostname takes subdomains at any depth',
      [tls({ hostname: '*.example.org' })],
      route('TLSRoute'),
      'Accepted/ResolvedRefs',
    ],
    [
      'but not the bare domain',
      [tls({ hostname: '*.ctf.example.org' })],
      route('TLSRoute', { hostnames: ['ctf.example.org'] }),
      'NoMatchingListenerHostname/ResolvedRefs',
    ],
    ['an exact hostname', [tls({ hostname: 'a.ctf.example.org' })], route('TLSRoute'), 'Accepted/ResolvedRefs'],
    [
      'another exact hostname',
      [tls({ hostname: 'b.ctf.example.org' })],
      route('TLSRoute'),
      'NoMatchingListenerHostname/ResolvedRefs',
    ],
    [
      "an HTTPRoute without hostnames takes the listener's",
      [https({ hostname: '*.example.org' })],
      route('HTTPRoute', { hostnames: undefined }),
      'Accepted/ResolvedRefs',
    ],
    [
      'a missing backend Service',
      [tls()],
      route('TLSRoute', { rules: [{ backendRefs: [{ name: 'gone', port: 80 }] }] }),
      'Accepted/BackendNotFound',
    ],
    [
      'a Gateway that does not exist gets no entry',
      [tls()],
      route('TLSRoute', { parentRefs: [{ namespace: 'gw', name: 'other' }] }),
      'none',
    ],
    ['a route without parents', [tls()], route('TLSRoute', { parentRefs: undefined }), 'none'],
    [
      'a route without rules resolves trivially',
      [tls()],
      route('TLSRoute', { rules: undefined }),
      'Accepted/ResolvedRefs',
    ],
  ]
  for (const [name, listeners, object, expected] of cases) t.equal(verdict(listeners, object), expected, name)
})

t.test(
  'the entry: the parentRef as written, the controller, generations; times kept, no rewrite while nothing changes',
  async (t) => {
    const cluster = new Cluster()
    cluster.create(gateway([tls()]))
    cluster.create(route('TLSRoute'))
    t.ok(cluster.settle() > 0)
    const ref = { apiVersion: API, kind: 'TLSRoute', namespace: NS, name: 'r' }
    const first = cluster.get(ref) as KubeObject
    t.strictSame(first.status, {
      parents: [
        {
          parentRef: { namespace: 'gw', name: 'ctf' },
          controllerName: GATEWAY_CONTROLLER,
          conditions: [
            {
              type: 'Accepted',
              status: 'True',
              reason: 'Accepted',
              message: 'The route is accepted.',
              observedGeneration: 1,
              lastTransitionTime: '2025-01-01T00:00:00Z',
            },
            {
              type: 'ResolvedRefs',
              status: 'False',
              reason: 'BackendNotFound',
              message: 'BackendNotFound',
              observedGeneration: 1,
              lastTransitionTime: '2025-01-01T00:00:00Z',
            },
          ],
        },
      ],
    })
    cluster.advance(60)
    t.equal(cluster.settle(), 0, 'nothing changed: nothing written')
    cluster.create(service('svc', 'ClusterIP'))
    cluster.settle()
    const resolved = ((cluster.get(ref) as KubeObject).status as { parents: { conditions: Json[] }[] }).parents[0]
      ?.conditions
    t.match(
      resolved,
      [
        { type: 'Accepted', lastTransitionTime: '2025-01-01T00:00:00Z' },
        { type: 'ResolvedRefs', status: 'True', lastTransitionTime: '2025-01-01T00:01:00Z' },
      ],
      'only the condition that flipped gets a new transition time',
    )
    cluster.delete(ref)
    t.equal(cluster.get(ref), undefined, 'a route without finalizers goes at once')
    const stuck = route('TLSRoute')
    stuck.metadata.finalizers = ['example.net/keep']
    cluster.create(stuck)
    cluster.delete(ref)
    const before = cluster.writes
    cluster.reconcileRoutes()
    t.equal(cluster.writes, before, 'a route being deleted is left alone')
  },
)

t.test('routeParentStatus: what a test writes by hand to play a gateway controller', async (t) => {
  const object = { ...route('TLSRoute'), metadata: { name: 'r', namespace: NS, generation: 4 } }
  t.strictSame(
    routeParentStatus(
      object,
      { name: 'ctf', sectionName: 'tls' },
      { accepted: 'NotAllowedByListeners', resolvedRefs: true, message: 'namespace not allowed' },
      '2026-01-01T00:00:00Z',
    ),
    {
      parentRef: { name: 'ctf', sectionName: 'tls' },
      controllerName: GATEWAY_CONTROLLER,
      conditions: [
        {
          type: 'Accepted',
          status: 'False',
          reason: 'NotAllowedByListeners',
          message: 'namespace not allowed',
          observedGeneration: 4,
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
        {
          type: 'ResolvedRefs',
          status: 'True',
          reason: 'ResolvedRefs',
          message: 'The route is resolved.',
          observedGeneration: 4,
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    },
  )
  t.equal(
    (
      routeParentStatus(
        { ...object, metadata: { name: 'r' } },
        { name: 'ctf' },
        { accepted: true, resolvedRefs: true },
        'now',
      ).conditions as Json[]
    )[0]?.observedGeneration,
    1,
    'a route read without a generation counts as the first',
  )
})
