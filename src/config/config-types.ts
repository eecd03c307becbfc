/**
 * The configuration the server reads: what loadConfig (./config.ts) shapes from the environment variables of its
 * table, once, at start.
 */
import type { PrepullMode } from '../contract/api.js'
import type { CostUnit, GatewayRef, Toleration } from './config-parsers.js'

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
  /** Bearer token of POST /flags/verify, the gateway's flag check; undefined: the route is not registered. */
  flagVerifyToken: string | undefined
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
  /** What one unit of a definition's cost may hold: the limits of all its containers together, per resource. */
  costUnit: CostUnit
  /** Where an owner's budget is counted: each namespace apart, the whole cluster (hooks v2), or nowhere. */
  ownerBudgetScope: OwnerBudgetScope
  bodyLimit: number
  /** Extra CIDRs the `-internet` policy excludes (the cluster's pod and service ranges when they are public). */
  clusterCidrs: string[]
  /** The init container every instance's pod starts with: it holds the pod back until its egress is blocked. */
  isolationGate: IsolationGate
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
  /** The most pods one definition's warm pool holds at once (POOL_MAX_PODS): the default and ceiling of pool.maxPods. */
  poolMaxPods: number
  /** How long an admitted Challenge waits for a pooled pod before it starts cold (POOL_CLAIM_TIMEOUT_SECONDS). */
  poolClaimTimeoutSeconds: number
  /** Pre-pulled images (docs/api.md#pre-pulled-images): a definition's mode when it sets none, and the pause image. */
  prepull: { defaultMode: PrepullMode; pauseImage: string }
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

export const HTTP_ROUTINGS = ['Ingress', 'GatewayAPI', 'Traefik'] as const
export type HttpRouting = (typeof HTTP_ROUTINGS)[number]
export const TLS_ROUTINGS = ['GatewayAPI', 'Traefik'] as const
export type TlsRouting = (typeof TLS_ROUTINGS)[number]

export interface IsolationGate {
  image: string
  /** `address:port` the gate tries; undefined: the API server's in-cluster address, from the pod's environment. */
  target: string | undefined
  timeoutSeconds: number
  /** The NetworkPolicy engine enforces IPv6 too: pods with IPv6 addresses may start. */
  ipv6Enforced: boolean
}

export interface InstancePods {
  nodeSelector: Record<string, string> | undefined
  tolerations: Toleration[]
  /** Used when a definition names no security.runtimeClassName. */
  runtimeClassName: string | undefined
}

export const OWNER_BUDGET_SCOPES = ['Namespace', 'Cluster', 'None'] as const
export type OwnerBudgetScope = (typeof OWNER_BUDGET_SCOPES)[number]

/** The values of PREPULL_DEFAULT: a definition's `prepull` modes. */
export const PREPULL_MODES = ['Off', 'Pull', 'Hold'] as const satisfies readonly PrepullMode[]
