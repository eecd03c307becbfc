/**
 * Configuration from the environment, read and validated once at start. A bad value stops the start with a
 * message naming the variable (ConfigError); nothing is re-read later.
 */
import { isIP } from 'node:net'

export const DEVELOPMENT_FLAG_SECRET = 'challenge-hooks-development-secret-do-not-use-in-production'
const MIN_PRODUCTION_SECRET_LENGTH = 32
/**
 * A production secret must not be a word or a short pattern repeated to length: its estimated bits (length ×
 * the Shannon entropy of its characters' frequencies) and its distinct characters have floors. `openssl rand -hex
 * 16` (32 hex characters, 128 random bits) estimates at 99-125 bits with at least 9 distinct characters (2,000
 * draws), `-hex 32` at 227 and more; `passwordpassword…` has 7 distinct characters, a 4-character pattern 64 bits.
 */
const MIN_SECRET_BITS = 80
const MIN_SECRET_SYMBOLS = 8
const PLACEHOLDER = /CHANGE-?ME/i

export interface Config {
  port: number
  /** Probes and metrics listen here, apart from the hook calls (0: any free port, as for PORT). */
  opsPort: number
  host: string
  logLevel: string
  production: boolean
  flagSecret: string
  /** True when FLAG_SECRET was not set and the development value is in use (logged as a warning). */
  flagSecretIsDevelopmentDefault: boolean
  hookToken: string | undefined
  /** PEM files of the hook port's certificate and key (TLS_CERT_FILE, TLS_KEY_FILE): hook calls over HTTPS. */
  hookTls: { certFile: string; keyFile: string } | undefined
  /** Also accepted while a token rotation is under way (Metacontroller still sends the old one). */
  hookTokenPrevious: string | undefined
  baseDomain: string
  ingressClassName: string | undefined
  ingressTlsSecret: string | undefined
  ingressNamespace: string
  /** Labels of the proxy's pods inside INGRESS_NAMESPACE (INGRESS_POD_SELECTOR), when the namespace holds others. */
  ingressPodSelector: Record<string, string> | undefined
  /** Which object routes HTTP instances, and which routes TLS instances by SNI. */
  httpRouting: HttpRouting
  tlsRouting: TlsRouting
  /** The shared Gateway (GATEWAY=<namespace>/<name>) of GatewayAPI routing. */
  gateway: GatewayRef | undefined
  gatewayHttpListener: string | undefined
  gatewayTlsListener: string | undefined
  traefikHttpEntryPoint: string
  traefikTlsEntryPoint: string
  /** Hosts of TLS instances are <instanceId>.<tlsBaseDomain>, reached on tlsPort. */
  tlsBaseDomain: string
  tlsPort: number
  publicHost: string
  ownerBudget: number
  bodyLimit: number
  /** Extra CIDRs the `-internet` policy excludes (the cluster's pod and service ranges when they are public). */
  clusterCidrs: string[]
  /** Where instances may send DNS queries: the DNS pods (namespace and labels), node-local addresses, the port. */
  dns: { namespace: string; podSelector: Record<string, string>; addresses: string[]; port: number }
  /** Where challenge pods run: a node pool of their own (node selector, tolerations) and a default RuntimeClass. */
  instancePods: InstancePods
  /** Extended resources (nvidia.com/gpu, ...) definitions may request; none by default: they are scarce and uncapped. */
  allowedExtendedResources: string[]
  /** RuntimeClasses definitions may name (ALLOWED_RUNTIME_CLASSES, and INSTANCE_RUNTIME_CLASS); none by default. */
  allowedRuntimeClasses: string[]
  /** Longest time the hook asks Metacontroller to wait before the next sync of a parent with a deadline. */
  maxResyncSeconds: number
  /**
   * How long after its pod became ready, and its Service and route were in place, an instance becomes Running:
   * kube-proxy and the proxies program a new path only after that (ENDPOINT_SETTLE_MS).
   */
  endpointSettleMs: number
  /** Concurrent hook requests per process before answering 429 with Retry-After. */
  maxInFlight: number
  /** Hook calls are shed (429 with Retry-After) while the event loop's measured delay is above this; 0: never. */
  maxEventLoopDelayMs: number
  /** A request's headers and body must have arrived within this, or it gets 408 and its connection is closed. */
  requestTimeoutMs: number
  /** On SIGTERM: time between failing readiness and closing, for the Service to stop sending traffic. */
  shutdownDrainMs: number
  /** On SIGTERM: when calls still in flight are cut and the process exits, counted from the signal. */
  shutdownTimeoutMs: number
}

/** Said wherever Internet egress meets an empty CLUSTER_CIDRS: by the author preview, and by the server at start. */
export const INTERNET_WITHOUT_CLUSTER_CIDRS =
  'network.egress Internet with CLUSTER_CIDRS unset: where nodes have public addresses, instances reach them ' +
  "(the kubelet's 10250, every NodePort, a public API server address). Set CLUSTER_CIDRS to the nodes' and the API server's addresses."

const HTTP_ROUTINGS = ['Ingress', 'GatewayAPI', 'Traefik'] as const
export type HttpRouting = (typeof HTTP_ROUTINGS)[number]
const TLS_ROUTINGS = ['GatewayAPI', 'Traefik'] as const
export type TlsRouting = (typeof TLS_ROUTINGS)[number]

export interface Toleration {
  key: string
  operator: 'Equal' | 'Exists'
  value?: string
  effect?: TaintEffect
}
const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const
type TaintEffect = (typeof TAINT_EFFECTS)[number]

export interface InstancePods {
  nodeSelector: Record<string, string> | undefined
  tolerations: Toleration[]
  /** Used when a definition names no security.runtimeClassName. */
  runtimeClassName: string | undefined
}

export interface GatewayRef {
  namespace: string
  name: string
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`)
    this.name = 'ConfigError'
  }
}

type Env = Record<string, string | undefined>

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/
/** Traefik entry point names as its static configuration writes them. */
const ENTRY_POINT = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/
/** Label key (optional DNS-subdomain prefix, then a name of at most 63 characters) and label value. */
const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/
/** Hosts are `<16 hex instance id>.<domain>`: the domain leaves room for the id within 253 characters. */
const MAX_HOST_DOMAIN = 253 - 17

function text(env: Env, name: string): string | undefined {
  const value = env[name]
  return value === undefined || value.trim() === '' ? undefined : value.trim()
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`)
  const value = Number(raw)
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`)
  return value
}

function matching(env: Env, name: string, pattern: RegExp, what: string): string | undefined {
  const value = text(env, name)
  if (value !== undefined && !pattern.test(value)) throw new ConfigError(name, `must be ${what}, got "${value}"`)
  return value
}

/** BODY_LIMIT accepts bytes or a size with a unit: 8388608, 512KiB, 8MiB, 8MB. */
function byteSize(env: Env, name: string, fallback: number): number {
  const raw = text(env, name)
  if (raw === undefined) return fallback
  const match = /^(\d+)\s*(B|KB|KiB|MB|MiB)?$/i.exec(raw)
  if (!match) throw new ConfigError(name, `must be a size such as 8388608 or 8MiB, got "${raw}"`)
  const units: Record<string, number> = { b: 1, kb: 1000, kib: 1024, mb: 1_000_000, mib: 1024 * 1024 }
  const bytes = Number(match[1]) * (units[(match[2] ?? 'b').toLowerCase()] as number)
  if (bytes < 1024 || bytes > 256 * 1024 * 1024) throw new ConfigError(name, 'must be between 1KiB and 256MiB')
  return bytes
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[]): T | undefined {
  const value = text(env, name)
  if (value !== undefined && !values.includes(value as T)) {
    throw new ConfigError(name, `must be one of ${values.join(', ')}, got "${value}"`)
  }
  return value as T | undefined
}

function hostDomain(env: Env, name: string): string | undefined {
  const value = matching(env, name, DNS_SUBDOMAIN, 'a DNS name such as ctf.example.org')
  if (value !== undefined && value.length > MAX_HOST_DOMAIN) {
    throw new ConfigError(name, `must be at most ${MAX_HOST_DOMAIN} characters, so <instance id>.${name} is a valid host`)
  }
  return value
}

/** GATEWAY=<namespace>/<name>. */
function gatewayRef(env: Env): GatewayRef | undefined {
  const raw = text(env, 'GATEWAY')
  if (raw === undefined) return undefined
  const [namespace = '', name = '', ...rest] = raw.split('/')
  if (rest.length > 0 || !DNS_LABEL.test(namespace) || !DNS_SUBDOMAIN.test(name)) {
    throw new ConfigError('GATEWAY', `must be <namespace>/<name> of the shared Gateway, such as gateway-system/ctf, got "${raw}"`)
  }
  return { namespace, name }
}

/** key=value[,key=value]: INGRESS_POD_SELECTOR (labels every proxy pod carries), DNS_POD_SELECTOR, INSTANCE_NODE_SELECTOR. */
function podSelector(env: Env, name: string): Record<string, string> | undefined {
  const raw = text(env, name)
  if (raw === undefined) return undefined
  const labels: Record<string, string> = {}
  for (const entry of raw.split(',')) {
    const [key = '', value, ...rest] = entry.trim().split('=')
    if (value === undefined || rest.length > 0 || !LABEL_KEY.test(key) || !LABEL_VALUE.test(value)) {
      throw new ConfigError(name, `"${entry.trim()}" is not a label such as app.kubernetes.io/name=traefik`)
    }
    labels[key] = value
  }
  return labels
}

/** INSTANCE_TOLERATIONS=key[=value][:Effect][,...]: taints as `kubectl taint` writes them; no effect tolerates all. */
function tolerations(env: Env, name: string): Toleration[] {
  const raw = text(env, name)
  if (raw === undefined) return []
  return raw.split(',').map((entry) => {
    const [taint = '', effect, ...rest] = entry.trim().split(':')
    const [key = '', value, ...more] = taint.split('=')
    const valid =
      rest.length === 0 &&
      more.length === 0 &&
      LABEL_KEY.test(key) &&
      (value === undefined || LABEL_VALUE.test(value)) &&
      (effect === undefined || (TAINT_EFFECTS as readonly string[]).includes(effect))
    if (!valid) throw new ConfigError(name, `"${entry.trim()}" is not a taint to tolerate such as pool=challenges:NoSchedule`)
    return {
      key,
      operator: value === undefined ? 'Exists' : 'Equal',
      ...(value === undefined ? {} : { value }),
      ...(effect === undefined ? {} : { effect: effect as TaintEffect }),
    }
  })
}

function cidrs(env: Env, name: string): string[] {
  const raw = text(env, name)
  if (raw === undefined) return []
  return raw.split(',').map((entry) => {
    const cidr = entry.trim()
    const [address = '', bits = '', ...rest] = cidr.split('/')
    const family = isIP(address)
    const max = family === 6 ? 128 : 32
    if (family === 0 || rest.length > 0 || !/^\d+$/.test(bits) || Number(bits) > max) {
      throw new ConfigError(name, `"${cidr}" is not a CIDR such as 10.0.0.0/8 or fd00::/8`)
    }
    return cidr
  })
}

/** ALLOWED_EXTENDED_RESOURCES=nvidia.com/gpu[,...]: extended resources definitions may request. */
function resourceNames(env: Env, name: string): string[] {
  const raw = text(env, name)
  if (raw === undefined) return []
  return raw.split(',').map((entry) => {
    const resource = entry.trim()
    // An extended resource is a domain-qualified name outside kubernetes.io (cpu and memory are always allowed).
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(resource) || resource.length > 253) {
      throw new ConfigError(name, `"${resource}" is not an extended resource name such as nvidia.com/gpu`)
    }
    return resource
  })
}

/** Estimated bits of a secret: its length times the Shannon entropy of its characters' frequencies. */
export function estimatedBits(value: string): number {
  const counts = new Map<string, number>()
  for (const character of value) counts.set(character, (counts.get(character) ?? 0) + 1)
  const length = [...value].length
  let perCharacter = 0
  for (const n of counts.values()) perCharacter -= (n / length) * Math.log2(n / length)
  return length * perCharacter
}

function secret(env: Env, name: string, production: boolean): string | undefined {
  const value = text(env, name)
  if (value === undefined || !production) return value
  if (PLACEHOLDER.test(value)) throw new ConfigError(name, 'still holds the placeholder of manifests/secrets/secrets.env.example')
  if (value === DEVELOPMENT_FLAG_SECRET) throw new ConfigError(name, 'is the public development value; generate one: openssl rand -hex 32')
  if (value.length < MIN_PRODUCTION_SECRET_LENGTH) {
    throw new ConfigError(name, `must be at least ${MIN_PRODUCTION_SECRET_LENGTH} characters in production`)
  }
  if (new Set(value).size < MIN_SECRET_SYMBOLS || estimatedBits(value) < MIN_SECRET_BITS) {
    throw new ConfigError(name, 'is too easy to guess (a word or a pattern repeated); generate one: openssl rand -hex 32')
  }
  return value
}

/** NODE_ENV says production in any case, with or without spaces around it: a spelling never turns the checks off. */
export function isProduction(env: Env): boolean {
  return env.NODE_ENV?.trim().toLowerCase() === 'production'
}

/** ALLOWED_RUNTIME_CLASSES=gvisor[,kata]: RuntimeClass names definitions may ask for. */
function runtimeClasses(env: Env, name: string): string[] {
  const raw = text(env, name)
  if (raw === undefined) return []
  return raw.split(',').map((entry) => {
    const runtimeClass = entry.trim()
    if (!DNS_LABEL.test(runtimeClass)) throw new ConfigError(name, `"${runtimeClass}" is not a RuntimeClass name such as gvisor`)
    return runtimeClass
  })
}

export function loadConfig(env: Env = process.env): Config {
  const production = isProduction(env)
  const logLevel = text(env, 'LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`)
  const flagSecret = secret(env, 'FLAG_SECRET', production)
  if (flagSecret === undefined && production) {
    throw new ConfigError('FLAG_SECRET', 'is required when NODE_ENV=production (generate one: openssl rand -hex 32)')
  }
  const hookToken = secret(env, 'HOOK_TOKEN', production)
  // A blank token would turn authentication off: in production that stops the start, as a missing one does.
  if (hookToken === undefined && production) {
    throw new ConfigError('HOOK_TOKEN', 'is required (non-blank) when NODE_ENV=production (generate one: openssl rand -hex 32)')
  }
  const hookTokenPrevious = secret(env, 'HOOK_TOKEN_PREVIOUS', production)
  if (hookTokenPrevious === undefined && production && env.HOOK_TOKEN_PREVIOUS !== undefined) {
    throw new ConfigError('HOOK_TOKEN_PREVIOUS', 'is set but blank; unset it, or set it to the previous token during a rotation')
  }
  if (hookTokenPrevious !== undefined && hookToken === undefined) {
    throw new ConfigError('HOOK_TOKEN_PREVIOUS', 'is only accepted beside HOOK_TOKEN (during a rotation)')
  }
  const certFile = text(env, 'TLS_CERT_FILE')
  const keyFile = text(env, 'TLS_KEY_FILE')
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new ConfigError(certFile === undefined ? 'TLS_CERT_FILE' : 'TLS_KEY_FILE', 'is required beside the other of TLS_CERT_FILE and TLS_KEY_FILE')
  }
  const baseDomain = hostDomain(env, 'BASE_DOMAIN') ?? 'challenges.localhost'
  const httpRouting = oneOf(env, 'HTTP_ROUTING', HTTP_ROUTINGS) ?? 'Ingress'
  const tlsRoutingSet = oneOf(env, 'TLS_ROUTING', TLS_ROUTINGS)
  const gateway = gatewayRef(env)
  // An explicit GatewayAPI routing cannot work without its Gateway. TLS_ROUTING's default (GatewayAPI) alone does
  // not require one, so a server for HTTP and netcat challenges starts without it; TLS challenges are then refused.
  for (const [variable, routing] of [['HTTP_ROUTING', httpRouting], ['TLS_ROUTING', tlsRoutingSet]] as const) {
    if (routing === 'GatewayAPI' && gateway === undefined) {
      throw new ConfigError('GATEWAY', `is required when ${variable}=GatewayAPI: <namespace>/<name> of the shared Gateway`)
    }
  }
  const port = integer(env, 'PORT', 8080, 0, 65535)
  const opsPort = integer(env, 'OPS_PORT', 8081, 0, 65535)
  if (opsPort === port && port !== 0) throw new ConfigError('OPS_PORT', `must differ from PORT, got ${opsPort} for both`)
  const instanceRuntimeClass = matching(env, 'INSTANCE_RUNTIME_CLASS', DNS_LABEL, 'a RuntimeClass name')
  const requestTimeoutMs = integer(env, 'REQUEST_TIMEOUT_MS', 5000, 1000, 60000)
  const shutdownDrainMs = integer(env, 'SHUTDOWN_DRAIN_MS', 5000, 0, 60000)
  // By default a call in flight when the port closes gets REQUEST_TIMEOUT_MS more: a body not in by then never
  // would have been (Node stops enforcing REQUEST_TIMEOUT_MS once the server closes), and a call whose body is
  // in is answered in milliseconds.
  const shutdownTimeoutMs = integer(env, 'SHUTDOWN_TIMEOUT_MS', shutdownDrainMs + requestTimeoutMs, 0, 120000)
  if (shutdownTimeoutMs < shutdownDrainMs) {
    throw new ConfigError('SHUTDOWN_TIMEOUT_MS', `must be at least SHUTDOWN_DRAIN_MS (${shutdownDrainMs}), got ${shutdownTimeoutMs}`)
  }
  return {
    port,
    opsPort,
    host: text(env, 'HOST') ?? '0.0.0.0',
    logLevel,
    production,
    flagSecret: flagSecret ?? DEVELOPMENT_FLAG_SECRET,
    flagSecretIsDevelopmentDefault: flagSecret === undefined,
    hookToken,
    hookTokenPrevious,
    hookTls: certFile === undefined || keyFile === undefined ? undefined : { certFile, keyFile },
    baseDomain,
    ingressClassName: matching(env, 'INGRESS_CLASS_NAME', DNS_SUBDOMAIN, 'an IngressClass name'),
    ingressTlsSecret: matching(env, 'INGRESS_TLS_SECRET', DNS_SUBDOMAIN, 'a Secret name'),
    ingressNamespace: matching(env, 'INGRESS_NAMESPACE', DNS_LABEL, 'a namespace name') ?? 'ingress-nginx',
    ingressPodSelector: podSelector(env, 'INGRESS_POD_SELECTOR'),
    httpRouting,
    tlsRouting: tlsRoutingSet ?? 'GatewayAPI',
    gateway,
    // A listener's name (the routes' sectionName) is a DNS subdomain.
    gatewayHttpListener: matching(env, 'GATEWAY_HTTP_LISTENER', DNS_SUBDOMAIN, 'a listener name (sectionName)'),
    gatewayTlsListener: matching(env, 'GATEWAY_TLS_LISTENER', DNS_SUBDOMAIN, 'a listener name (sectionName)'),
    traefikHttpEntryPoint: matching(env, 'TRAEFIK_HTTP_ENTRYPOINT', ENTRY_POINT, 'an entry point name') ?? 'websecure',
    traefikTlsEntryPoint: matching(env, 'TRAEFIK_TLS_ENTRYPOINT', ENTRY_POINT, 'an entry point name') ?? 'tcpsecure',
    tlsBaseDomain: hostDomain(env, 'TLS_BASE_DOMAIN') ?? baseDomain,
    tlsPort: integer(env, 'TLS_PORT', 443, 1, 65535),
    publicHost: matching(env, 'PUBLIC_HOST', /^[A-Za-z0-9.:-]{1,253}$/, 'a host name or IP address') ?? '127.0.0.1',
    ownerBudget: integer(env, 'OWNER_BUDGET', 3, 0, 10000),
    bodyLimit: byteSize(env, 'BODY_LIMIT', 8 * 1024 * 1024),
    clusterCidrs: cidrs(env, 'CLUSTER_CIDRS'),
    allowedExtendedResources: resourceNames(env, 'ALLOWED_EXTENDED_RESOURCES'),
    allowedRuntimeClasses: [...new Set([...runtimeClasses(env, 'ALLOWED_RUNTIME_CLASSES'), ...(instanceRuntimeClass === undefined ? [] : [instanceRuntimeClass])])],
    instancePods: {
      nodeSelector: podSelector(env, 'INSTANCE_NODE_SELECTOR'),
      tolerations: tolerations(env, 'INSTANCE_TOLERATIONS'),
      runtimeClassName: instanceRuntimeClass,
    },
    dns: {
      namespace: matching(env, 'DNS_NAMESPACE', DNS_LABEL, 'a namespace name') ?? 'kube-system',
      podSelector: podSelector(env, 'DNS_POD_SELECTOR') ?? { 'k8s-app': 'kube-dns' },
      addresses: cidrs(env, 'DNS_ADDRESSES'),
      port: integer(env, 'DNS_PORT', 53, 1, 65535),
    },
    maxResyncSeconds: integer(env, 'MAX_RESYNC_SECONDS', 300, 1, 3600),
    endpointSettleMs: integer(env, 'ENDPOINT_SETTLE_MS', 2500, 0, 60000),
    maxInFlight: integer(env, 'MAX_IN_FLIGHT', 64, 1, 100000),
    maxEventLoopDelayMs: integer(env, 'MAX_EVENT_LOOP_DELAY_MS', 100, 0, 10000),
    requestTimeoutMs,
    shutdownDrainMs,
    shutdownTimeoutMs,
  }
}
