/**
 * The route that brings players' traffic from the shared proxy to an HTTP or TLS instance, one builder per
 * routing choice, and what the proxy says about it:
 *
 *   HTTP  HTTP_ROUTING=Ingress (default)  Ingress          networking.k8s.io/v1
 *         HTTP_ROUTING=GatewayAPI         HTTPRoute        gateway.networking.k8s.io/v1
 *         HTTP_ROUTING=Traefik            IngressRoute     traefik.io/v1alpha1
 *   TLS   TLS_ROUTING=GatewayAPI          TLSRoute         gateway.networking.k8s.io/v1
 *         TLS_ROUTING=Traefik             IngressRouteTCP  traefik.io/v1alpha1
 *
 * Every route sends `<instanceId>.<domain>` to the instance's ClusterIP Service. A TLS route always ends TLS at
 * the proxy (the listener's `tls.mode: Terminate`, Traefik's `tls` without passthrough), so the challenge
 * speaks plain TCP and never holds a certificate.
 */
import type { IHTTPRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/HTTPRoute'
import type { ITLSRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/TLSRoute'
import type { IIngressRoute } from '@kubernetes-models/traefik/traefik.io/v1alpha1/IngressRoute'
import type { IIngressRouteTCP } from '@kubernetes-models/traefik/traefik.io/v1alpha1/IngressRouteTCP'
import type { IIngress } from 'kubernetes-models/networking.k8s.io/v1/Ingress'
import type { Config, GatewayRef } from '../config.js'
import type { DesiredChild, KubeObject } from '../protocol.js'
import { list as anyList, record as anyRecord, text, type Loose } from './read.js'

export const GATEWAY_API_VERSION = 'gateway.networking.k8s.io/v1'
export const TRAEFIK_API_VERSION = 'traefik.io/v1alpha1'
const GATEWAY_GROUP = 'gateway.networking.k8s.io'

/** Every route kind and its apiVersion; the teardown takes them out with the traffic path. */
const ROUTE_API_VERSIONS = {
  Ingress: 'networking.k8s.io/v1',
  HTTPRoute: GATEWAY_API_VERSION,
  IngressRoute: TRAEFIK_API_VERSION,
  TLSRoute: GATEWAY_API_VERSION,
  IngressRouteTCP: TRAEFIK_API_VERSION,
} as const
export type RouteKind = keyof typeof ROUTE_API_VERSIONS
export const ROUTE_KINDS = Object.keys(ROUTE_API_VERSIONS) as RouteKind[]

/** The group Metacontroller names a child rule's objects by in a request (`TLSRoute.gateway.networking.k8s.io/v1`). */
export function routeGroup(kind: RouteKind): string {
  return `${kind}.${ROUTE_API_VERSIONS[kind]}`
}

/** Where a route sends its host: the instance's Service. */
export interface RouteTarget {
  metadata: { name: string; labels: Record<string, string> }
  host: string
  service: { name: string; port: number }
}

/** The public host of an HTTP or TLS instance: its instance id (never the Challenge name) under the domain. */
export function instanceHost(type: 'HTTP' | 'TLS', instanceId: string, config: Config): string {
  return `${instanceId}.${type === 'TLS' ? config.tlsBaseDomain : config.baseDomain}`
}

/** The route kind of an HTTP or TLS instance under this configuration. */
export function routeKind(type: 'HTTP' | 'TLS', config: Config): RouteKind {
  if (type === 'HTTP') return ({ Ingress: 'Ingress', GatewayAPI: 'HTTPRoute', Traefik: 'IngressRoute' } as const)[config.httpRouting]
  return config.tlsRouting === 'GatewayAPI' ? 'TLSRoute' : 'IngressRouteTCP'
}

/**
 * Why this instance's route cannot be made, if it cannot:
 * - TLS_ROUTING's default (GatewayAPI) does not make GATEWAY required at start (HTTP and netcat challenges work
 *   without one), so a TLS instance checks it;
 * - the route's kind needs a child rule in the CompositeController (the routing's kustomize component): Metacontroller
 *   sends one group per child rule, and could neither observe nor delete a route of a kind without one.
 */
export function routingProblem(type: 'HTTP' | 'TLS', config: Config, childGroups: ReadonlySet<string>): string | undefined {
  if (type === 'TLS' && config.tlsRouting === 'GatewayAPI' && config.gateway === undefined) {
    return 'TLS challenges cannot be exposed yet: the operator has not set GATEWAY (TLS_ROUTING=GatewayAPI) or TLS_ROUTING=Traefik.'
  }
  const group = routeGroup(routeKind(type, config))
  if (!childGroups.has(group)) {
    return `This challenge cannot be exposed yet: the CompositeController has no child rule for ${group} (the operator must install its routing component).`
  }
  return undefined
}

/** A Gateway API route's spec: attached to the shared Gateway (one listener, or any), the host to the Service. */
function gatewayRouteSpec(target: RouteTarget, gateway: GatewayRef, listener: string | undefined) {
  return {
    parentRefs: [{ namespace: gateway.namespace, name: gateway.name, ...(listener === undefined ? {} : { sectionName: listener }) }],
    hostnames: [target.host],
    rules: [{ backendRefs: [{ name: target.service.name, port: target.service.port }] }],
  }
}

export function ingress(target: RouteTarget, config: Config): IIngress & DesiredChild {
  const { host, service } = target
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: target.metadata,
    spec: {
      ...(config.ingressClassName === undefined ? {} : { ingressClassName: config.ingressClassName }),
      ...(config.ingressTlsSecret === undefined ? {} : { tls: [{ hosts: [host], secretName: config.ingressTlsSecret }] }),
      rules: [
        {
          host,
          http: {
            paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: service.name, port: { number: service.port } } } }],
          },
        },
      ],
    },
  }
}

/** Attached to the shared Gateway's HTTPS listener, which holds the wildcard certificate. */
export function httpRoute(target: RouteTarget, gateway: GatewayRef, config: Config): IHTTPRoute & DesiredChild {
  return {
    apiVersion: GATEWAY_API_VERSION,
    kind: 'HTTPRoute',
    metadata: target.metadata,
    spec: gatewayRouteSpec(target, gateway, config.gatewayHttpListener),
  }
}

/** Attached to the shared Gateway's TLS listener (`tls.mode: Terminate`): the Gateway matches the SNI. */
export function tlsRoute(target: RouteTarget, gateway: GatewayRef, config: Config): ITLSRoute & DesiredChild {
  return {
    apiVersion: GATEWAY_API_VERSION,
    kind: 'TLSRoute',
    metadata: target.metadata,
    spec: gatewayRouteSpec(target, gateway, config.gatewayTlsListener),
  }
}

/**
 * Traefik's HTTP router on TRAEFIK_HTTP_ENTRYPOINT, TLS always on: with INGRESS_TLS_SECRET (in the challenges'
 * namespace) as the certificate, otherwise the default TLSStore's.
 */
export function ingressRoute(target: RouteTarget, config: Config): IIngressRoute & DesiredChild {
  return {
    apiVersion: TRAEFIK_API_VERSION,
    kind: 'IngressRoute',
    metadata: target.metadata,
    spec: {
      entryPoints: [config.traefikHttpEntryPoint],
      routes: [{ kind: 'Rule', match: `Host(\`${target.host}\`)`, services: [{ name: target.service.name, port: target.service.port }] }],
      tls: config.ingressTlsSecret === undefined ? {} : { secretName: config.ingressTlsSecret },
    },
  }
}

/**
 * Traefik's TCP router on TRAEFIK_TLS_ENTRYPOINT, matching the SNI. `tls` is present (Traefik ends TLS with the
 * default TLSStore's certificate) and never `passthrough`: the challenge gets plain TCP.
 */
export function ingressRouteTcp(target: RouteTarget, config: Config): IIngressRouteTCP & DesiredChild {
  return {
    apiVersion: TRAEFIK_API_VERSION,
    kind: 'IngressRouteTCP',
    metadata: target.metadata,
    spec: {
      entryPoints: [config.traefikTlsEntryPoint],
      routes: [{ match: `HostSNI(\`${target.host}\`)`, services: [{ name: target.service.name, port: target.service.port }] }],
      tls: {},
    },
  }
}

/** The route of an HTTP or TLS instance under this configuration. */
export function route(type: 'HTTP' | 'TLS', target: RouteTarget, config: Config): DesiredChild {
  const gateway = config.gateway as GatewayRef
  switch (routeKind(type, config)) {
    case 'Ingress':
      return ingress(target, config)
    case 'HTTPRoute':
      return httpRoute(target, gateway, config)
    case 'IngressRoute':
      return ingressRoute(target, config)
    case 'TLSRoute':
      return tlsRoute(target, gateway, config)
    case 'IngressRouteTCP':
      return ingressRouteTcp(target, config)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// What the Gateway says: a Gateway API route carries traffic only once its parent reports it Accepted, with its
// references resolved, in the route's status.parents[]. Ingress and Traefik's routes report nothing.

/** Why a route does not carry traffic yet; `reason` is the Gateway's, or `Pending` while it has said nothing. */
export interface RouteProblem {
  reason: string
  message: string
}

function record(value: unknown): Loose {
  return anyRecord(value) ?? {}
}

function list(value: unknown): Loose[] {
  return anyList(value).map(record)
}

/** A status entry for our parent: group and kind default as in the spec, the namespace to the route's. */
function isOurParent(ref: Loose, gateway: GatewayRef, listener: string | undefined, routeNamespace: string | undefined): boolean {
  return (
    (ref.group ?? GATEWAY_GROUP) === GATEWAY_GROUP &&
    (ref.kind ?? 'Gateway') === 'Gateway' &&
    (ref.namespace ?? routeNamespace) === gateway.namespace &&
    ref.name === gateway.name &&
    ref.sectionName === listener
  )
}

/**
 * The first of Accepted and ResolvedRefs that is not True for the current generation (a condition written for
 * an older spec no longer counts), or undefined when both are.
 */
function notTrue(conditions: Loose[], generation: number): { type: string; reason: string } | undefined {
  for (const type of ['Accepted', 'ResolvedRefs']) {
    const found = conditions.find((each) => each.type === type)
    const observed = typeof found?.observedGeneration === 'number' ? found.observedGeneration : generation
    if (found?.status !== 'True' || observed < generation) {
      const reason = found === undefined || observed < generation ? 'Pending' : (text(found.reason) ?? 'Unknown')
      return { type, reason }
    }
  }
  return undefined
}

/** Undefined when the route's parent Gateway has accepted it and resolved its backend; otherwise why not. */
export function routeProblem(route: KubeObject, kind: 'HTTPRoute' | 'TLSRoute', config: Config): RouteProblem | undefined {
  const gateway = config.gateway as GatewayRef
  const listener = kind === 'TLSRoute' ? config.gatewayTlsListener : config.gatewayHttpListener
  const where = `Gateway ${gateway.namespace}/${gateway.name}${listener === undefined ? '' : ` (listener ${listener})`}`
  const generation = route.metadata.generation ?? 0
  const entries = list(record(route.status).parents).filter((entry) =>
    isOurParent(record(entry.parentRef), gateway, listener, route.metadata.namespace),
  )
  if (entries.length === 0) return { reason: 'Pending', message: `${where} has not reported on the ${kind} yet.` }
  const problems = entries.map((entry) => notTrue(list(entry.conditions), generation))
  if (problems.includes(undefined)) return undefined
  const first = problems[0] as { type: string; reason: string }
  return { reason: first.reason, message: `${where} has not accepted the ${kind}: ${first.type} is not True (${first.reason}).` }
}
