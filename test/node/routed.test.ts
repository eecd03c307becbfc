// HTTP by host name and TLS by SNI through a real proxy, with the project's Traefik components: HTTP_ROUTING=Traefik
// (an IngressRoute per HTTP instance, on `websecure`, TLS ended by Traefik) and TLS_ROUTING=Traefik (an
// IngressRouteTCP per TLS instance, HostSNI on `tcpsecure`, TLS ended by Traefik). See routing.ts.
import t from 'tap'
import { TRAEFIK_NAMESPACE } from '../support/node/proxy.js'
import { startNodeSuite } from '../support/node/harness.js'
import { BASE_DOMAIN, proxyClients, routedScenario, startTraefik, TLS_BASE_DOMAIN } from './routing.js'

await startTraefik()
const suite = await startNodeSuite(t, {
  components: ['traefik-http', 'traefik-tls'],
  hookEnv: {
    HTTP_ROUTING: 'Traefik',
    TLS_ROUTING: 'Traefik',
    INGRESS_NAMESPACE: TRAEFIK_NAMESPACE,
    BASE_DOMAIN,
    TLS_BASE_DOMAIN,
    TLS_PORT: '443',
  },
})
const clients = await proxyClients(suite)

t.test('HTTP through a Traefik IngressRoute: the first Running a player sees already answers', (t) =>
  routedScenario(t, suite, 'routed-ingressroute', {
    mode: 'HTTP',
    client: clients.https,
    endpoint: (host) => ({ type: 'HTTP', host, port: 443, url: `https://${host}/`, connection: `https://${host}/` }),
  }),
)

t.test('TLS by SNI through a Traefik IngressRouteTCP: the first Running a player sees already answers', (t) =>
  routedScenario(t, suite, 'routed-ingressroutetcp', {
    mode: 'TLS',
    client: clients.tls,
    endpoint: (host) => ({ type: 'TLS', host, port: 443, connection: `ncat --ssl ${host} 443` }),
  }),
)
