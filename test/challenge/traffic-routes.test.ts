/**
 * The route of each routing choice, asserted as a whole object and validated with the typed models; the expose
 * policy of TLS instances; and what a Gateway's status.parents[] says about a route, case by case.
 */
import t from 'tap'
import { exposePolicy, renderChildren, type RenderInput } from '../../src/challenge/children.js'
import { resolveDefinition } from '../../src/challenge/definition.js'
import { childNames, podLabels } from '../../src/challenge/names.js'
import { routeVerdict } from '../../src/challenge/route-status.js'
import {
  instanceHost,
  route,
  routeGroup,
  routeKind,
  routingProblem,
  ROUTE_KINDS,
} from '../../src/challenge/traffic-routes.js'
import { loadConfig, type Config } from '../../src/config/config.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { validateChildren } from '../helpers/validate.js'
import { ALL_CHILD_GROUPS, type Json } from '../helpers/world.js'

const NAME = 'pwn-tls-u-alice'
const ID = '0123456789abcdef'
const LABELS = {
  'app.kubernetes.io/managed-by': 'challenge-hooks',
  'challenge-hooks.dev/instance': NAME,
  'challenge-hooks.dev/uid': 'uid-1',
}
const GATEWAY_ENV = {
  GATEWAY: 'gateway-system/challenges',
  BASE_DOMAIN: 'ctf.example.org',
  TLS_BASE_DOMAIN: 'tcp.ctf.example.org',
}

const config = (env: Record<string, string> = {}): Config => loadConfig({ ...GATEWAY_ENV, ...env })

function input(type: string, env: Record<string, string> = {}): RenderInput {
  const resolved = resolveDefinition('pwn-tls', {
    pod: { containers: [{ name: 'echo', image: 'echo:1' }] },
    expose: { type, port: 1337 },
  })
  if (!resolved.found) throw new Error(resolved.message)
  return {
    namespace: 'challenges',
    names: childNames(NAME, 'uid-1'),
    podLabels: podLabels(childNames(NAME, 'uid-1')),
    definition: resolved.definition,
    parameters: {},
    flagData: 'ZmxhZ3t4fQ==',
    instanceId: ID,
    owner: { kind: 'User', id: 'alice' },
    run: 0,
    admittedAt: '2026-11-22T12:00:00Z',
    config: config(env),
    withPod: true,
  }
}

/** The route renderChildren gives an instance (always the last child). */
function routeOf(type: string, env: Record<string, string> = {}): Json {
  const children = renderChildren(input(type, env))
  validateChildren(children)
  return children.at(-1) as Json
}

const target = (host: string) => ({
  metadata: { name: NAME, labels: LABELS },
  host,
  service: { name: NAME, port: 1337 },
})

t.test('TLS, Gateway API: a TLSRoute on the TLS listener, hostname <id>.<TLS_BASE_DOMAIN>', async (t) => {
  t.strictSame(routeOf('TLS', { GATEWAY_TLS_LISTENER: 'tls' }), {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'TLSRoute',
    metadata: { name: NAME, labels: LABELS },
    spec: {
      parentRefs: [{ namespace: 'gateway-system', name: 'challenges', sectionName: 'tls' }],
      hostnames: [`${ID}.tcp.ctf.example.org`],
      rules: [{ backendRefs: [{ name: NAME, port: 1337 }] }],
    },
  })
  t.strictSame(
    (routeOf('TLS') as { spec: { parentRefs: unknown } }).spec.parentRefs,
    [{ namespace: 'gateway-system', name: 'challenges' }],
    'no listener: any of the Gateway',
  )
})

t.test('TLS, Traefik: an IngressRouteTCP with HostSNI, TLS ended by Traefik (never passthrough)', async (t) => {
  t.strictSame(routeOf('TLS', { TLS_ROUTING: 'Traefik', TRAEFIK_TLS_ENTRYPOINT: 'ctf-tls' }), {
    apiVersion: 'traefik.io/v1alpha1',
    kind: 'IngressRouteTCP',
    metadata: { name: NAME, labels: LABELS },
    spec: {
      entryPoints: ['ctf-tls'],
      routes: [{ match: `HostSNI(\`${ID}.tcp.ctf.example.org\`)`, services: [{ name: NAME, port: 1337 }] }],
      tls: {},
    },
  })
})

t.test('HTTP: an Ingress by default, an HTTPRoute with GatewayAPI, an IngressRoute with Traefik', async (t) => {
  const host = `${ID}.ctf.example.org`
  t.strictSame(routeOf('HTTP', { INGRESS_CLASS_NAME: 'nginx', INGRESS_TLS_SECRET: 'wildcard' }), {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: NAME, labels: LABELS },
    spec: {
      ingressClassName: 'nginx',
      tls: [{ hosts: [host], secretName: 'wildcard' }],
      rules: [
        {
          host,
          http: {
            paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: NAME, port: { number: 1337 } } } }],
          },
        },
      ],
    },
  })
  t.strictSame(
    routeOf('HTTP'),
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: NAME, labels: LABELS },
      spec: {
        rules: [
          {
            host,
            http: {
              paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: NAME, port: { number: 1337 } } } }],
            },
          },
        ],
      },
    },
    'no INGRESS_CLASS_NAME (the cluster default class) nor INGRESS_TLS_SECRET: neither field',
  )
  t.strictSame(routeOf('HTTP', { HTTP_ROUTING: 'GatewayAPI', GATEWAY_HTTP_LISTENER: 'https' }), {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: NAME, labels: LABELS },
    spec: {
      parentRefs: [{ namespace: 'gateway-system', name: 'challenges', sectionName: 'https' }],
      hostnames: [host],
      rules: [{ backendRefs: [{ name: NAME, port: 1337 }] }],
    },
  })
  t.strictSame(routeOf('HTTP', { HTTP_ROUTING: 'Traefik' }), {
    apiVersion: 'traefik.io/v1alpha1',
    kind: 'IngressRoute',
    metadata: { name: NAME, labels: LABELS },
    spec: {
      entryPoints: ['websecure'],
      routes: [{ kind: 'Rule', match: `Host(\`${host}\`)`, services: [{ name: NAME, port: 1337 }] }],
      tls: {},
    },
  })
  t.strictSame(
    (routeOf('HTTP', { HTTP_ROUTING: 'Traefik', INGRESS_TLS_SECRET: 'wildcard' }) as { spec: Json }).spec.tls,
    { secretName: 'wildcard' },
  )
})

t.test('every exposure: its children, a ClusterIP Service for routed ones, no route otherwise', async (t) => {
  const cases: [string, Record<string, string>, string[]][] = [
    ['TLS', {}, ['Secret', 'NetworkPolicy', 'Pod', 'Service', 'TLSRoute']],
    ['TLS', { TLS_ROUTING: 'Traefik' }, ['Secret', 'NetworkPolicy', 'Pod', 'Service', 'IngressRouteTCP']],
    ['HTTP', { HTTP_ROUTING: 'GatewayAPI' }, ['Secret', 'NetworkPolicy', 'Pod', 'Service', 'HTTPRoute']],
    ['NodePort', { HTTP_ROUTING: 'Traefik' }, ['Secret', 'NetworkPolicy', 'Pod', 'Service']],
  ]
  for (const [type, env, kinds] of cases) {
    const children = renderChildren(input(type, env))
    t.strictSame(
      children.map((child) => child.kind),
      kinds,
      `${type} ${JSON.stringify(env)}`,
    )
    const service = children.find((child) => child.kind === 'Service') as unknown as { spec: { type: string } }
    if (type !== 'NodePort') t.equal(service.spec.type, 'ClusterIP', `${type}: ClusterIP`)
  }
})

t.test('the typed models refuse a broken route (the validation bites)', async (t) => {
  const broken = structuredClone(route('TLS', target('UPPER.example.org'), config())) as unknown as {
    kind: string
    metadata: Json
    spec: { rules: unknown[] }
  }
  broken.spec.rules = []
  t.throws(
    () => validateChildren([broken]),
    /^TLSRoute pwn-tls-u-alice: .*hostnames\/0 must match pattern.*rules must NOT have less than 1 item/,
  )
  const tcp = structuredClone(route('TLS', target('a.example.org'), config({ TLS_ROUTING: 'Traefik' }))) as unknown as {
    kind: string
    metadata: Json
    spec: Json
  }
  tcp.spec.tls = { passthrough: 'no' }
  t.throws(() => validateChildren([tcp]), /IngressRouteTCP pwn-tls-u-alice: .*passthrough must be boolean/)
})

t.test('hosts, kinds and groups of the routing choices', async (t) => {
  t.equal(instanceHost('TLS', ID, config()), `${ID}.tcp.ctf.example.org`)
  t.equal(instanceHost('HTTP', ID, config()), `${ID}.ctf.example.org`)
  t.equal(
    instanceHost('TLS', ID, loadConfig({ BASE_DOMAIN: 'ctf.example.org' })),
    `${ID}.ctf.example.org`,
    'TLS_BASE_DOMAIN defaults to BASE_DOMAIN',
  )
  t.strictSame(
    [
      routeKind('HTTP', config()),
      routeKind('HTTP', config({ HTTP_ROUTING: 'GatewayAPI' })),
      routeKind('HTTP', config({ HTTP_ROUTING: 'Traefik' })),
    ],
    ['Ingress', 'HTTPRoute', 'IngressRoute'],
  )
  t.strictSame(
    [routeKind('TLS', config()), routeKind('TLS', config({ TLS_ROUTING: 'Traefik' }))],
    ['TLSRoute', 'IngressRouteTCP'],
  )
  t.strictSame(
    ROUTE_KINDS.map(routeGroup),
    [
      'Ingress.networking.k8s.io/v1',
      'HTTPRoute.gateway.networking.k8s.io/v1',
      'IngressRoute.traefik.io/v1alpha1',
      'TLSRoute.gateway.networking.k8s.io/v1',
      'IngressRouteTCP.traefik.io/v1alpha1',
    ],
    "the group names Metacontroller gives the components' child rules",
  )
})

t.test("routingProblem: no Gateway for TLS_ROUTING's default, or no child rule for the route", async (t) => {
  const all = new Set(ALL_CHILD_GROUPS)
  t.equal(routingProblem('TLS', config(), all), undefined)
  t.equal(routingProblem('HTTP', loadConfig({}), all), undefined)
  t.match(
    routingProblem('TLS', loadConfig({}), all),
    /has not set GATEWAY \(TLS_ROUTING=GatewayAPI\) or TLS_ROUTING=Traefik/,
  )
  t.equal(routingProblem('TLS', loadConfig({ TLS_ROUTING: 'Traefik' }), all), undefined, 'Traefik needs no Gateway')
  t.equal(routingProblem('HTTP', loadConfig({}), new Set(['Ingress.networking.k8s.io/v1'])), undefined)
  t.equal(
    routingProblem('TLS', loadConfig({ TLS_ROUTING: 'Traefik' }), new Set(['Ingress.networking.k8s.io/v1'])),
    'This challenge cannot be exposed yet: the CompositeController has no child rule for IngressRouteTCP.traefik.io/v1alpha1 (the operator must install its routing component).',
  )
  t.match(
    routingProblem('HTTP', config({ HTTP_ROUTING: 'GatewayAPI' }), new Set()),
    /no child rule for HTTPRoute\.gateway\.networking\.k8s\.io\/v1/,
  )
})

t.test(
  "the expose policy of a TLS instance admits only the proxy: its namespace, and its pods' labels when set",
  async (t) => {
    const namespaceOnly = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'envoy-gateway-system' } },
    }
    t.strictSame(exposePolicy(input('TLS', { INGRESS_NAMESPACE: 'envoy-gateway-system' })).spec, {
      podSelector: { matchLabels: { 'challenge-hooks.dev/instance': NAME, 'challenge-hooks.dev/uid': 'uid-1' } },
      policyTypes: ['Ingress'],
      ingress: [{ from: [namespaceOnly], ports: [{ protocol: 'TCP', port: 1337 }] }],
    })
    const selector =
      'gateway.envoyproxy.io/owning-gateway-name=challenges,gateway.envoyproxy.io/owning-gateway-namespace=gateway-system'
    for (const type of ['TLS', 'HTTP']) {
      t.strictSame(
        exposePolicy(input(type, { INGRESS_NAMESPACE: 'envoy-gateway-system', INGRESS_POD_SELECTOR: selector })).spec
          ?.ingress,
        [
          {
            from: [
              {
                ...namespaceOnly,
                podSelector: {
                  matchLabels: {
                    'gateway.envoyproxy.io/owning-gateway-name': 'challenges',
                    'gateway.envoyproxy.io/owning-gateway-namespace': 'gateway-system',
                  },
                },
              },
            ],
            ports: [{ protocol: 'TCP', port: 1337 }],
          },
        ],
        `${type}: one peer with both selectors (and, not or)`,
      )
    }
  },
)

// ---- what the Gateway says -----------------------------------------------------------------------------------

const PARENT = {
  group: 'gateway.networking.k8s.io',
  kind: 'Gateway',
  namespace: 'gateway-system',
  name: 'challenges',
  sectionName: 'tls',
}

function condition(type: string, status: string, reason: string, observedGeneration?: number): Json {
  return {
    type,
    status,
    reason,
    message: '',
    lastTransitionTime: '2026-11-22T12:00:00Z',
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
  }
}
const ACCEPTED = [condition('Accepted', 'True', 'Accepted', 2), condition('ResolvedRefs', 'True', 'ResolvedRefs', 2)]

function tlsRoute(parents: Json[] | undefined, generation: number | null = 2): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'TLSRoute',
    metadata: { name: NAME, namespace: 'challenges', ...(generation === null ? {} : { generation }) },
    spec: {},
    ...(parents === undefined ? {} : { status: { parents } }),
  }
}

/** The Gateway's verdict as a problem, or undefined when it accepted the route. */
const routeProblem = (object: KubeObject, kind: 'HTTPRoute' | 'TLSRoute', cfg: Config) =>
  routeVerdict(object, kind, cfg).problem

t.test(
  'routeVerdict: accepted since the later of Accepted and ResolvedRefs; the earliest of two accepting controllers',
  async (t) => {
    const at = (type: string, time: string) => ({
      type,
      status: 'True',
      reason: type,
      lastTransitionTime: time,
      observedGeneration: 2,
    })
    const listener = config({ GATEWAY_TLS_LISTENER: 'tls' })
    const one = tlsRoute([
      {
        parentRef: PARENT,
        conditions: [at('Accepted', '2026-11-22T12:00:05Z'), at('ResolvedRefs', '2026-11-22T12:00:03Z')],
      },
    ])
    t.strictSame(routeVerdict(one, 'TLSRoute', listener), { acceptedSince: Date.parse('2026-11-22T12:00:05Z') })
    const two = tlsRoute([
      {
        parentRef: PARENT,
        conditions: [at('Accepted', '2026-11-22T12:00:09Z'), at('ResolvedRefs', '2026-11-22T12:00:09Z')],
      },
      {
        parentRef: PARENT,
        conditions: [at('Accepted', '2026-11-22T12:00:04Z'), at('ResolvedRefs', '2026-11-22T12:00:02Z')],
      },
    ])
    t.strictSame(
      routeVerdict(two, 'TLSRoute', listener),
      { acceptedSince: Date.parse('2026-11-22T12:00:04Z') },
      'the first to carry traffic counts',
    )
    const timeless = tlsRoute([
      {
        parentRef: PARENT,
        conditions: [
          { type: 'Accepted', status: 'True', observedGeneration: 2 },
          { type: 'ResolvedRefs', status: 'True', observedGeneration: 2 },
        ],
      },
    ])
    t.strictSame(
      routeVerdict(timeless, 'TLSRoute', listener),
      { acceptedSince: 0 },
      'conditions without times: accepted since ever',
    )
  },
)

t.test(
  'routeProblem: only Accepted and ResolvedRefs True, from our Gateway and listener, for this generation',
  async (t) => {
    const listener = config({ GATEWAY_TLS_LISTENER: 'tls' })
    const where = 'Gateway gateway-system/challenges (listener tls)'
    const cases: [string, KubeObject, Config, string | undefined][] = [
      [
        'accepted',
        tlsRoute([{ parentRef: PARENT, controllerName: 'example.net/gw', conditions: ACCEPTED }]),
        listener,
        undefined,
      ],
      [
        "group and kind defaulted, namespace the route's own",
        tlsRoute([{ parentRef: { name: 'challenges', sectionName: 'tls' }, conditions: ACCEPTED }]),
        config({ GATEWAY: 'challenges/challenges', GATEWAY_TLS_LISTENER: 'tls' }),
        undefined,
      ],
      [
        'no observedGeneration on the conditions',
        tlsRoute([
          {
            parentRef: PARENT,
            conditions: [condition('Accepted', 'True', 'Accepted'), condition('ResolvedRefs', 'True', 'ResolvedRefs')],
          },
        ]),
        listener,
        undefined,
      ],
      [
        'a route without a generation (as a hand-made request may send it)',
        tlsRoute([{ parentRef: PARENT, conditions: ACCEPTED }], null),
        listener,
        undefined,
      ],
      [
        'one of two controllers accepts',
        tlsRoute([
          { parentRef: PARENT, conditions: [condition('Accepted', 'False', 'Other', 2)] },
          { parentRef: PARENT, conditions: ACCEPTED },
        ]),
        listener,
        undefined,
      ],
      ['no status yet', tlsRoute(undefined), listener, `Pending: ${where} has not reported on the TLSRoute yet.`],
      [
        'a malformed status',
        { ...tlsRoute(undefined), status: { parents: 'none' } },
        listener,
        `Pending: ${where} has not reported on the TLSRoute yet.`,
      ],
      [
        "another Gateway's entry",
        tlsRoute([{ parentRef: { ...PARENT, name: 'other' }, conditions: ACCEPTED }]),
        listener,
        'Pending: ',
      ],
      [
        "another listener's entry",
        tlsRoute([{ parentRef: { ...PARENT, sectionName: 'https' }, conditions: ACCEPTED }]),
        listener,
        'Pending: ',
      ],
      [
        'an entry for the whole Gateway while we name a listener',
        tlsRoute([{ parentRef: { ...PARENT, sectionName: undefined }, conditions: ACCEPTED }]),
        listener,
        'Pending: ',
      ],
      [
        "another group's parent of that name",
        tlsRoute([{ parentRef: { ...PARENT, group: 'example.net' }, conditions: ACCEPTED }]),
        listener,
        'Pending: ',
      ],
      [
        'a ListenerSet of that name',
        tlsRoute([{ parentRef: { ...PARENT, kind: 'ListenerSet' }, conditions: ACCEPTED }]),
        listener,
        'Pending: ',
      ],
      [
        'refused by the listeners',
        tlsRoute([
          {
            parentRef: PARENT,
            conditions: [
              condition('Accepted', 'False', 'NotAllowedByListeners', 2),
              condition('ResolvedRefs', 'True', 'ResolvedRefs', 2),
            ],
          },
        ]),
        listener,
        `NotAllowedByListeners: ${where} has not accepted the TLSRoute: Accepted is not True (NotAllowedByListeners).`,
      ],
      [
        'backend not found',
        tlsRoute([
          {
            parentRef: PARENT,
            conditions: [
              condition('Accepted', 'True', 'Accepted', 2),
              condition('ResolvedRefs', 'False', 'BackendNotFound', 2),
            ],
          },
        ]),
        listener,
        `BackendNotFound: ${where} has not accepted the TLSRoute: ResolvedRefs is not True (BackendNotFound).`,
      ],
      [
        'ResolvedRefs missing',
        tlsRoute([{ parentRef: PARENT, conditions: [condition('Accepted', 'True', 'Accepted', 2)] }]),
        listener,
        'Pending: ',
      ],
      [
        'Unknown without a reason',
        tlsRoute([{ parentRef: PARENT, conditions: [{ type: 'Accepted', status: 'Unknown' }] }]),
        listener,
        'Unknown: ',
      ],
      [
        'accepted for an older generation',
        tlsRoute([{ parentRef: PARENT, conditions: ACCEPTED }], 3),
        listener,
        'Pending: ',
      ],
      [
        'conditions that are not a list',
        tlsRoute([{ parentRef: PARENT, conditions: 'Accepted' }]),
        listener,
        'Pending: ',
      ],
      [
        'a null status entry, then ours',
        tlsRoute([null as unknown as Json, { parentRef: PARENT, conditions: ACCEPTED }]),
        listener,
        undefined,
      ],
      [
        "another namespace's Gateway of that name",
        tlsRoute([{ parentRef: { ...PARENT, namespace: 'elsewhere' }, conditions: ACCEPTED }]),
        listener,
        'Pending: ',
      ],
      [
        'a status entry that is not an object, then ours',
        tlsRoute(['junk' as unknown as Json, { parentRef: PARENT, conditions: ACCEPTED }]),
        listener,
        undefined,
      ],
    ]
    for (const [name, object, cfg, expected] of cases) {
      const problem = routeProblem(object, 'TLSRoute', cfg)
      if (expected === undefined) t.equal(problem, undefined, name)
      else
        t.match(
          problem === undefined ? 'none' : `${problem.reason}: ${problem.message}`,
          new RegExp(`^${expected.replace(/[().]/g, '\\$&')}`),
          name,
        )
    }
    t.strictSame(
      routeProblem(tlsRoute(undefined), 'HTTPRoute', config()),
      {
        reason: 'Pending',
        message: 'Gateway gateway-system/challenges has not reported on the HTTPRoute yet.',
      },
      'HTTPRoutes are checked against GATEWAY_HTTP_LISTENER (here: none)',
    )
    t.strictSame(
      routeProblem(tlsRoute(undefined), 'HTTPRoute', config({ GATEWAY_TLS_LISTENER: 'tls' })),
      {
        reason: 'Pending',
        message: 'Gateway gateway-system/challenges has not reported on the HTTPRoute yet.',
      },
      "the TLS listener is not the HTTPRoute's",
    )
  },
)
