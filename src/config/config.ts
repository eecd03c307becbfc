/**
 * Configuration from the environment, read and validated once at start. A bad value stops the start with a
 * message naming the variable (ConfigError); nothing is re-read later.
 *
 * VARIABLES is the one description of every variable: its group, its parser (./config-parsers.ts: what it
 * accepts, its default) and what it means. loadConfig reads them in the table's order, then checks the rules that
 * tie variables together (RULES), then shapes the Config (./config-types.ts). docs/configuration.md and the
 * comments of manifests/config.env are generated from this table (`npm run write:config-docs`); a test fails when they
 * drift.
 */
import {
  addressAndPort,
  anyText,
  boolean,
  byteSize,
  cidrs,
  ConfigError,
  costUnit,
  dnsLabel,
  dnsSubdomain,
  entryPoint,
  extendedResources,
  gatewayRef,
  hostDomain,
  integer,
  isProduction,
  labels,
  matching,
  oneOf,
  orElse,
  orText,
  production,
  runtimeClasses,
  secret,
  tolerations,
  DEVELOPMENT_FLAG_SECRET,
  type Env,
  type GatewayRef,
  type Parser,
  type Toleration,
} from './config-parsers.js'
import { HOST, IMAGE_REFERENCE } from '../contract/patterns.js'
import { HTTP_ROUTINGS, OWNER_BUDGET_SCOPES, PREPULL_MODES, TLS_ROUTINGS, type Config } from './config-types.js'

export { ConfigError, DEVELOPMENT_FLAG_SECRET, isProduction, type GatewayRef, type Toleration }
export type { Config, HttpRouting, InstancePods, IsolationGate, TlsRouting } from './config-types.js'
export { estimatedBits } from './config-parsers.js'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
const ANY_PORT = ' (0: any free port)'

/** The groups of VARIABLES, in the order the docs show them, with their titles. */
export const GROUPS = {
  server: 'The server',
  secrets: 'Secrets and the hook port',
  hosts: 'Hosts and routing',
  network: "The instances' network",
  pods: 'Challenge pods and what definitions may ask for',
  lifecycle: 'Owners and syncs',
  load: 'Load and shutdown',
} as const

export interface Variable<T> {
  group: keyof typeof GROUPS
  parser: Parser<T>
  /** What it means, in one sentence (Markdown). */
  meaning: string
  /** The default as the docs show it, when another variable or the Config's shaping gives it (not the parser). */
  default?: string
}

/** Every variable, in the order loadConfig reads them: a bad value of an earlier one is the one reported. */
export const VARIABLES = {
  NODE_ENV: {
    group: 'server',
    parser: production(),
    meaning:
      '`production` makes `FLAG_SECRET` and `HOOK_TOKEN` required and refuses secrets that are placeholders (`CHANGE-ME`), the public development value, shorter than 32 characters or easy to guess',
    default: 'unset: not production',
  },
  PORT: {
    group: 'server',
    parser: orElse(integer(0, 65535, ANY_PORT), 8080),
    meaning: 'listen port of the hook calls',
  },
  OPS_PORT: {
    group: 'server',
    parser: orElse(integer(0, 65535, ANY_PORT), 8081),
    meaning:
      'listen port of `/healthz`, `/readyz` and `/metrics`: a listener of their own, which hook calls cannot queue them behind; must differ from `PORT`',
  },
  HOST: {
    group: 'server',
    parser: orElse(anyText('an address of this host, IPv4 or IPv6'), '0.0.0.0'),
    meaning: 'listen address of both ports',
  },
  LOG_LEVEL: {
    group: 'server',
    parser: orElse(oneOf(LOG_LEVELS), 'info'),
    meaning: "pino's level: what the server logs (JSON lines on stdout)",
  },
  BODY_LIMIT: {
    group: 'server',
    parser: orElse(byteSize(), 8 * 1024 * 1024, '`8MiB`'),
    meaning: 'largest request body; a larger one gets 413',
  },

  FLAG_SECRET: {
    group: 'secrets',
    parser: secret({ required: 'is required when NODE_ENV=production (generate one: openssl rand -hex 32)' }),
    meaning: 'HMAC key of the flags and the instance ids; keep it for the whole event (a new one changes every flag)',
    default: 'a development value, with a warning in the log; **required** when `NODE_ENV=production`',
  },
  HOOK_TOKEN: {
    group: 'secrets',
    parser: secret({
      required: 'is required (non-blank) when NODE_ENV=production (generate one: openssl rand -hex 32)',
    }),
    meaning:
      'every hook call needs `Authorization: Bearer <token>`, else 401; in production a missing, empty or blank token stops the start, as a blank token would turn authentication off',
    default: 'unset: no authentication, with a warning in the log; **required** (non-blank) when `NODE_ENV=production`',
  },
  HOOK_TOKEN_PREVIOUS: {
    group: 'secrets',
    parser: secret({ blank: 'is set but blank; unset it, or set it to the previous token during a rotation' }),
    meaning:
      'during a token rotation, the old token, accepted beside `HOOK_TOKEN` until Metacontroller sends the new one; only with `HOOK_TOKEN`, and in production set but blank stops the start',
  },
  FLAG_VERIFY_TOKEN: {
    group: 'secrets',
    parser: secret({
      blank: 'is set but blank; unset it to turn POST /flags/verify off, or generate one: openssl rand -hex 32',
    }),
    meaning:
      'turns on `POST /flags/verify` on the hook port, the flag check the gateway calls (it holds no `FLAG_SECRET`), for callers with `Authorization: Bearer <token>`; unset: the route does not exist',
    default: 'unset: no flag checks',
  },
  TLS_CERT_FILE: {
    group: 'secrets',
    parser: anyText('a path to a PEM file'),
    meaning:
      "the hook port's certificate (chain): with `TLS_KEY_FILE`, hook calls are HTTPS only; both or neither, and an unreadable or mismatched pair stops the start. Probes and metrics stay HTTP on `OPS_PORT`",
  },
  TLS_KEY_FILE: {
    group: 'secrets',
    parser: anyText('a path to a PEM file'),
    meaning: "the private key of `TLS_CERT_FILE`'s certificate",
  },

  BASE_DOMAIN: {
    group: 'hosts',
    parser: orElse(hostDomain(), 'challenges.localhost'),
    meaning: 'HTTP hosts are `<instanceId>.<BASE_DOMAIN>`: point a wildcard DNS record `*.<BASE_DOMAIN>` at the proxy',
  },
  TLS_BASE_DOMAIN: {
    group: 'hosts',
    parser: hostDomain(),
    meaning: 'TLS hosts are `<instanceId>.<TLS_BASE_DOMAIN>`, reached on `TLS_PORT` (`ncat --ssl <host> <port>`)',
    default: '`BASE_DOMAIN`',
  },
  TLS_PORT: {
    group: 'hosts',
    parser: orElse(integer(1, 65535), 443),
    meaning: "the port players connect to for TLS instances (the endpoint's port)",
  },
  PUBLIC_HOST: {
    group: 'hosts',
    parser: orElse(matching(HOST, 'a host name or IP address', 'a host name or an IP address'), '127.0.0.1'),
    meaning:
      "the host players use for NodePort endpoints (a node's public name or address). Unset (or a loopback address such as the `127.0.0.1` of `manifests/config.env`), NodePort endpoints name a host no player's machine reaches, and the server warns at start",
  },
  HTTP_ROUTING: {
    group: 'hosts',
    parser: orElse(oneOf(HTTP_ROUTINGS), 'Ingress'),
    meaning:
      'which object routes an HTTP instance: an Ingress, an HTTPRoute on the shared Gateway, or a Traefik IngressRoute',
  },
  TLS_ROUTING: {
    group: 'hosts',
    parser: oneOf(TLS_ROUTINGS),
    meaning:
      'which object routes a TLS instance by SNI: a TLSRoute on the shared Gateway, or a Traefik IngressRouteTCP',
    default: '`GatewayAPI`, which unlike a `GatewayAPI` that is set does not require `GATEWAY`',
  },
  GATEWAY: {
    group: 'hosts',
    parser: gatewayRef(),
    meaning:
      "the shared Gateway; required when `HTTP_ROUTING` or `TLS_ROUTING` is set to `GatewayAPI` (`TLS_ROUTING`'s default alone does not require it, so a server for HTTP and NodePort challenges starts without one: TLS challenges are then Error / `ConfigError`)",
  },
  GATEWAY_HTTP_LISTENER: {
    group: 'hosts',
    parser: dnsSubdomain('a listener name (sectionName)'),
    meaning: "the Gateway's listener of the HTTP routes (their `sectionName`); unset: any listener of the Gateway",
  },
  GATEWAY_TLS_LISTENER: {
    group: 'hosts',
    parser: dnsSubdomain('a listener name (sectionName)'),
    meaning: "the Gateway's listener of the TLS routes (their `sectionName`); unset: any listener of the Gateway",
  },
  TRAEFIK_HTTP_ENTRYPOINT: {
    group: 'hosts',
    parser: orElse(entryPoint(), 'websecure'),
    meaning: 'the Traefik entry point of the HTTP routes',
  },
  TRAEFIK_TLS_ENTRYPOINT: {
    group: 'hosts',
    parser: orElse(entryPoint(), 'tcpsecure'),
    meaning: 'the Traefik entry point of the TLS routes',
  },
  INGRESS_CLASS_NAME: {
    group: 'hosts',
    parser: dnsSubdomain('an IngressClass name'),
    meaning: "the IngressClass of the HTTP instances' Ingresses; unset: the cluster's default class",
  },
  INGRESS_TLS_SECRET: {
    group: 'hosts',
    parser: dnsSubdomain('a Secret name'),
    meaning:
      "a wildcard TLS Secret for `*.<BASE_DOMAIN>`, in the challenges' namespace; when set, HTTP endpoints are `https://`",
  },

  INGRESS_NAMESPACE: {
    group: 'network',
    parser: orElse(dnsLabel('a namespace name'), 'ingress-nginx'),
    meaning:
      "the namespace of the proxy's pods (ingress controller, Gateway data plane or Traefik): the only source the instances' policies let reach HTTP and TLS instances",
  },
  INGRESS_POD_SELECTOR: {
    group: 'network',
    parser: labels(),
    meaning: 'only the proxy pods with these labels, when their namespace runs other pods too',
  },
  CLUSTER_CIDRS: {
    group: 'network',
    parser: cidrs(),
    meaning:
      "extra ranges the `-internet` egress policy excludes: the nodes' addresses and a public API server address (and the pod and service ranges, when they are public). Unset, the server warns at start, and the author preview warns for an `Internet` definition",
  },
  ISOLATION_GATE_IMAGE: {
    group: 'network',
    parser: orElse(
      matching(
        IMAGE_REFERENCE,
        'an image reference without spaces',
        'an image reference without spaces, at most 512 characters',
      ),
      'ghcr.io/challenge-hooks/challenge-hooks:0.1.0',
    ),
    meaning:
      "the image of the isolation gate, the init container that lets an instance's containers start only once its egress policy is in force (docs/api.md, the isolation gate): the hook server's own image, whose `dist/isolation-gate.js` is the gate. Set it beside the hook server's image when you mirror or retag that one; every node of the challenge pool must be able to pull it",
  },
  ISOLATION_GATE_TARGET: {
    group: 'network',
    parser: addressAndPort(),
    meaning:
      "what the isolation gate tries to reach: an address every egress mode forbids and that accepts connections where nothing blocks them. Unset: the API server's in-cluster address (`KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT`), which every pod is given",
  },
  ISOLATION_GATE_TIMEOUT_SECONDS: {
    group: 'network',
    parser: orElse(integer(5, 600), 60),
    meaning:
      'how long the isolation gate waits for the egress policy to be in force before it gives up: the instance then ends in Error / `IsolationNotEnforced` (no NetworkPolicy engine on the node, or a target that egress `Internet` reaches)',
  },
  POLICY_ENFORCES_IPV6: {
    group: 'network',
    parser: orElse(boolean(), false),
    meaning:
      "`true` says the cluster's NetworkPolicy engine enforces the policies over IPv6 too. Otherwise the isolation gate refuses to start an instance whose pod has an IPv6 address other than loopback (Error / `IsolationNotEnforced`): engines that enforce IPv4 only let IPv6 through, link-local addresses included (docs/install.md)",
  },
  DNS_NAMESPACE: {
    group: 'network',
    parser: orElse(dnsLabel('a namespace name'), 'kube-system'),
    meaning:
      'the namespace of the cluster DNS pods instances may query (`openshift-dns` on OpenShift); a pod carrying the DNS labels in any other namespace is not reachable',
  },
  DNS_POD_SELECTOR: {
    group: 'network',
    parser: orText(labels(), 'k8s-app=kube-dns'),
    meaning: 'the labels of the DNS pods (`dns.operator.openshift.io/daemonset-dns=default` on OpenShift)',
  },
  DNS_PORT: {
    group: 'network',
    parser: orElse(integer(1, 65535), 53),
    meaning:
      "the port DNS answers on, UDP and TCP (`5353` on OpenShift, whose DNS pods listen there behind the Service's 53)",
  },
  DNS_ADDRESSES: {
    group: 'network',
    parser: cidrs(),
    meaning:
      'extra CIDRs instances may query on `DNS_PORT`: a node-local cache (NodeLocal DNSCache: `169.254.20.10/32`), whose address no pod selector matches',
  },

  INSTANCE_NODE_SELECTOR: {
    group: 'pods',
    parser: labels(),
    meaning: 'the node selector of every challenge pod: a node pool of their own',
  },
  INSTANCE_TOLERATIONS: {
    group: 'pods',
    parser: tolerations(),
    meaning:
      'the taints every challenge pod tolerates (`challenge-hooks.dev/pool=challenges:NoSchedule`); a taint without an effect is tolerated with every effect',
  },
  INSTANCE_RUNTIME_CLASS: {
    group: 'pods',
    parser: dnsLabel('a RuntimeClass name'),
    meaning:
      'the RuntimeClass (gVisor, Kata) of every challenge pod whose definition names none; definitions may also name it',
  },
  ALLOWED_RUNTIME_CLASSES: {
    group: 'pods',
    parser: runtimeClasses(),
    meaning:
      "the RuntimeClasses a definition may name in `security.runtimeClassName`, besides `INSTANCE_RUNTIME_CLASS`; any other is refused (`DefinitionInvalid`): an author who could name any would undo the operator's sandbox",
  },
  ALLOWED_EXTENDED_RESOURCES: {
    group: 'pods',
    parser: extendedResources(),
    meaning:
      'the extended resources (`nvidia.com/gpu`) definitions may request; any other is refused (`DefinitionInvalid`), since the defaults cap only cpu, memory and ephemeral storage',
  },

  OWNER_BUDGET: {
    group: 'lifecycle',
    parser: orElse(integer(0, 10000), 3),
    meaning: "the cost units of admitted instances one owner may hold at a time (a definition's `cost`, 1 by default)",
  },
  COST_UNIT: {
    group: 'lifecycle',
    parser: costUnit(),
    meaning:
      "what one unit of a definition's `cost` may hold: the limits of all its containers together, per resource, may be at most `cost` units (a free instance, cost 0, one unit), so an owner holds at most `OWNER_BUDGET` units; a definition that asks for more is refused (`DefinitionInvalid`). Size it with the namespace's quota: players × `OWNER_BUDGET` × the unit",
  },
  OWNER_BUDGET_SCOPE: {
    group: 'lifecycle',
    parser: orElse(oneOf(OWNER_BUDGET_SCOPES), 'Namespace'),
    meaning:
      "where an owner's budget is counted: in each namespace apart (`Namespace`), across every namespace of the cluster (`Cluster`, which needs the CompositeController's hooks at `version: v2`, the `budget-across-namespaces` component; otherwise the instances are Error / `ConfigError`), or nowhere (`None`: every instance admitted at once, the namespace's ResourceQuota the only ceiling, and no Challenge relates its owner's Challenges)",
  },
  MAX_RESYNC_SECONDS: {
    group: 'lifecycle',
    parser: orElse(integer(1, 3600), 300),
    meaning:
      'the longest `resyncAfterSeconds` the hook asks Metacontroller for: the longest wait before an instance with a deadline is synced again',
  },
  POOL_MAX_PODS: {
    group: 'lifecycle',
    parser: orElse(integer(1, 1000), 100),
    meaning:
      "the most pods one definition's warm pool may hold at once, free and claimed (its `pool.maxPods` when it sets none; a definition asking for more is refused, `DefinitionInvalid`); the namespace's ResourceQuota counts them too",
  },
  POOL_CLAIM_TIMEOUT_SECONDS: {
    group: 'lifecycle',
    parser: orElse(integer(1, 300), 5),
    meaning:
      "how long an admitted Challenge waits for its definition's warm pool to hand it a pod before it starts cold (it waits only while the pool's status is `Ready`)",
  },
  PREPULL_DEFAULT: {
    group: 'lifecycle',
    parser: orElse(oneOf(PREPULL_MODES), 'Off'),
    meaning:
      'the `prepull` of a definition that sets none: `Off`, `Pull` (its images are pulled onto every node of the player pool ahead of time) or `Hold` (and no instance is admitted before they are there); docs/api.md, pre-pulled images',
  },
  PREPULL_PAUSE_IMAGE: {
    group: 'lifecycle',
    parser: orElse(
      matching(
        IMAGE_REFERENCE,
        'an image reference without spaces',
        'an image reference without spaces, at most 512 characters',
      ),
      'registry.k8s.io/pause:3.10.1',
    ),
    meaning:
      "the image of the containers of a pre-pull DaemonSet (`<definition>.images`), which do nothing while the definition's images are mounted into them as image volumes: the pause image every node already has for its pod sandboxes. Set it to your mirror's when the nodes pull from one",
  },
  ENDPOINT_SETTLE_MS: {
    group: 'lifecycle',
    parser: orElse(integer(0, 60000), 2500),
    meaning:
      'how long after its pod became ready and its Service and route came into place an instance becomes Running: kube-proxy and the proxies program a new path only after that (on a real node a connection worked 70-1250 ms after the pod was ready); `0` makes it Running at once',
  },

  MAX_IN_FLIGHT: {
    group: 'load',
    parser: orElse(integer(1, 100000), 64),
    meaning:
      'hook calls whose body has arrived and whose answer is not finished, per process, before calls are answered 429 with Retry-After (an upload still arriving holds no slot)',
  },
  MAX_EVENT_LOOP_DELAY_MS: {
    group: 'load',
    parser: orElse(integer(0, 10000), 100),
    meaning:
      'hook calls are answered 429 with Retry-After while the event loop runs later than this (measured across turns by `@fastify/under-pressure`, and within the current turn); `0` turns it off',
  },
  REQUEST_TIMEOUT_MS: {
    group: 'load',
    parser: orElse(integer(1000, 60000), 5000),
    meaning: "a request's headers and body must arrive within this, else 408 and the connection is closed",
  },
  SHUTDOWN_DRAIN_MS: {
    group: 'load',
    parser: orElse(integer(0, 60000), 5000),
    meaning:
      'on SIGTERM, how long readiness fails and calls are still answered (with `Connection: close`) before the hook port closes',
  },
  SHUTDOWN_TIMEOUT_MS: {
    group: 'load',
    parser: integer(0, 120000),
    meaning:
      "on SIGTERM, when the calls still in flight are cut and the process exits 0, counted from the signal; keep it well under the Deployment's `terminationGracePeriodSeconds` (30 s)",
    // A call in flight when the port closes gets REQUEST_TIMEOUT_MS more: a body not in by then never would have
    // been (Node stops enforcing REQUEST_TIMEOUT_MS once the server closes), and a call whose body is in is answered
    // in milliseconds.
    default: '`SHUTDOWN_DRAIN_MS` + `REQUEST_TIMEOUT_MS`',
  },
} as const satisfies Record<string, Variable<unknown>>

/** Each variable's value as its parser read it. */
export type Values = {
  -readonly [Name in keyof typeof VARIABLES]: ReturnType<(typeof VARIABLES)[Name]['parser']['read']>
}

/** The rules that tie variables together, checked in this order once every variable has been read. */
export const RULES: readonly { says: string; check(values: Values): void }[] = [
  {
    says: '`HOOK_TOKEN_PREVIOUS` only beside `HOOK_TOKEN`',
    check(values) {
      if (values.HOOK_TOKEN_PREVIOUS !== undefined && values.HOOK_TOKEN === undefined) {
        throw new ConfigError('HOOK_TOKEN_PREVIOUS', 'is only accepted beside HOOK_TOKEN (during a rotation)')
      }
    },
  },
  {
    says: '`TLS_CERT_FILE` and `TLS_KEY_FILE` both or neither',
    check(values) {
      if ((values.TLS_CERT_FILE === undefined) !== (values.TLS_KEY_FILE === undefined)) {
        const missing = values.TLS_CERT_FILE === undefined ? 'TLS_CERT_FILE' : 'TLS_KEY_FILE'
        throw new ConfigError(missing, 'is required beside the other of TLS_CERT_FILE and TLS_KEY_FILE')
      }
    },
  },
  {
    says: '`GATEWAY` when `HTTP_ROUTING` or `TLS_ROUTING` is set to `GatewayAPI`',
    check(values) {
      for (const [variable, routing] of [
        ['HTTP_ROUTING', values.HTTP_ROUTING],
        ['TLS_ROUTING', values.TLS_ROUTING],
      ] as const) {
        if (routing === 'GatewayAPI' && values.GATEWAY === undefined) {
          throw new ConfigError(
            'GATEWAY',
            `is required when ${variable}=GatewayAPI: <namespace>/<name> of the shared Gateway`,
          )
        }
      }
    },
  },
  {
    says: '`OPS_PORT` differs from `PORT` (unless both are 0)',
    check({ PORT, OPS_PORT }) {
      if (OPS_PORT === PORT && PORT !== 0)
        throw new ConfigError('OPS_PORT', `must differ from PORT, got ${OPS_PORT} for both`)
    },
  },
  {
    says: '`SHUTDOWN_TIMEOUT_MS` at least `SHUTDOWN_DRAIN_MS`',
    check({ SHUTDOWN_TIMEOUT_MS, SHUTDOWN_DRAIN_MS }) {
      if (SHUTDOWN_TIMEOUT_MS !== undefined && SHUTDOWN_TIMEOUT_MS < SHUTDOWN_DRAIN_MS) {
        throw new ConfigError(
          'SHUTDOWN_TIMEOUT_MS',
          `must be at least SHUTDOWN_DRAIN_MS (${SHUTDOWN_DRAIN_MS}), got ${SHUTDOWN_TIMEOUT_MS}`,
        )
      }
    },
  },
]

/** Every variable read by its parser, in the table's order. */
function readVariables(env: Env): Values {
  const context = { production: isProduction(env) }
  const values: Record<string, unknown> = {}
  for (const [name, variable] of Object.entries(VARIABLES) as [string, Variable<unknown>][]) {
    values[name] = variable.parser.read(env, name, context)
  }
  return values as Values
}

export function loadConfig(env: Env = process.env): Config {
  const v = readVariables(env)
  for (const rule of RULES) rule.check(v)
  return {
    port: v.PORT,
    opsPort: v.OPS_PORT,
    host: v.HOST,
    logLevel: v.LOG_LEVEL,
    production: v.NODE_ENV,
    flagSecret: v.FLAG_SECRET ?? DEVELOPMENT_FLAG_SECRET,
    flagSecretIsDevelopmentDefault: v.FLAG_SECRET === undefined,
    hookToken: v.HOOK_TOKEN,
    hookTokenPrevious: v.HOOK_TOKEN_PREVIOUS,
    flagVerifyToken: v.FLAG_VERIFY_TOKEN,
    hookTls:
      v.TLS_CERT_FILE === undefined || v.TLS_KEY_FILE === undefined
        ? undefined
        : { certFile: v.TLS_CERT_FILE, keyFile: v.TLS_KEY_FILE },
    baseDomain: v.BASE_DOMAIN,
    ingressClassName: v.INGRESS_CLASS_NAME,
    ingressTlsSecret: v.INGRESS_TLS_SECRET,
    ingressNamespace: v.INGRESS_NAMESPACE,
    ingressPodSelector: v.INGRESS_POD_SELECTOR,
    httpRouting: v.HTTP_ROUTING,
    tlsRouting: v.TLS_ROUTING ?? 'GatewayAPI',
    gateway: v.GATEWAY,
    gatewayHttpListener: v.GATEWAY_HTTP_LISTENER,
    gatewayTlsListener: v.GATEWAY_TLS_LISTENER,
    traefikHttpEntryPoint: v.TRAEFIK_HTTP_ENTRYPOINT,
    traefikTlsEntryPoint: v.TRAEFIK_TLS_ENTRYPOINT,
    tlsBaseDomain: v.TLS_BASE_DOMAIN ?? v.BASE_DOMAIN,
    tlsPort: v.TLS_PORT,
    publicHost: v.PUBLIC_HOST,
    ownerBudget: v.OWNER_BUDGET,
    costUnit: v.COST_UNIT,
    ownerBudgetScope: v.OWNER_BUDGET_SCOPE,
    bodyLimit: v.BODY_LIMIT,
    clusterCidrs: v.CLUSTER_CIDRS,
    allowedExtendedResources: v.ALLOWED_EXTENDED_RESOURCES,
    // INSTANCE_RUNTIME_CLASS is always allowed: definitions that name none get it.
    allowedRuntimeClasses: [
      ...new Set([
        ...v.ALLOWED_RUNTIME_CLASSES,
        ...(v.INSTANCE_RUNTIME_CLASS === undefined ? [] : [v.INSTANCE_RUNTIME_CLASS]),
      ]),
    ],
    instancePods: {
      nodeSelector: v.INSTANCE_NODE_SELECTOR,
      tolerations: v.INSTANCE_TOLERATIONS,
      runtimeClassName: v.INSTANCE_RUNTIME_CLASS,
    },
    isolationGate: {
      image: v.ISOLATION_GATE_IMAGE,
      target: v.ISOLATION_GATE_TARGET,
      timeoutSeconds: v.ISOLATION_GATE_TIMEOUT_SECONDS,
      ipv6Enforced: v.POLICY_ENFORCES_IPV6,
    },
    dns: { namespace: v.DNS_NAMESPACE, podSelector: v.DNS_POD_SELECTOR, addresses: v.DNS_ADDRESSES, port: v.DNS_PORT },
    maxResyncSeconds: v.MAX_RESYNC_SECONDS,
    poolMaxPods: v.POOL_MAX_PODS,
    poolClaimTimeoutSeconds: v.POOL_CLAIM_TIMEOUT_SECONDS,
    prepull: { defaultMode: v.PREPULL_DEFAULT, pauseImage: v.PREPULL_PAUSE_IMAGE },
    endpointSettleMs: v.ENDPOINT_SETTLE_MS,
    maxInFlight: v.MAX_IN_FLIGHT,
    maxEventLoopDelayMs: v.MAX_EVENT_LOOP_DELAY_MS,
    requestTimeoutMs: v.REQUEST_TIMEOUT_MS,
    shutdownDrainMs: v.SHUTDOWN_DRAIN_MS,
    shutdownTimeoutMs: v.SHUTDOWN_TIMEOUT_MS ?? v.SHUTDOWN_DRAIN_MS + v.REQUEST_TIMEOUT_MS,
  }
}
