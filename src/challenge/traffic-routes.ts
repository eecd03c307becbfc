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
 * speaks plain TCP and never holds a certificate. (What a Gateway says about a route: route-status.ts.)
 */
import type { IHTTPRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/HTTPRoute'
import type { ITLSRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/TLSRoute'
import type { IIngressRoute } from '@kubernetes-models/traefik/traefik.io/v1alpha1/IngressRoute'
import type { IIngressRouteTCP } from '@kubernetes-models/traefik/traefik.io/v1alpha1/IngressRouteTCP'
import type { IIngress } from 'kubernetes-models/networking.k8s.io/v1/Ingress'
import type { Config, GatewayRef } from '../config/config.js'
import type { DesiredChild } from '../contract/protocol.js'

export const GATEWAY_API_VERSION = 'gateway.networking.k8s.io/v1'
export const TRAEFIK_API_VERSION = 'traefik.io/v1alpha1'
export const GATEWAY_GROUP = 'gateway.networking.k8s.io'

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
  if (type === 'HTTP')
    return ({ Ingress: 'Ingress', GatewayAPI: 'HTTPRoute', Traefik: 'IngressRoute' } as const)[config.httpRouting]
  return config.tlsRouting === 'GatewayAPI' ? 'TLSRoute' : 'IngressRouteTCP'
}

/**
 * Why this instance's route cannot be made, if it cannot:
 * - TLS_ROUTING's default (GatewayAPI) does not make GATEWAY required at start (HTTP and netcat challenges work
 *   without one), so a TLS instance checks it;
 * - the route's kind needs a child rule in the CompositeController (the routing's kustomize component): Metacontroller
 *   sends one group per child rule, and could neither observe nor delete a route of a kind without one.
 */
export function routingProblem(
  type: 'HTTP' | 'TLS',
  config: Config,
  childGroups: ReadonlySet<string>,
): string | undefined {
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
    parentRefs: [
      {
        namespace: gateway.namespace,
        name: gateway.name,
        ...(listener === undefined ? {} : { sectionName: listener }),
      },
    ],
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
      ...(config.ingressTlsSecret === undefined
        ? {}
        : { tls: [{ hosts: [host], secretName: config.ingressTlsSecret }] }),
      rules: [
        {
          host,
          http: {
            paths: [
              {
                path: '/',
                pathType: 'Prefix',
                backend: { service: { name: service.name, port: { number: service.port } } },
              },
            ],
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
      routes: [
        {
          kind: 'Rule',
          match: `Host(\`${target.host}\`)`,
          services: [{ name: target.service.name, port: target.service.port }],
        },
      ],
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
      routes: [
        { match: `HostSNI(\`${target.host}\`)`, services: [{ name: target.service.name, port: target.service.port }] },
      ],
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
