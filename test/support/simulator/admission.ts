// What the API server does to an object on create/update before storing it: validation of names and labels,
// per-kind defaulting and allocation (Service clusterIP and nodePorts, Secret stringData), and the few
// immutability rules hooks trip over. Kept to what changes how a hook's children behave.
import { isIP } from 'node:net'
import { firstFree, fnv1a, isObject, type JsonObject } from './json.js'
import { labelMatcher, type KubeObject, type LabelSelector } from './objects.js'

/** The in-memory cluster raises the first four; a real API server (test/support/kube) any Status reason. */
export type ApiErrorReason =
  'NotFound' | 'AlreadyExists' | 'Conflict' | 'Invalid' | 'Forbidden' | 'BadRequest' | 'Unknown'

const HTTP_STATUS: Record<ApiErrorReason, number> = {
  NotFound: 404,
  AlreadyExists: 409,
  Conflict: 409,
  Invalid: 422,
  Forbidden: 403,
  BadRequest: 400,
  Unknown: 500,
}

/** An API server rejection, with the reason and HTTP status a real one would give. */
export class ApiError extends Error {
  readonly status: number
  constructor(
    readonly reason: ApiErrorReason,
    message: string,
    status?: number,
  ) {
    super(message)
    this.name = 'ApiError'
    this.status = status ?? HTTP_STATUS[reason]
  }
}

/** Read access to the store, for allocations that must not collide. */
export interface StoreView {
  list(apiVersion: string, kind: string, namespace?: string): KubeObject[]
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/
const QUALIFIED_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
const MAX_ANNOTATIONS_BYTES = 256 * 1024

export function invalid(obj: KubeObject, detail: string): ApiError {
  return new ApiError('Invalid', `${obj.kind} "${obj.metadata.name}" is invalid: ${detail}`)
}

/** Validates and defaults `next` in place (`previous` is the stored object on update). Throws ApiError. */
export function admit(next: KubeObject, previous: KubeObject | undefined, store: StoreView): void {
  validateMeta(next)
  if (next.kind === 'Service') admitService(next, previous, store)
  if (next.kind === 'Secret') admitSecret(next)
  if (next.kind === 'Deployment') admitDeployment(next, previous)
  if (next.kind === 'Pod') admitPod(next)
  if (next.kind === 'NetworkPolicy') admitNetworkPolicy(next)
}

/** Kinds without a namespace the simulator stores (the CompositeController, as `kubectl apply` stores it; Namespaces). */
const CLUSTER_SCOPED = new Set(['CompositeController', 'DecoratorController', 'Namespace'])

function validateMeta(obj: KubeObject): void {
  const { name, namespace, labels = {}, annotations = {} } = obj.metadata
  // Services need DNS-1035 labels (a letter first, at most 63 chars); most other kinds DNS-1123 subdomains.
  const [pattern, limit, rule] =
    obj.kind === 'Service'
      ? [DNS1035_LABEL, 63, 'a DNS-1035 label']
      : [DNS1123_SUBDOMAIN, 253, 'a lowercase RFC 1123 subdomain']
  if (typeof name !== 'string' || name.length > limit || !pattern.test(name)) {
    throw invalid(
      obj,
      `metadata.name: Invalid value: "${String(name)}": must be ${rule} of at most ${limit} characters`,
    )
  }
  if (CLUSTER_SCOPED.has(obj.kind)) {
    if (namespace !== undefined) throw invalid(obj, `metadata.namespace: Forbidden: not allowed on this type`)
  } else if (typeof namespace !== 'string' || namespace.length > 63 || !DNS1123_LABEL.test(namespace)) {
    throw invalid(obj, `metadata.namespace: Invalid value: "${String(namespace)}"`)
  }
  for (const [key, value] of Object.entries(labels)) {
    validateKey(obj, 'labels', key)
    if (typeof value !== 'string' || value.length > 63 || (value !== '' && !QUALIFIED_NAME.test(value))) {
      throw invalid(
        obj,
        `metadata.labels: Invalid value: "${String(value)}": a label value must be at most 63 characters`,
      )
    }
  }
  for (const key of Object.keys(annotations)) validateKey(obj, 'annotations', key)
  if (JSON.stringify(annotations).length > MAX_ANNOTATIONS_BYTES) {
    throw invalid(obj, 'metadata.annotations: Too long: must have at most 262144 bytes')
  }
}

function validateKey(obj: KubeObject, field: string, key: string): void {
  const slash = key.lastIndexOf('/')
  const prefix = slash < 0 ? '' : key.slice(0, slash)
  const name = key.slice(slash + 1)
  const prefixOk = slash < 0 || (prefix.length <= 253 && DNS1123_SUBDOMAIN.test(prefix))
  if (!prefixOk || name.length > 63 || !QUALIFIED_NAME.test(name)) {
    throw invalid(obj, `metadata.${field}: Invalid value: "${key}": name part must be at most 63 characters`)
  }
}

// ---- Service: defaults and allocations that live only on the server (clusterIP, nodePort) ----

function admitService(svc: KubeObject, previous: KubeObject | undefined, store: StoreView): void {
  const spec = objectField(svc, 'spec')
  const old = isObject(previous?.spec) ? previous.spec : {}
  spec.type ??= 'ClusterIP'
  spec.sessionAffinity ??= 'None'
  spec.internalTrafficPolicy ??= 'Cluster'
  // An update that omits allocated values keeps them (the API server patches them back in).
  spec.clusterIP ??= old.clusterIP ?? allocateClusterIP(svc, store)
  spec.clusterIPs ??= [spec.clusterIP]
  spec.ipFamilies ??= ['IPv4']
  spec.ipFamilyPolicy ??= 'SingleStack'
  const needsNodePort = spec.type === 'NodePort' || spec.type === 'LoadBalancer'
  if (needsNodePort) spec.externalTrafficPolicy ??= 'Cluster'
  const oldPorts = Array.isArray(old.ports) ? old.ports.filter(isObject) : []
  const ports = Array.isArray(spec.ports) ? spec.ports.filter(isObject) : []
  for (const port of ports) {
    port.protocol ??= 'TCP'
    port.targetPort ??= port.port
    if (!needsNodePort) {
      delete port.nodePort // changing the type to ClusterIP releases node ports
      continue
    }
    port.nodePort ??= oldPorts.find((p) => p.port === port.port && p.protocol === port.protocol)?.nodePort
    port.nodePort ??= allocateNodePort(svc, port, store)
  }
  if (!isObject(svc.status)) svc.status = { loadBalancer: {} }
}

function allocateClusterIP(svc: KubeObject, store: StoreView): unknown {
  const used = new Set(store.list('v1', 'Service').map((s) => (s.spec as JsonObject).clusterIP))
  const seed = fnv1a(`${svc.metadata.namespace}/${svc.metadata.name}`)
  return firstFree<unknown>(used, (i) => `10.96.${((seed + i) >>> 8) & 255}.${1 + (((seed + i) & 255) % 254)}`)
}

/** Deterministic: the same service and port get the same nodePort in every test run (30000-32767). */
function allocateNodePort(svc: KubeObject, port: JsonObject, store: StoreView): unknown {
  const used = new Set<unknown>()
  for (const s of store.list('v1', 'Service')) {
    for (const p of ((s.spec as JsonObject).ports as JsonObject[] | undefined) ?? []) used.add(p.nodePort)
  }
  const start = fnv1a(`${svc.metadata.namespace}/${svc.metadata.name}/${String(port.port)}`) % 2768
  return firstFree<unknown>(used, (i) => 30000 + ((start + i) % 2768))
}

// ---- Secret: stringData is write-only, merged into data ----

function admitSecret(secret: KubeObject): void {
  secret.type ??= 'Opaque'
  const data: JsonObject = isObject(secret.data) ? secret.data : {}
  for (const [key, value] of Object.entries(isObject(secret.stringData) ? secret.stringData : {})) {
    data[key] = Buffer.from(String(value)).toString('base64')
  }
  delete secret.stringData
  for (const [key, value] of Object.entries(data)) {
    if (typeof value !== 'string' || !BASE64.test(value))
      throw invalid(secret, `data[${key}]: Invalid value: must be base64`)
  }
  secret.data = data
}

// ---- Deployment: selector rules and the defaults a stored Deployment carries ----

function admitDeployment(deploy: KubeObject, previous: KubeObject | undefined): void {
  const spec = objectField(deploy, 'spec')
  const selector = (isObject(spec.selector) ? spec.selector : {}) as LabelSelector
  const template = objectField(spec, 'template')
  const templateMeta = objectField(template, 'metadata')
  const podSpec = objectField(template, 'spec')
  if (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0) {
    throw invalid(deploy, 'spec.selector: Required value')
  }
  if (!labelMatcher(selector)(templateMeta.labels as Record<string, string> | undefined)) {
    throw invalid(deploy, 'spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`')
  }
  if (previous && JSON.stringify((previous.spec as JsonObject).selector) !== JSON.stringify(spec.selector)) {
    throw invalid(deploy, 'spec.selector: Invalid value: field is immutable')
  }
  const containers = Array.isArray(podSpec.containers) ? podSpec.containers.filter(isObject) : []
  if (containers.length === 0) throw invalid(deploy, 'spec.template.spec.containers: Required value')
  spec.replicas ??= 1
  spec.revisionHistoryLimit ??= 10
  spec.progressDeadlineSeconds ??= 600
  spec.strategy ??= { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } }
  defaultPodSpec(podSpec)
}

// ---- Pod: the pod spec defaults, and what admission plugins add to a Pod (not to a Deployment's template) ----

/** Defaults of a pod spec, in a Deployment's template and in a Pod alike (as a v1.37 API server stores them). */
function defaultPodSpec(podSpec: JsonObject): void {
  podSpec.restartPolicy ??= 'Always'
  podSpec.dnsPolicy ??= 'ClusterFirst'
  podSpec.terminationGracePeriodSeconds ??= 30
  podSpec.schedulerName ??= 'default-scheduler'
  podSpec.securityContext ??= {}
  for (const container of Array.isArray(podSpec.containers) ? podSpec.containers.filter(isObject) : []) {
    const image = String(container.image)
    container.imagePullPolicy ??= image.includes(':') && !image.endsWith(':latest') ? 'IfNotPresent' : 'Always'
    container.terminationMessagePath ??= '/dev/termination-log'
    container.terminationMessagePolicy ??= 'File'
    for (const port of Array.isArray(container.ports) ? container.ports.filter(isObject) : []) port.protocol ??= 'TCP'
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
      if (!isObject(probe)) continue
      probe.timeoutSeconds ??= 1
      probe.periodSeconds ??= 10
      probe.successThreshold ??= 1
      probe.failureThreshold ??= 3
      if (isObject(probe.httpGet)) probe.httpGet.scheme ??= 'HTTP'
    }
  }
}

/** The ServiceAccount, Priority and DefaultTolerationSeconds admission plugins, and the pod spec defaults. */
function admitPod(pod: KubeObject): void {
  const spec = objectField(pod, 'spec')
  defaultPodSpec(spec)
  spec.enableServiceLinks ??= true
  spec.serviceAccountName ??= 'default'
  spec.serviceAccount ??= spec.serviceAccountName
  spec.priority ??= 0
  spec.preemptionPolicy ??= 'PreemptLowerPriority'
  const tolerations = Array.isArray(spec.tolerations) ? spec.tolerations.filter(isObject) : []
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    if (!tolerations.some((toleration) => toleration.key === key))
      tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 })
  }
  spec.tolerations = tolerations
}

// ---- NetworkPolicy: ipBlocks as the API server validates them ----

/** Every ipBlock: a valid CIDR, no IPv4-mapped IPv6 address, each `except` a strict subset of its `cidr`. */
function admitNetworkPolicy(policy: KubeObject): void {
  const spec = objectField(policy, 'spec')
  for (const [direction, peersKey] of [
    ['ingress', 'from'],
    ['egress', 'to'],
  ] as const) {
    const rules = Array.isArray(spec[direction]) ? (spec[direction] as unknown[]).filter(isObject) : []
    rules.forEach((rule, r) => {
      const peers = Array.isArray(rule[peersKey]) ? (rule[peersKey] as unknown[]).filter(isObject) : []
      peers.forEach((peer, p) => {
        if (!isObject(peer.ipBlock)) return
        const path = `spec.${direction}[${r}].${peersKey}[${p}].ipBlock`
        const cidr = checkCidr(policy, `${path}.cidr`, peer.ipBlock.cidr)
        const excepts = Array.isArray(peer.ipBlock.except) ? peer.ipBlock.except : []
        excepts.forEach((value, e) => {
          const inner = checkCidr(policy, `${path}.except[${e}]`, value)
          const subset =
            inner.family === cidr.family &&
            inner.prefix > cidr.prefix &&
            inner.network >> BigInt(inner.size - cidr.prefix) === cidr.network >> BigInt(cidr.size - cidr.prefix)
          if (!subset)
            throw invalid(
              policy,
              `${path}.except[${e}]: Invalid value: "${String(value)}": must be a strict subset of \`cidr\``,
            )
        })
      })
    })
  }
}

interface Cidr {
  family: 4 | 6
  size: number
  network: bigint
  prefix: number
}

function checkCidr(obj: KubeObject, path: string, value: unknown): Cidr {
  const text = String(value)
  const [address = '', prefixText = '', extra] = text.split('/')
  const family = isIP(address)
  const size = family === 4 ? 32 : 128
  const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN
  if ((family !== 4 && family !== 6) || extra !== undefined || !(prefix <= size)) {
    throw invalid(
      obj,
      `${path}: Invalid value: "${text}": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`,
    )
  }
  // ::ffff:0:0/96 and every address in it: 80 zero bits, then ffff.
  if (family === 6 && expandIPv6(address).startsWith('00000000000000000000ffff')) {
    throw invalid(obj, `${path}: Invalid value: "${text}": must not have an IPv4-mapped IPv6 address`)
  }
  return { family, size, network: family === 4 ? ipv4Bits(address) : BigInt(`0x${expandIPv6(address)}`), prefix }
}

function ipv4Bits(address: string): bigint {
  return address.split('.').reduce((bits, octet) => (bits << 8n) + BigInt(Number(octet)), 0n)
}

/** 32 hex digits of an IPv6 address (`::` expanded, a trailing dotted IPv4 part converted). */
function expandIPv6(address: string): string {
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(address)?.[1]
  const hex =
    dotted === undefined
      ? address
      : address.replace(
          dotted,
          ipv4Bits(dotted)
            .toString(16)
            .padStart(8, '0')
            .replace(/(.{4})(.{4})/, '$1:$2'),
        )
  const [head = '', tail] = hex.split('::')
  const groups = (part: string) => (part === '' ? [] : part.split(':'))
  const missing = 8 - groups(head).length - groups(tail ?? '').length
  const all = [...groups(head), ...(tail === undefined ? [] : Array<string>(missing).fill('0')), ...groups(tail ?? '')]
  return all.map((group) => group.padStart(4, '0')).join('')
}

/** The object at `parent[key]`, created when missing or not an object. */
function objectField(parent: JsonObject, key: string): JsonObject {
  const value = parent[key]
  if (isObject(value)) return value
  const created: JsonObject = {}
  parent[key] = created
  return created
}
