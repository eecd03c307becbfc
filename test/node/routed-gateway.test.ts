// HTTP by host name through a real proxy with Gateway API routing (HTTP_ROUTING=GatewayAPI): an HTTPRoute per HTTP
// instance attached to a Gateway of Traefik's (its HTTPS listener `https` on the `websecure` entry point, ending TLS
// with a wildcard certificate made for the test). The endpoint exists only once Traefik has accepted the route.
// (TLS_ROUTING=GatewayAPI is not here: the contract's TLSRoute is gateway.networking.k8s.io/v1, and the Traefik that
// builds from the module proxy, v3.6.12, serves TLSRoute v1alpha2 only.) See routing.ts.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { kubectlOk } from '../support/kube/kubectl.js'
import { TRAEFIK_NAMESPACE, TRAEFIK_PORTS } from '../support/node/proxy.js'
import { startNodeSuite } from '../support/node/harness.js'
import { BASE_DOMAIN, proxyClients, routedScenario, startTraefik } from './routing.js'

await startTraefik({ gateway: true })
const suite = await startNodeSuite(t, {
  components: ['gateway-api-http'],
  hookEnv: {
    HTTP_ROUTING: 'GatewayAPI',
    GATEWAY: `${TRAEFIK_NAMESPACE}/challenges`,
    GATEWAY_HTTP_LISTENER: 'https',
    INGRESS_NAMESPACE: TRAEFIK_NAMESPACE,
    BASE_DOMAIN,
  },
})

// A wildcard certificate for the listener (self-signed: the clients check who answers, not the certificate).
const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-cert-'))
execFileSync(
  'openssl',
  [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    `/CN=*.${BASE_DOMAIN}`,
    '-addext',
    `subjectAltName=DNS:*.${BASE_DOMAIN}`,
    '-keyout',
    join(dir, 'key'),
    '-out',
    join(dir, 'crt'),
  ],
  { stdio: 'ignore' },
)
const secret = {
  apiVersion: 'v1',
  kind: 'Secret',
  type: 'kubernetes.io/tls',
  metadata: { name: 'wildcard', namespace: TRAEFIK_NAMESPACE },
  stringData: { 'tls.crt': readFileSync(join(dir, 'crt'), 'utf8'), 'tls.key': readFileSync(join(dir, 'key'), 'utf8') },
}
rmSync(dir, { recursive: true, force: true })
const gateway = [
  secret,
  {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name: 'traefik' },
    spec: { controllerName: 'traefik.io/gateway-controller' },
  },
  {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'challenges', namespace: TRAEFIK_NAMESPACE },
    spec: {
      gatewayClassName: 'traefik',
      listeners: [
        {
          name: 'https',
          protocol: 'HTTPS',
          port: TRAEFIK_PORTS.websecure,
          hostname: `*.${BASE_DOMAIN}`,
          tls: { mode: 'Terminate', certificateRefs: [{ name: 'wildcard' }] },
          allowedRoutes: { namespaces: { from: 'All' } },
        },
      ],
    },
  },
]
await kubectlOk(suite.kubectl, ['apply', '--server-side', '-f', '-'], {
  input: gateway.map((o) => JSON.stringify(o)).join('\n---\n'),
})
await kubectlOk(suite.kubectl, [
  'wait',
  '-n',
  TRAEFIK_NAMESPACE,
  '--for=condition=Programmed',
  '--timeout=60s',
  'gateway/challenges',
])
const clients = await proxyClients(suite)

t.test('HTTP through a Gateway API HTTPRoute: the first Running a player sees already answers', (t) =>
  routedScenario(t, suite, 'routed-httproute', {
    mode: 'HTTP',
    client: clients.https,
    endpoint: (host) => ({ type: 'HTTP', host, port: 443, url: `https://${host}/`, connection: `https://${host}/` }),
  }),
)
