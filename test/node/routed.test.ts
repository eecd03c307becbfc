// HTTP by host name and TLS by SNI through a real proxy: Traefik (a pod in namespace `traefik`, its CRDs those of
// the running release) with the project's Traefik components (HTTP_ROUTING=Traefik: an IngressRoute per HTTP
// instance; TLS_ROUTING=Traefik: an IngressRouteTCP per TLS instance, TLS ended by Traefik). For each instance:
// the endpoint the status names, a client right after Running gets the app's answer through the proxy, and when
// the proxy first carried a connection compared with when Running was first seen. A pod beside the instance that
// is not the proxy cannot reach the app's port (the expose policy admits the proxy's namespace only).
// The endpoint's port (443) is the proxy's public port; the suite connects to the Traefik pod's entry point behind
// it, as an operator's load balancer would, with the endpoint's host name as SNI and Host header.
import { request } from 'node:https'
import { connect as tlsConnect } from 'node:tls'
import { join } from 'node:path'
import t from 'tap'
import { kubectlFor, kubectlOk } from '../support/kube/kubectl.js'
import type { KubeObject } from '../support/simulator/index.js'
import { TRAEFIK_NAMESPACE, TRAEFIK_PORTS, traefikManifests } from '../support/node/proxy.js'
import { app, definition, podOf, probeFrom, startNodeSuite, workstation, type Json, type Scenario } from './harness.js'
import { table, whenRunning, type Sample } from './timing.js'

const BASE_DOMAIN = 'challenges.test'
const TLS_BASE_DOMAIN = 'tcp.challenges.test'
const OWNERS = ['p1', 'p2', 'p3']
const ROUTED_EARLY =
  'product defect (issue 27): with Traefik routing, Running is written once the route object exists, before the ' +
  'proxy has loaded it (its providers apply changes in batches): a connection right after Running may get a 404 or no route'

// The route CRDs must exist before the install that names them (Metacontroller refuses an unknown child rule).
const kubectl = kubectlFor(process.env.TEST_KUBECTL ?? 'kubectl', process.env.TEST_KUBECONFIG ?? '')
await kubectlOk(kubectl, ['apply', '--server-side', '-f', join(process.env.NODE_BIN_DIR ?? '', 'traefik-crds.yaml')])
await kubectlOk(kubectl, ['wait', '--for=condition=Established', '--timeout=60s', 'crd/ingressroutes.traefik.io', 'crd/ingressroutetcps.traefik.io'])
await kubectlOk(kubectl, ['apply', '--server-side', '-f', '-'], { input: traefikManifests() })
await kubectlOk(kubectl, ['-n', TRAEFIK_NAMESPACE, 'rollout', 'status', 'deployment/traefik', '--timeout=120s'])
const suite = await startNodeSuite(t, {
  components: ['traefik-http', 'traefik-tls'],
  hookEnv: { HTTP_ROUTING: 'Traefik', TLS_ROUTING: 'Traefik', INGRESS_NAMESPACE: TRAEFIK_NAMESPACE, BASE_DOMAIN, TLS_BASE_DOMAIN, TLS_PORT: '443' },
})
const traefikPods = await suite.rest.get<{ items: KubeObject[] }>(`/api/v1/namespaces/${TRAEFIK_NAMESPACE}/pods`)
const proxy = String(((traefikPods.items[0] as KubeObject).status as Json).podIP)

/** An HTTPS GET through the proxy with `host` as SNI and Host header: the body, or the error/status. */
function httpsThroughProxy(host: string): Promise<string> {
  return new Promise((resolve) => {
    const req = request({ host: proxy, port: TRAEFIK_PORTS.websecure, servername: host, headers: { host }, path: '/', rejectUnauthorized: false, timeout: 1000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => resolve(res.statusCode === 200 ? body : `status ${res.statusCode}`))
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', (error) => resolve(`error: ${error.message}`))
    req.end()
  })
}

/** A TLS connection through the proxy with `host` as SNI: the first line the app sends, or the error. */
function tlsThroughProxy(host: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: proxy, port: TRAEFIK_PORTS.tcpsecure, servername: host, rejectUnauthorized: false, timeout: 1000 })
    let text = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      text += chunk
      if (text.includes('\n')) socket.destroy()
    })
    socket.on('timeout', () => socket.destroy(new Error('timeout')))
    socket.on('error', (error) => resolve(`error: ${error.message}`))
    socket.on('close', () => resolve(text.trim()))
  })
}

/** From the moment the instance id is known: an attempt started every 20 ms until one gets `want`; when it started. */
async function firstAnswer(s: Scenario, name: string, since: number, attempt: (host: string) => Promise<string>, domain: string, want: string): Promise<number> {
  let first: number | undefined
  while (first === undefined && Date.now() < since + 90_000) {
    const id = (await s.status(name)).instanceId
    if (typeof id === 'string') {
      const startedAt = Date.now()
      void attempt(`${id}.${domain}`).then((answer) => {
        if (answer === want && (first === undefined || startedAt < first)) first = startedAt
      })
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  if (first === undefined) throw new Error(`${name}: no answer through the proxy`)
  return first - since
}

for (const mode of ['HTTP', 'TLS'] as const) {
  t.test(`${mode} through Traefik: the first Running a player sees already answers at its endpoint`, async (t) => {
    const s = await suite.scenario(t, `routed-${mode.toLowerCase()}`)
    const http = mode === 'HTTP'
    const [image, port, want] = http ? ['http-app', 8080, 'http-app\n'] : ['tcp-echo', 9000, 'tcp-echo ready']
    const attempt = http ? httpsThroughProxy : tlsThroughProxy
    const domain = http ? BASE_DOMAIN : TLS_BASE_DOMAIN
    await s.create(definition('app', { pod: app(image, port), expose: { type: mode, port }, network: { egress: 'None' } }))
    const samples: Sample[] = []
    for (const owner of OWNERS) {
      const name = `app-u-${owner}`
      const since = Date.now()
      await s.create(s.challenge('app', owner))
      const reachable = firstAnswer(s, name, since, attempt, domain, want)
      const { at, status } = await whenRunning(s, name, since)
      const host = `${String(status.instanceId)}.${domain}`
      const answer = await attempt(host)
      const endpoint = http ? { type: 'HTTP', host, port: 443, url: `https://${host}/`, connection: `https://${host}/` } : { type: 'TLS', host, port: 443, connection: `ncat --ssl ${host} 443` }
      t.strictSame(status.endpoint, endpoint, `${name}: the endpoint by host name on the proxy's port`)
      t.equal(answer, want, `${name}: right after Running, the proxy hands the app's answer`, { todo: ROUTED_EARLY })
      samples.push({ instance: name, running: at, reachable: await reachable })
    }
    t.comment(`${mode} through Traefik, create to Running and to the first answer:\n${table(samples)}`)
    t.strictSame(samples.filter((x) => x.reachable > x.running + 20).map((x) => x.instance), [], 'never Running before a connection works (20 ms: the prober’s period)', { todo: ROUTED_EARLY })

    // Only the proxy reaches the app: a pod beside it (allowed out anywhere by its own policy) does not.
    const beside = await workstation(suite, s.ns, 'beside')
    const target = await podOf(s, 'app-u-p1')
    const seen = await probeFrom(suite, s.ns, beside.name, { app: `tcp:${target.ip}:${port}` })
    t.equal(seen.app?.reached, false, "a pod that is not the proxy cannot reach the app's port")
  })
}
