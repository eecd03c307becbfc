// HTTP by host name through a real proxy with the product's default routing, HTTP_ROUTING=Ingress: an Ingress per
// HTTP instance (no class, no TLS secret: http:// on port 80), served by Traefik's Ingress provider. See routing.ts.
import t from 'tap'
import { TRAEFIK_NAMESPACE } from '../support/node/proxy.js'
import { startNodeSuite } from '../support/node/harness.js'
import { BASE_DOMAIN, proxyClients, routedScenario, startTraefik } from './routing.js'

await startTraefik()
const suite = await startNodeSuite(t, {
  hookEnv: { HTTP_ROUTING: 'Ingress', INGRESS_NAMESPACE: TRAEFIK_NAMESPACE, BASE_DOMAIN },
})
const clients = await proxyClients(suite)

t.test('HTTP through an Ingress: the first Running a player sees already answers', (t) =>
  routedScenario(t, suite, 'routed-ingress', {
    mode: 'HTTP',
    client: clients.http,
    endpoint: (host) => ({ type: 'HTTP', host, port: 80, url: `http://${host}/`, connection: `http://${host}/` }),
  }),
)
