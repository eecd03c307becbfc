/**
 * What the observed children and pods say about the current run: is its isolation in place, is the workload
 * ready, can traffic reach it (the endpoint), and is something wrong with its pods. Only objects of the current
 * run count: a restart rolls the pod template annotation, and until the Deployment shows it, the old pods' state
 * is not ours. Only children this Challenge owns count: an object that merely carries a child's name (made by
 * someone else, so Metacontroller never created or claimed it) is never the instance's flag, policy or address.
 */
import type { Config } from '../config.js'
import type { KubeObject } from '../protocol.js'
import { Label, Reason, RUN_ANNOTATION } from './api.js'
import type { ResolvedDefinition } from './definition.js'
import type { ChildNames } from './names.js'
import { isBeingDeleted, objectsOfKind, ownChild, type ObservedIndex } from './observed.js'
import { field, list, num, plain, text } from './read.js'
import { instanceHost, routeKind, routeProblem, type RouteProblem } from './routes.js'
import type { Endpoint } from './status.js'

/** A container that restarted this often while in CrashLoopBackOff is broken, not slow to start. */
export const CRASH_LOOP_RESTARTS = 3

export type PodProblem =
  | { fatal: true; reason: typeof Reason.CrashLoopBackOff | typeof Reason.InvalidImage | typeof Reason.ConfigError | typeof Reason.PodRefused; message: string }
  | { fatal: false; reason: typeof Reason.ImagePullBackOff | typeof Reason.Unschedulable | typeof Reason.PodRefused; message: string }

/** The run annotation in `metadata`, as found (compared with `String(run)`, so anything but that string is another run). */
function runIn(metadata: unknown): unknown {
  return field(field(metadata, 'annotations'), RUN_ANNOTATION)
}

/** The run a Deployment's pod template is of: a restart rolls it. */
function templateRun(deployment: KubeObject): unknown {
  return runIn(field(field(field(deployment, 'spec'), 'template'), 'metadata'))
}

/**
 * The children the pod must never run without, as [kind, name]: the flag Secret it mounts, and the
 * NetworkPolicies that isolate it (the `-internet` one only with egress Internet).
 */
export function guardChildren(names: ChildNames, egress: ResolvedDefinition['egress']): [kind: string, name: string][] {
  const guards: [string, string][] = [
    ['Secret', names.flagSecret],
    ['NetworkPolicy', names.isolatePolicy],
    ['NetworkPolicy', names.exposePolicy],
  ]
  if (egress === 'Internet') guards.push(['NetworkPolicy', names.internetPolicy])
  return guards
}

/** The names of the guard children not observed as this Challenge's own (empty once the pod may run). */
export function missingGuards(children: ObservedIndex, names: ChildNames, egress: ResolvedDefinition['egress']): string[] {
  return guardChildren(names, egress)
    .filter(([kind, name]) => ownChild(children, kind, name, names.uid) === undefined)
    .map(([kind, name]) => `${kind} ${name}`)
}

/** Ready: the Deployment of this run has rolled out and has an available replica (readiness probe passed). */
export function workloadReady(children: ObservedIndex, names: ChildNames, run: number): boolean {
  const deployment = ownChild(children, 'Deployment', names.base, names.uid)
  if (!deployment || templateRun(deployment) !== String(run)) return false
  const status = field(deployment, 'status')
  const generation = deployment.metadata.generation ?? 0
  return num(field(status, 'observedGeneration')) >= generation && num(field(status, 'availableReplicas')) >= 1
}

/** Pods of this instance (every one of its pod labels) and run, not on their way out. */
export function currentPods(related: ObservedIndex, podLabels: Record<string, string>, run: number): KubeObject[] {
  const selected = Object.entries(podLabels)
  return objectsOfKind(related, 'Pod').filter(
    (pod) =>
      selected.every(([key, value]) => pod.metadata.labels?.[key] === value) && runIn(pod.metadata) === String(run) && !isBeingDeleted(pod),
  )
}

/**
 * Any pod of the instance still exists (of any run, terminating ones included): teardown waits for them. A pod
 * without the uid label was made before it existed (its name is this instance's); one with another uid belongs
 * to a predecessor of the same name and is not this Challenge's to wait for.
 */
export function anyPodRemains(related: ObservedIndex, names: ChildNames): boolean {
  return objectsOfKind(related, 'Pod').some((pod) => {
    const labels = pod.metadata.labels
    return labels?.[Label.instance] === names.base && (labels[Label.uid] === undefined || labels[Label.uid] === names.uid)
  })
}

function waitingProblem(status: unknown): PodProblem | undefined {
  const container = text(field(status, 'name')) ?? 'unknown'
  const reason = text(field(field(field(status, 'state'), 'waiting'), 'reason'))
  switch (reason) {
    case 'InvalidImageName':
      return { fatal: true, reason: Reason.InvalidImage, message: `The image of container ${container} is not a valid image name.` }
    case 'CreateContainerConfigError':
    case 'CreateContainerError':
    case 'RunContainerError':
      return { fatal: true, reason: Reason.ConfigError, message: `Container ${container} cannot be created (${reason}).` }
    case 'CrashLoopBackOff':
      return num(field(status, 'restartCount')) >= CRASH_LOOP_RESTARTS
        ? { fatal: true, reason: Reason.CrashLoopBackOff, message: `Container ${container} keeps crashing.` }
        : undefined
    case 'ImagePullBackOff':
    case 'ErrImagePull':
      return { fatal: false, reason: Reason.ImagePullBackOff, message: `The image of container ${container} cannot be pulled yet; retrying.` }
    default:
      return undefined
  }
}

/** The most serious problem among the pods: fatal ones first, then image pulls, then scheduling. */
export function podProblem(pods: readonly KubeObject[]): PodProblem | undefined {
  const problems: PodProblem[] = []
  for (const pod of pods) {
    const status = field(pod, 'status')
    for (const container of [...list(field(status, 'initContainerStatuses')), ...list(field(status, 'containerStatuses'))]) {
      const problem = waitingProblem(container)
      if (problem) problems.push(problem)
    }
    const unschedulable = list(field(status, 'conditions')).some(
      (condition) =>
        field(condition, 'type') === 'PodScheduled' &&
        field(condition, 'status') === 'False' &&
        field(condition, 'reason') === 'Unschedulable',
    )
    if (unschedulable) {
      problems.push({ fatal: false, reason: Reason.Unschedulable, message: 'The cluster has no room for the instance yet; waiting for capacity.' })
    }
  }
  return problems.find((problem) => problem.fatal) ?? problems.find((problem) => problem.reason === Reason.ImagePullBackOff) ?? problems[0]
}

/** Longest part of the API server's refusal a player is shown. */
const REFUSAL_MESSAGE_LENGTH = 300

/**
 * Kubernetes would not create the pod of this run (Pod Security, a LimitRange, a full quota): the ReplicaSet's
 * `FailedCreate`, which the Deployment reports as its `ReplicaFailure` condition. A full quota may empty (another
 * instance ends), so it waits, Pending; any other refusal is the definition's for good: an Error at once, which
 * frees the budget instead of holding it until a bare StartupTimeout.
 */
export function podRefusal(children: ObservedIndex, names: ChildNames, run: number): PodProblem | undefined {
  const deployment = ownChild(children, 'Deployment', names.base, names.uid)
  if (!deployment || templateRun(deployment) !== String(run)) return undefined
  const failure = list(field(field(deployment, 'status'), 'conditions')).find(
    (condition) => field(condition, 'type') === 'ReplicaFailure' && field(condition, 'status') === 'True',
  )
  if (failure === undefined) return undefined
  const said = text(field(failure, 'message')) ?? text(field(failure, 'reason')) ?? 'no reason given'
  // The API server's words quote the pod, and so the author's image and names.
  const detail = plain(said, REFUSAL_MESSAGE_LENGTH)
  if (/exceeded quota/i.test(said)) {
    return { fatal: false, reason: Reason.PodRefused, message: `The namespace's quota is full; waiting for room (${detail}).` }
  }
  return { fatal: true, reason: Reason.PodRefused, message: `Kubernetes refused the instance's pod: ${detail}` }
}

function servicePort(service: KubeObject, port: number): unknown {
  return list(field(field(service, 'spec'), 'ports')).find((candidate) => field(candidate, 'port') === port)
}

export interface EndpointObservation {
  /** Present only once traffic can reach the instance. */
  endpoint: Endpoint | undefined
  /** Why the route is in place but carries no traffic yet, as its Gateway says (Gateway API routes only). */
  routeProblem: RouteProblem | undefined
}

const NO_ENDPOINT: EndpointObservation = { endpoint: undefined, routeProblem: undefined }

/** The endpoint of an HTTP or TLS instance: once its route is in place and, for Gateway API, accepted. */
function routedEndpoint(children: ObservedIndex, names: ChildNames, type: 'HTTP' | 'TLS', instanceId: string, config: Config): EndpointObservation {
  const kind = routeKind(type, config)
  const route = ownChild(children, kind, names.base, names.uid)
  if (!route) return NO_ENDPOINT
  if (kind === 'HTTPRoute' || kind === 'TLSRoute') {
    const problem = routeProblem(route, kind, config)
    if (problem) return { endpoint: undefined, routeProblem: problem }
  }
  const host = instanceHost(type, instanceId, config)
  if (type === 'TLS') {
    const port = config.tlsPort
    return { endpoint: { type: 'TLS', host, port, connection: `ncat --ssl ${host} ${port}` }, routeProblem: undefined }
  }
  // A Gateway's HTTPS listener and Traefik's IngressRoute always end TLS; an Ingress only with INGRESS_TLS_SECRET.
  const tls = config.httpRouting !== 'Ingress' || config.ingressTlsSecret !== undefined
  const url = `${tls ? 'https' : 'http'}://${host}/`
  return { endpoint: { type: 'HTTP', host, port: tls ? 443 : 80, url, connection: url }, routeProblem: undefined }
}

/** The endpoint exists only once traffic can reach the instance, as observed on the Service (and its route). */
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
  const found = (endpoint: Endpoint | undefined): EndpointObservation => ({ endpoint, routeProblem: undefined })
  switch (definition.expose.type) {
    case 'HTTP':
    case 'TLS':
      return routedEndpoint(children, names, definition.expose.type, instanceId, config)
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
