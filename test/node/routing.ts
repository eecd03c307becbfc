// Challenges routed through a real proxy (Traefik, test/support/node/proxy.ts), shared by the files of each routing
// choice: Traefik's CRDs and its pod set up before the suite's install, clients that reach an endpoint through the
// proxy (the endpoint's host name as SNI and Host header; the proxy's pod stands behind the endpoint's public port,
// as an operator's load balancer would), and the scenario every routing choice must pass.
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import type { Test } from 'tap'
import { kubectlFor, kubectlOk } from '../support/kube/kubectl.js'
import type { KubeObject } from '../support/simulator/index.js'
import { TRAEFIK_NAMESPACE, TRAEFIK_PORTS, traefikManifests } from '../support/node/proxy.js'
import { gatewayCrd } from '../support/route-crds.js'
import {
  app,
  definition,
  podOf,
  probeFrom,
  workstation,
  type Json,
  type Scenario,
  type Suite,
} from '../support/node/harness.js'
import { firstLine, table, whenRunning, type Sample } from '../support/node/timing.js'

export const BASE_DOMAIN = 'challenges.test'
export const TLS_BASE_DOMAIN = 'tcp.challenges.test'
const OWNERS = ['p1', 'p2', 'p3']

/** Traefik's CRDs (of the release that runs) and Traefik itself, Ready; before the install that names its routes. */
export async function startTraefik(options: { gateway?: boolean } = {}): Promise<void> {
  const kubectl = kubectlFor(process.env.TEST_KUBECTL ?? 'kubectl', process.env.TEST_KUBECONFIG ?? '')
  if (options.gateway === true) {
    for (const file of GATEWAY_CRDS) await kubectlOk(kubectl, ['apply', '--server-side', '-f', gatewayCrd(file)])
    await kubectlOk(kubectl, [
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      ...GATEWAY_CRDS.map((file) => `crd/${file}.gateway.networking.k8s.io`),
    ])
  }
  await kubectlOk(kubectl, ['apply', '--server-side', '-f', join(process.env.NODE_BIN_DIR ?? '', 'traefik-crds.yaml')])
  await kubectlOk(kubectl, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/ingressroutes.traefik.io',
    'crd/ingressroutetcps.traefik.io',
  ])
  await kubectlOk(kubectl, ['apply', '--server-side', '-f', '-'], { input: traefikManifests(options) })
  await kubectlOk(kubectl, ['-n', TRAEFIK_NAMESPACE, 'rollout', 'status', 'deployment/traefik', '--timeout=120s'])
}

/** Gateway API's standard CRDs (the pinned release, controlplane/route-crds.txt) that Traefik's provider watches. */
const GATEWAY_CRDS = ['gatewayclasses', 'gateways', 'httproutes', 'grpcroutes', 'referencegrants', 'backendtlspolicies']

export type Client = (host: string) => Promise<string>

export async function proxyClients(suite: Suite): Promise<{ http: Client; https: Client; tls: Client }> {
  // The pod of the current rollout (an earlier one may still be terminating).
  const pods = (
    await suite.rest.get<{ items: KubeObject[] }>(`/api/v1/namespaces/${TRAEFIK_NAMESPACE}/pods`)
  ).items.filter(
    (pod) =>
      pod.metadata.deletionTimestamp === undefined &&
      ((pod.status as Json).conditions as Json[] | undefined)?.some((c) => c.type === 'Ready' && c.status === 'True'),
  )
  if (pods.length !== 1) throw new Error(`${pods.length} ready Traefik pods`)
  const proxy = String(((pods[0] as KubeObject).status as Json).podIP)
  const get =
    (secure: boolean): Client =>
    (host) =>
      new Promise((resolve) => {
        const options = { host: proxy, headers: { host }, path: '/', timeout: 1000 }
        const done = (res: import('node:http').IncomingMessage) => {
          let body = ''
          res.setEncoding('utf8')
          res.on('data', (chunk: string) => (body += chunk))
          res.on('end', () => resolve(res.statusCode === 200 ? body : `status ${res.statusCode}`))
        }
        const req = secure
          ? httpsRequest(
              { ...options, port: TRAEFIK_PORTS.websecure, servername: host, rejectUnauthorized: false },
              done,
            )
          : httpRequest({ ...options, port: TRAEFIK_PORTS.web }, done)
        req.on('timeout', () => req.destroy(new Error('timeout')))
        req.on('error', (error) => resolve(`error: ${error.message}`))
        req.end()
      })
  const tls: Client = (host) =>
    firstLine(
      tlsConnect({
        host: proxy,
        port: TRAEFIK_PORTS.tcpsecure,
        servername: host,
        rejectUnauthorized: false,
        timeout: 1000,
      }),
    )
  return { http: get(false), https: get(true), tls }
}

/** From the moment the instance id is known: an attempt started every 20 ms until one gets `want`; when it started. */
async function firstAnswer(
  s: Scenario,
  name: string,
  since: number,
  client: Client,
  domain: string,
  want: string,
): Promise<number> {
  let first: number | undefined
  while (first === undefined && Date.now() < since + 90_000) {
    const id = (await s.status(name)).instanceId
    if (typeof id === 'string') {
      const startedAt = Date.now()
      void client(`${id}.${domain}`).then((answer) => {
        if (answer === want && (first === undefined || startedAt < first)) first = startedAt
      })
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  if (first === undefined) throw new Error(`${name}: no answer through the proxy`)
  return first - since
}

export interface RoutedCase {
  /** the exposure (HTTP: http-app on 8080; TLS: tcp-echo on 9000) */
  mode: 'HTTP' | 'TLS'
  client: Client
  /** the endpoint the status must name for `host` */
  endpoint: (host: string) => Json
}

/**
 * Three instances one after another: the endpoint by host name, the app's answer through the proxy right after
 * Running, Running never before the proxy carries a connection; then a pod beside them that is not the proxy
 * cannot reach the app's port (the expose policy admits the proxy's namespace only).
 */
export async function routedScenario(
  t: Test,
  suite: Suite,
  name: string,
  { mode, client, endpoint }: RoutedCase,
): Promise<void> {
  const s = await suite.scenario(t, name)
  const [image, port, want] = mode === 'HTTP' ? ['http-app', 8080, 'http-app\n'] : ['tcp-echo', 9000, 'tcp-echo ready']
  const domain = mode === 'HTTP' ? BASE_DOMAIN : TLS_BASE_DOMAIN
  await s.create(
    definition('app', { pod: app(image, port), expose: { type: mode, port }, network: { egress: 'None' } }),
  )
  const samples: Sample[] = []
  for (const owner of OWNERS) {
    const instance = `app-u-${owner}`
    const since = Date.now()
    await s.create(s.challenge('app', owner))
    const reachable = firstAnswer(s, instance, since, client, domain, want)
    const { at, status } = await whenRunning(s, instance, since)
    const host = `${String(status.instanceId)}.${domain}`
    const answer = await client(host)
    t.strictSame(status.endpoint, endpoint(host), `${instance}: the endpoint by host name on the proxy's port`)
    t.equal(answer, want, `${instance}: right after Running, the proxy hands the app's answer`)
    samples.push({ instance, running: at, reachable: await reachable })
  }
  t.comment(`${name}, create to Running and to the first answer:\n${table(samples)}`)
  t.strictSame(
    samples.filter((x) => x.reachable > x.running + 20).map((x) => x.instance),
    [],
    'never Running before a connection works (20 ms: the prober’s period)',
  )

  const beside = await workstation(suite, s.ns, 'beside')
  const target = await podOf(s, 'app-u-p1')
  const seen = await probeFrom(suite, s.ns, beside.name, { app: `tcp:${target.ip}:${port}` })
  t.equal(seen.app?.reached, false, "a pod that is not the proxy cannot reach the app's port")
}
