/**
 * Where players connect, as observed on the instance's own Service and route: the endpoint exists once traffic has
 * a path to the instance (a node port or a load-balancer address allocated, the route in place and, for Gateway
 * API, accepted), and the instant from which that path has existed, for the settle time of running.ts.
 */
import type { Config } from '../config/config.js'
import type { KubeObject } from '../contract/protocol.js'
import type { ResolvedDefinition } from './definition.js'
import type { ChildNames } from './names.js'
import { ownChild, type ObservedIndex } from './observed.js'
import { field, list } from './untrusted.js'
import { routeVerdict, type RouteProblem } from './route-status.js'
import { instanceHost, routeKind } from './traffic-routes.js'
import type { Endpoint } from './status.js'
import { readTime } from './time.js'

export interface EndpointObservation {
  /** Present only once traffic has a path to the instance. */
  endpoint: Endpoint | undefined
  /** Since when that path has existed (the Service's and the route's creation, a Gateway's acceptance), ms. */
  since: number
  /** Why the route is in place but carries no traffic yet, as its Gateway says (Gateway API routes only). */
  routeProblem: RouteProblem | undefined
}

const NO_ENDPOINT: EndpointObservation = { endpoint: undefined, since: 0, routeProblem: undefined }

function createdAt(object: KubeObject): number {
  return readTime(object.metadata.creationTimestamp) ?? 0
}

function servicePort(service: KubeObject, port: number): unknown {
  return list(field(field(service, 'spec'), 'ports')).find((candidate) => field(candidate, 'port') === port)
}

/** The endpoint of an HTTP or TLS instance: once its route is in place and, for Gateway API, accepted. */
function routedEndpoint(
  children: ObservedIndex,
  names: ChildNames,
  type: 'HTTP' | 'TLS',
  instanceId: string,
  config: Config,
  serviceSince: number,
): EndpointObservation {
  const kind = routeKind(type, config)
  const route = ownChild(children, kind, names.base, names.uid)
  if (!route) return NO_ENDPOINT
  let since = Math.max(serviceSince, createdAt(route))
  if (kind === 'HTTPRoute' || kind === 'TLSRoute') {
    const verdict = routeVerdict(route, kind, config)
    if (verdict.problem) return { endpoint: undefined, since: 0, routeProblem: verdict.problem }
    since = Math.max(since, verdict.acceptedSince)
  }
  const host = instanceHost(type, instanceId, config)
  if (type === 'TLS') {
    const port = config.tlsPort
    return {
      endpoint: { type: 'TLS', host, port, connection: `ncat --ssl ${host} ${port}` },
      since,
      routeProblem: undefined,
    }
  }
  // A Gateway's HTTPS listener and Traefik's IngressRoute always end TLS; an Ingress only with INGRESS_TLS_SECRET.
  const tls = config.httpRouting !== 'Ingress' || config.ingressTlsSecret !== undefined
  const url = `${tls ? 'https' : 'http'}://${host}/`
  return {
    endpoint: { type: 'HTTP', host, port: tls ? 443 : 80, url, connection: url },
    since,
    routeProblem: undefined,
  }
}

/** The endpoint exists only once traffic has a path to the instance, as observed on the Service (and its route). */
export function observeEndpoint(
  children: ObservedIndex,
  names: ChildNames,
  definition: ResolvedDefinition,
  namespace: string,
  instanceId: string,
  config: Config,
): EndpointObservation {
  const service = ownChild(children, 'Service', names.base, names.uid)
  if (!service) return NO_ENDPOINT
  const port = definition.expose.port
  const since = createdAt(service)
  const found = (endpoint: Endpoint): EndpointObservation => ({ endpoint, since, routeProblem: undefined })
  switch (definition.expose.type) {
    case 'HTTP':
    case 'TLS':
      return routedEndpoint(children, names, definition.expose.type, instanceId, config, since)
    case 'NodePort': {
      const nodePort = field(servicePort(service, port), 'nodePort')
      if (typeof nodePort !== 'number') return NO_ENDPOINT
      const host = config.publicHost
      return found({ type: 'NodePort', host, port: nodePort, connection: `nc ${host} ${nodePort}` })
    }
    case 'LoadBalancer': {
      const ingress = list(field(field(field(service, 'status'), 'loadBalancer'), 'ingress'))[0]
      const address = field(ingress, 'ip') ?? field(ingress, 'hostname')
      if (typeof address !== 'string' || address === '') return NO_ENDPOINT
      return found({ type: 'LoadBalancer', host: address, port, connection: `nc ${address} ${port}` })
    }
    case 'Internal': {
      const host = `${names.base}.${namespace}.svc.cluster.local`
      return found({ type: 'Internal', host, port, connection: `nc ${host} ${port}` })
    }
  }
}
