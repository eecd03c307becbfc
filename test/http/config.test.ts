import t, { type Test } from 'tap'
import { ConfigError, DEVELOPMENT_FLAG_SECRET, estimatedBits, loadConfig } from '../../src/config/config.js'
import { publicHostWarning } from '../../src/config/config-warnings.js'

const SECRET = '0123456789abcdef0123456789abcdef' // 32 characters

/** The ConfigError loadConfig throws for env, or a failed assertion when it throws nothing. */
function configError(t: Test, env: Record<string, string>): ConfigError {
  try {
    loadConfig(env)
  } catch (error) {
    t.type(error, ConfigError)
    return error as ConfigError
  }
  t.fail(`no error for ${JSON.stringify(env)}`)
  return new ConfigError('none', 'none')
}

t.test('defaults', async (t) => {
  t.strictSame(loadConfig({}), {
    port: 8080,
    host: '0.0.0.0',
    logLevel: 'info',
    production: false,
    flagSecret: DEVELOPMENT_FLAG_SECRET,
    flagSecretIsDevelopmentDefault: true,
    hookToken: undefined,
    hookTokenPrevious: undefined,
    flagVerifyToken: undefined,
    hookTls: undefined,
    baseDomain: 'challenges.localhost',
    ingressClassName: undefined,
    ingressTlsSecret: undefined,
    ingressNamespace: 'ingress-nginx',
    ingressPodSelector: undefined,
    httpRouting: 'Ingress',
    tlsRouting: 'GatewayAPI',
    gateway: undefined,
    gatewayHttpListener: undefined,
    gatewayTlsListener: undefined,
    traefikHttpEntryPoint: 'websecure',
    traefikTlsEntryPoint: 'tcpsecure',
    tlsBaseDomain: 'challenges.localhost',
    tlsPort: 443,
    publicHost: '127.0.0.1',
    ownerBudget: 3,
    costUnit: { cpu: '2', memory: '2Gi', 'ephemeral-storage': '2Gi' },
    ownerBudgetScope: 'Namespace',
    bodyLimit: 8 * 1024 * 1024,
    clusterCidrs: [],
    allowedExtendedResources: [],
    allowedRuntimeClasses: [],
    isolationGate: {
      image: 'ghcr.io/challenge-hooks/challenge-hooks:0.1.0',
      target: undefined,
      timeoutSeconds: 60,
      ipv6Enforced: false,
    },
    dns: { namespace: 'kube-system', podSelector: { 'k8s-app': 'kube-dns' }, addresses: [], port: 53 },
    instancePods: { nodeSelector: undefined, tolerations: [], runtimeClassName: undefined },
    maxResyncSeconds: 300,
    poolMaxPods: 100,
    poolClaimTimeoutSeconds: 5,
    prepull: { defaultMode: 'Off', pauseImage: 'registry.k8s.io/pause:3.10.1' },
    endpointSettleMs: 2500,
    maxInFlight: 64,
    maxEventLoopDelayMs: 100,
    requestTimeoutMs: 5000,
    shutdownDrainMs: 5000,
    shutdownTimeoutMs: 10000,
    opsPort: 8081,
  })
  t.strictSame(loadConfig({ PORT: '  ', LOG_LEVEL: '', BASE_DOMAIN: ' ' }), loadConfig({}), 'blank means unset')
  t.equal(
    loadConfig({ BASE_DOMAIN: 'ctf.example.org' }).tlsBaseDomain,
    'ctf.example.org',
    'TLS hosts default to BASE_DOMAIN',
  )
})

t.test('every variable is read', async (t) => {
  const config = loadConfig({
    PORT: '9090',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'debug',
    FLAG_SECRET: 'short-dev-secret',
    HOOK_TOKEN: 'tok',
    BASE_DOMAIN: 'ctf.example.org',
    INGRESS_CLASS_NAME: 'nginx',
    INGRESS_TLS_SECRET: 'wildcard-tls',
    INGRESS_NAMESPACE: 'traefik',
    INGRESS_POD_SELECTOR: 'app.kubernetes.io/name=traefik, app.kubernetes.io/instance=traefik-ctf',
    HTTP_ROUTING: 'GatewayAPI',
    TLS_ROUTING: 'Traefik',
    GATEWAY: 'gateway-system/challenges',
    GATEWAY_HTTP_LISTENER: 'https',
    GATEWAY_TLS_LISTENER: 'tls.443',
    TRAEFIK_HTTP_ENTRYPOINT: 'web_secure',
    TRAEFIK_TLS_ENTRYPOINT: 'tcp-1337',
    TLS_BASE_DOMAIN: 'tcp.ctf.example.org',
    TLS_PORT: '1337',
    PUBLIC_HOST: 'ctf.example.org',
    OWNER_BUDGET: '5',
    COST_UNIT: 'memory=512Mi, cpu=500m',
    BODY_LIMIT: '512KiB',
    CLUSTER_CIDRS: '10.42.0.0/16, 10.43.0.0/16,fd00:42::/56',
    ALLOWED_EXTENDED_RESOURCES: 'nvidia.com/gpu, example.com/fpga',
    DNS_NAMESPACE: 'openshift-dns',
    DNS_POD_SELECTOR: 'dns.operator.openshift.io/daemonset-dns=default',
    DNS_ADDRESSES: '169.254.20.10/32',
    DNS_PORT: '5353',
    ISOLATION_GATE_IMAGE: 'registry.example.org/mirror/challenge-hooks@sha256:0123',
    ISOLATION_GATE_TARGET: '[fd00::10]:9153',
    ISOLATION_GATE_TIMEOUT_SECONDS: '20',
    POLICY_ENFORCES_IPV6: 'true',
    TLS_CERT_FILE: '/etc/challenge-hooks/tls/tls.crt',
    TLS_KEY_FILE: '/etc/challenge-hooks/tls/tls.key',
    INSTANCE_NODE_SELECTOR: 'challenge-hooks.dev/pool=challenges',
    INSTANCE_TOLERATIONS: 'challenge-hooks.dev/pool=challenges:NoSchedule, gvisor:NoExecute,dedicated',
    INSTANCE_RUNTIME_CLASS: 'gvisor',
    ALLOWED_RUNTIME_CLASSES: ' kata, gvisor',
    MAX_RESYNC_SECONDS: '60',
    POOL_MAX_PODS: '40',
    POOL_CLAIM_TIMEOUT_SECONDS: '12',
    PREPULL_DEFAULT: 'Hold',
    PREPULL_PAUSE_IMAGE: 'mirror.example.org/pause:3.10.1',
    ENDPOINT_SETTLE_MS: '0',
    OWNER_BUDGET_SCOPE: 'Cluster',
    MAX_IN_FLIGHT: '8',
    MAX_EVENT_LOOP_DELAY_MS: '0',
    REQUEST_TIMEOUT_MS: '2500',
    SHUTDOWN_DRAIN_MS: '0',
    SHUTDOWN_TIMEOUT_MS: '3000',
    OPS_PORT: '9091',
    FLAG_VERIFY_TOKEN: 'verify-tok',
  })
  t.strictSame(config, {
    port: 9090,
    host: '127.0.0.1',
    logLevel: 'debug',
    production: false,
    flagSecret: 'short-dev-secret',
    flagSecretIsDevelopmentDefault: false,
    hookToken: 'tok',
    hookTokenPrevious: undefined,
    flagVerifyToken: 'verify-tok',
    hookTls: { certFile: '/etc/challenge-hooks/tls/tls.crt', keyFile: '/etc/challenge-hooks/tls/tls.key' },
    baseDomain: 'ctf.example.org',
    ingressClassName: 'nginx',
    ingressTlsSecret: 'wildcard-tls',
    ingressNamespace: 'traefik',
    ingressPodSelector: { 'app.kubernetes.io/name': 'traefik', 'app.kubernetes.io/instance': 'traefik-ctf' },
    httpRouting: 'GatewayAPI',
    tlsRouting: 'Traefik',
    gateway: { namespace: 'gateway-system', name: 'challenges' },
    gatewayHttpListener: 'https',
    gatewayTlsListener: 'tls.443',
    traefikHttpEntryPoint: 'web_secure',
    traefikTlsEntryPoint: 'tcp-1337',
    tlsBaseDomain: 'tcp.ctf.example.org',
    tlsPort: 1337,
    publicHost: 'ctf.example.org',
    ownerBudget: 5,
    costUnit: { cpu: '500m', memory: '512Mi', 'ephemeral-storage': '2Gi' },
    ownerBudgetScope: 'Cluster',
    bodyLimit: 512 * 1024,
    clusterCidrs: ['10.42.0.0/16', '10.43.0.0/16', 'fd00:42::/56'],
    allowedExtendedResources: ['nvidia.com/gpu', 'example.com/fpga'],
    allowedRuntimeClasses: ['kata', 'gvisor'],
    isolationGate: {
      image: 'registry.example.org/mirror/challenge-hooks@sha256:0123',
      target: '[fd00::10]:9153',
      timeoutSeconds: 20,
      ipv6Enforced: true,
    },
    dns: {
      namespace: 'openshift-dns',
      podSelector: { 'dns.operator.openshift.io/daemonset-dns': 'default' },
      addresses: ['169.254.20.10/32'],
      port: 5353,
    },
    instancePods: {
      nodeSelector: { 'challenge-hooks.dev/pool': 'challenges' },
      tolerations: [
        { key: 'challenge-hooks.dev/pool', operator: 'Equal', value: 'challenges', effect: 'NoSchedule' },
        { key: 'gvisor', operator: 'Exists', effect: 'NoExecute' },
        { key: 'dedicated', operator: 'Exists' },
      ],
      runtimeClassName: 'gvisor',
    },
    maxResyncSeconds: 60,
    poolMaxPods: 40,
    poolClaimTimeoutSeconds: 12,
    prepull: { defaultMode: 'Hold', pauseImage: 'mirror.example.org/pause:3.10.1' },
    endpointSettleMs: 0,
    maxInFlight: 8,
    maxEventLoopDelayMs: 0,
    requestTimeoutMs: 2500,
    shutdownDrainMs: 0,
    shutdownTimeoutMs: 3000,
    opsPort: 9091,
  })
})

t.test('the shutdown deadline follows the drain unless it is set; ports of 0 may repeat', async (t) => {
  t.equal(
    loadConfig({ SHUTDOWN_DRAIN_MS: '20000' }).shutdownTimeoutMs,
    25000,
    'the drain, then REQUEST_TIMEOUT_MS for the calls in flight',
  )
  t.equal(loadConfig({ REQUEST_TIMEOUT_MS: '8000' }).shutdownTimeoutMs, 13000)
  t.equal(
    loadConfig({ SHUTDOWN_DRAIN_MS: '2000', SHUTDOWN_TIMEOUT_MS: '2000' }).shutdownTimeoutMs,
    2000,
    'no time after the drain',
  )
  t.match(loadConfig({ PORT: '0', OPS_PORT: '0' }), { port: 0, opsPort: 0 }, 'two free ports (tests)')
})

t.test('BODY_LIMIT takes bytes or a unit', async (t) => {
  for (const [value, bytes] of [
    ['8388608', 8388608],
    ['1024', 1024],
    ['2000B', 2000],
    ['512KiB', 512 * 1024],
    ['512kib', 512 * 1024],
    ['100KB', 100_000],
    ['8MiB', 8 * 1024 * 1024],
    ['8 MiB', 8 * 1024 * 1024],
    ['16MB', 16_000_000],
    ['256MiB', 256 * 1024 * 1024],
  ] as const) {
    t.equal(loadConfig({ BODY_LIMIT: value }).bodyLimit, bytes, value)
  }
})

t.test('a bad value throws a ConfigError naming the variable', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['PORT', 'http', /must be a whole number, got "http"/],
    ['PORT', '-1', /must be a whole number/],
    ['PORT', '8080.5', /must be a whole number/],
    ['PORT', '65536', /must be between 0 and 65535, got 65536/],
    ['PORT', '0x50', /must be a whole number/],
    ['LOG_LEVEL', 'verbose', /must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"/],
    ['LOG_LEVEL', 'INFO', /must be one of/],
    ['OWNER_BUDGET', 'three', /must be a whole number/],
    ['OWNER_BUDGET', '10001', /must be between 0 and 10000/],
    [
      'COST_UNIT',
      'gpu=1',
      /^COST_UNIT: "gpu=1" is not a resource and a quantity above 0 such as cpu=2 \(resources: cpu, memory, ephemeral-storage\)$/,
    ],
    ['COST_UNIT', 'cpu=0', /"cpu=0" is not a resource and a quantity above 0/],
    ['COST_UNIT', 'memory=0.0Gi', /"memory=0.0Gi" is not a resource and a quantity above 0/],
    ['COST_UNIT', 'cpu=2=3', /"cpu=2=3" is not a resource/],
    ['COST_UNIT', 'cpu', /"cpu" is not a resource/],
    ['COST_UNIT', 'cpu=two', /"cpu=two" is not a resource/],
    ['BODY_LIMIT', '8GB', /must be a size such as 8388608 or 8MiB, got "8GB"/],
    ['BODY_LIMIT', '8 M', /must be a size/],
    ['BODY_LIMIT', '-5', /must be a size/],
    ['BODY_LIMIT', '1.5MiB', /must be a size/],
    ['BODY_LIMIT', '1023', /must be between 1KiB and 256MiB/],
    ['BODY_LIMIT', '257MiB', /must be between 1KiB and 256MiB/],
    ['BODY_LIMIT', '0KiB', /must be between 1KiB and 256MiB/],
    ['BASE_DOMAIN', 'CTF.example.org', /must be a DNS name such as ctf.example.org, got "CTF.example.org"/],
    ['BASE_DOMAIN', 'ctf..example.org', /must be a DNS name/],
    ['BASE_DOMAIN', '-ctf.example.org', /must be a DNS name/],
    ['BASE_DOMAIN', 'https://ctf.example.org', /must be a DNS name/],
    ['BASE_DOMAIN', `${'a'.repeat(250)}.org`, /must be a DNS name/],
    ['INGRESS_CLASS_NAME', 'Nginx', /must be an IngressClass name/],
    ['INGRESS_TLS_SECRET', 'tls_secret', /must be a Secret name/],
    ['INGRESS_NAMESPACE', 'ingress.nginx', /must be a namespace name, got "ingress.nginx"/],
    ['INGRESS_NAMESPACE', 'a'.repeat(64), /must be a namespace name/],
    ['CLUSTER_CIDRS', '10.0.0.0', /"10.0.0.0" is not a CIDR such as 10.0.0.0\/8 or fd00::\/8/],
    ['CLUSTER_CIDRS', '10.0.0.0/33', /"10.0.0.0\/33" is not a CIDR/],
    ['CLUSTER_CIDRS', 'fd00::/129', /"fd00::\/129" is not a CIDR/],
    ['CLUSTER_CIDRS', '10.0.0.0/8/8', /is not a CIDR/],
    ['CLUSTER_CIDRS', '10.0.0.0/x', /is not a CIDR/],
    ['CLUSTER_CIDRS', 'cluster/16', /"cluster\/16" is not a CIDR/],
    ['CLUSTER_CIDRS', '10.42.0.0/16,,10.43.0.0/16', /"" is not a CIDR/],
    ['PUBLIC_HOST', 'ctf.example.org/path', /must be a host name or IP address, got "ctf.example.org\/path"/],
    ['PUBLIC_HOST', 'a b', /must be a host name or IP address/],
    ['MAX_RESYNC_SECONDS', '0', /must be between 1 and 3600/],
    ['POOL_MAX_PODS', '1001', /must be between 1 and 1000/],
    ['POOL_CLAIM_TIMEOUT_SECONDS', '0', /must be between 1 and 300/],
    ['ENDPOINT_SETTLE_MS', '60001', /must be between 0 and 60000/],
    ['OWNER_BUDGET_SCOPE', 'cluster', /must be one of Namespace, Cluster, None, got "cluster"/],
    ['ENDPOINT_SETTLE_MS', '2.5s', /must be a whole number/],
    ['MAX_IN_FLIGHT', '0', /must be between 1 and 100000/],
    ['SHUTDOWN_DRAIN_MS', 'soon', /must be a whole number/],
    ['SHUTDOWN_DRAIN_MS', '60001', /must be between 0 and 60000/],
    ['MAX_EVENT_LOOP_DELAY_MS', '10001', /must be between 0 and 10000/],
    ['REQUEST_TIMEOUT_MS', '999', /must be between 1000 and 60000/],
    ['REQUEST_TIMEOUT_MS', '5s', /must be a whole number/],
    ['OPS_PORT', '65536', /must be between 0 and 65535/],
    ['OPS_PORT', '8080', /must differ from PORT, got 8080 for both/],
    ['SHUTDOWN_TIMEOUT_MS', '4999', /must be at least SHUTDOWN_DRAIN_MS \(5000\), got 4999/],
    ['SHUTDOWN_TIMEOUT_MS', '120001', /must be between 0 and 120000/],
    ['DNS_NAMESPACE', 'Kube-System', /must be a namespace name/],
    ['DNS_POD_SELECTOR', 'k8s-app', /"k8s-app" is not a label/],
    ['DNS_ADDRESSES', '169.254.20.10', /"169.254.20.10" is not a CIDR/],
    ['DNS_PORT', '0', /must be between 1 and 65535/],
    ['ISOLATION_GATE_IMAGE', 'ghcr.io/x y:1', /must be an image reference without spaces, got "ghcr.io\/x y:1"/],
    ['ISOLATION_GATE_IMAGE', 'a'.repeat(513), /must be an image reference without spaces/],
    [
      'ISOLATION_GATE_TARGET',
      'kubernetes.default:443',
      /must be an IP address and a port such as 10.96.0.1:443 or \[fd00::1\]:443, got "kubernetes.default:443"/,
    ],
    ['ISOLATION_GATE_TARGET', '10.96.0.1', /must be an IP address and a port/],
    ['ISOLATION_GATE_TARGET', '10.96.0.1:0', /must be an IP address and a port/],
    ['ISOLATION_GATE_TARGET', '10.96.0.1:65536', /must be an IP address and a port/],
    ['ISOLATION_GATE_TARGET', 'fd00::1:443', /must be an IP address and a port/],
    ['ISOLATION_GATE_TARGET', '[10.96.0.1]:443', /must be an IP address and a port/],
    ['ISOLATION_GATE_TIMEOUT_SECONDS', '4', /must be between 5 and 600/],
    ['POLICY_ENFORCES_IPV6', 'yes', /must be one of true, false, got "yes"/],
    ['INSTANCE_NODE_SELECTOR', 'pool', /"pool" is not a label/],
    [
      'INSTANCE_TOLERATIONS',
      'pool=challenges:NoRun',
      /"pool=challenges:NoRun" is not a taint to tolerate such as pool=challenges:NoSchedule/,
    ],
    ['INSTANCE_TOLERATIONS', 'pool=a=b:NoSchedule', /"pool=a=b:NoSchedule" is not a taint/],
    ['INSTANCE_TOLERATIONS', 'pool:NoSchedule:x', /is not a taint/],
    ['INSTANCE_TOLERATIONS', 'Pool Key:NoSchedule', /"Pool Key:NoSchedule" is not a taint/],
    ['INSTANCE_TOLERATIONS', 'pool=bad value', /is not a taint/],
    ['INSTANCE_RUNTIME_CLASS', 'gVisor', /must be a RuntimeClass name, got "gVisor"/],
    ['ALLOWED_EXTENDED_RESOURCES', 'gpu', /"gpu" is not an extended resource name such as nvidia\.com\/gpu/],
    ['ALLOWED_EXTENDED_RESOURCES', 'nvidia.com/gpu,,', /"" is not an extended resource name/],
    ['ALLOWED_EXTENDED_RESOURCES', `${'a'.repeat(250)}.com/gpu`, /is not an extended resource name/],
  ]
  for (const [variable, value, problem] of cases) {
    const error = configError(t, { [variable]: value })
    t.equal(error.variable, variable, `${variable}=${value}`)
    t.equal(error.name, 'ConfigError')
    t.match(error.message, new RegExp(`^${variable}: `), `${variable}=${value}: message starts with the variable`)
    t.match(error.message, problem, `${variable}=${value}`)
  }
})

t.test('production requires a real FLAG_SECRET', async (t) => {
  const missing = configError(t, { NODE_ENV: 'production' })
  t.equal(missing.variable, 'FLAG_SECRET')
  t.match(missing.message, /is required when NODE_ENV=production \(generate one: openssl rand -hex 32\)/)

  for (const placeholder of [
    'CHANGE-ME',
    'change-me-to-a-long-random-value-0123456789',
    'CHANGEME-0123456789abcdef0123456789',
  ]) {
    const error = configError(t, { NODE_ENV: 'production', FLAG_SECRET: placeholder })
    t.equal(error.variable, 'FLAG_SECRET', placeholder)
    t.match(error.message, /still holds the placeholder of manifests\/secrets\/secrets\.env\.example/, placeholder)
  }
  const short = configError(t, { NODE_ENV: 'production', FLAG_SECRET: SECRET.slice(1) })
  t.match(short.message, /^FLAG_SECRET: must be at least 32 characters in production$/)

  const config = loadConfig({ NODE_ENV: 'production', FLAG_SECRET: ` ${SECRET} `, HOOK_TOKEN: SECRET })
  t.equal(config.production, true)
  t.equal(config.flagSecret, SECRET, 'trimmed')
  t.equal(config.flagSecretIsDevelopmentDefault, false)
})

t.test(
  'the start-up warning about PUBLIC_HOST: a loopback address (unset, blank, the placeholder); none for a host players can reach',
  async (t) => {
    const warning = (env: Record<string, string>) => publicHostWarning(loadConfig(env))
    const said = (host: string) =>
      `PUBLIC_HOST is ${host}, a loopback address (127.0.0.1 is its default, when unset): NodePort endpoints will say ${host}, so players will see "nc ${host} <nodePort>", which reaches nothing from their machines. Set PUBLIC_HOST to a node's public name or address.`
    t.equal(warning({}), said('127.0.0.1'), 'unset')
    t.equal(warning({ PUBLIC_HOST: ' ' }), said('127.0.0.1'), 'blank')
    t.equal(warning({ PUBLIC_HOST: '127.0.0.1' }), said('127.0.0.1'), "manifests/config.env's placeholder")
    for (const host of ['127.1.2.3', '::1', 'localhost', 'LOCALHOST', 'ctf.localhost'])
      t.equal(warning({ PUBLIC_HOST: host }), said(host), host)
    for (const host of [
      'ctf.example.org',
      '203.0.113.10',
      '10.0.0.127',
      '2001:db8::1',
      'localhost.example.org',
      '1127.0.0.1',
    ])
      t.equal(warning({ PUBLIC_HOST: host }), undefined, host)
  },
)

t.test(
  'production requires a HOOK_TOKEN: missing, empty or blank stops the start (authentication is never off)',
  async (t) => {
    for (const token of [undefined, '', ' ', '\t \n']) {
      const error = configError(t, {
        NODE_ENV: 'production',
        FLAG_SECRET: SECRET,
        ...(token === undefined ? {} : { HOOK_TOKEN: token }),
      })
      t.equal(error.variable, 'HOOK_TOKEN', JSON.stringify(token))
      t.match(error.message, /^HOOK_TOKEN: is required \(non-blank\) when NODE_ENV=production/, JSON.stringify(token))
    }
    for (const previous of ['', '  ']) {
      const error = configError(t, {
        NODE_ENV: 'production',
        FLAG_SECRET: SECRET,
        HOOK_TOKEN: SECRET,
        HOOK_TOKEN_PREVIOUS: previous,
      })
      t.equal(error.variable, 'HOOK_TOKEN_PREVIOUS', `previous ${JSON.stringify(previous)}`)
      t.match(error.message, /^HOOK_TOKEN_PREVIOUS: is set but blank/)
    }
    t.equal(
      loadConfig({ HOOK_TOKEN: ' ' }).hookToken,
      undefined,
      'outside production a blank token means none (with a warning at start)',
    )
    t.equal(
      loadConfig({ HOOK_TOKEN: 'x', HOOK_TOKEN_PREVIOUS: ' ' }).hookTokenPrevious,
      undefined,
      'and a blank previous token means none',
    )
  },
)

t.test('production checks HOOK_TOKEN the same way as FLAG_SECRET', async (t) => {
  const placeholder = configError(t, { NODE_ENV: 'production', FLAG_SECRET: SECRET, HOOK_TOKEN: 'CHANGE-ME' })
  t.equal(placeholder.variable, 'HOOK_TOKEN')
  const short = configError(t, { NODE_ENV: 'production', FLAG_SECRET: SECRET, HOOK_TOKEN: 'short' })
  t.equal(short.variable, 'HOOK_TOKEN')
  t.match(short.message, /at least 32 characters/)
  t.equal(loadConfig({ NODE_ENV: 'production', FLAG_SECRET: SECRET, HOOK_TOKEN: SECRET }).hookToken, SECRET)
})

t.test('HOOK_TOKEN_PREVIOUS: accepted beside HOOK_TOKEN during a rotation, checked like it', async (t) => {
  const OTHER = '5e2c9a71d04b8f36e1a7c2094bd5f8e3'
  t.equal(loadConfig({ HOOK_TOKEN: 'new', HOOK_TOKEN_PREVIOUS: 'old' }).hookTokenPrevious, 'old')
  t.equal(configError(t, { HOOK_TOKEN_PREVIOUS: 'old' }).variable, 'HOOK_TOKEN_PREVIOUS', 'not alone')
  const short = configError(t, {
    NODE_ENV: 'production',
    FLAG_SECRET: SECRET,
    HOOK_TOKEN: SECRET,
    HOOK_TOKEN_PREVIOUS: 'short',
  })
  t.equal(short.variable, 'HOOK_TOKEN_PREVIOUS')
  t.equal(
    loadConfig({ NODE_ENV: 'production', FLAG_SECRET: SECRET, HOOK_TOKEN: SECRET, HOOK_TOKEN_PREVIOUS: OTHER })
      .hookTokenPrevious,
    OTHER,
  )
})

t.test(
  'NODE_ENV means production in any case and with spaces around it: a spelling never turns the checks off',
  async (t) => {
    for (const spelling of ['production', 'Production', 'PRODUCTION', ' production ', 'production\n', '\tProDuction']) {
      t.equal(
        configError(t, { NODE_ENV: spelling }).variable,
        'FLAG_SECRET',
        `${JSON.stringify(spelling)}: a secret is required`,
      )
      t.equal(
        loadConfig({ NODE_ENV: spelling, FLAG_SECRET: SECRET, HOOK_TOKEN: SECRET }).production,
        true,
        JSON.stringify(spelling),
      )
    }
    for (const other of ['development', 'prod', 'productions', 'test', '']) {
      t.equal(loadConfig({ NODE_ENV: other }).production, false, JSON.stringify(other))
    }
  },
)

t.test('production refuses the public development secret and secrets that are easy to guess', async (t) => {
  const development = configError(t, {
    NODE_ENV: 'production',
    FLAG_SECRET: DEVELOPMENT_FLAG_SECRET,
    HOOK_TOKEN: SECRET,
  })
  t.equal(development.variable, 'FLAG_SECRET')
  t.match(development.message, /^FLAG_SECRET: is the public development value/)
  const weak = [
    'a'.repeat(40),
    'passwordpasswordpasswordpassword',
    'abcd'.repeat(8),
    '01'.repeat(20),
    'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab',
  ]
  for (const value of weak) {
    const flag = configError(t, { NODE_ENV: 'production', FLAG_SECRET: value, HOOK_TOKEN: SECRET })
    t.equal(flag.variable, 'FLAG_SECRET', value)
    t.match(flag.message, /^FLAG_SECRET: is too easy to guess/, value)
    t.equal(
      configError(t, { NODE_ENV: 'production', FLAG_SECRET: SECRET, HOOK_TOKEN: value }).variable,
      'HOOK_TOKEN',
      `HOOK_TOKEN ${value}`,
    )
  }
  // What the install tells operators to generate passes: openssl rand -hex 16 and -hex 32, base64 of 24 bytes.
  for (const value of [
    '8f14e45fceea167a5a36dedd4bea2543',
    'c4ca4238a0b923820dcc509a6f75849bc81e728d9d4c2f636f067f89cc14862c',
    'kq2Nd8Z3xR0pWm5tYv7LbHc1Je9Gf4Ua',
  ]) {
    t.equal(loadConfig({ NODE_ENV: 'production', FLAG_SECRET: value, HOOK_TOKEN: SECRET }).flagSecret, value, value)
  }
  t.equal(Math.round(estimatedBits('abcd'.repeat(8))), 64, 'a 4-character pattern carries 2 bits a character')
  t.equal(estimatedBits('a'.repeat(40)), 0)
})

t.test('ALLOWED_RUNTIME_CLASSES: names, and INSTANCE_RUNTIME_CLASS is always allowed', async (t) => {
  t.strictSame(loadConfig({ ALLOWED_RUNTIME_CLASSES: 'gvisor,kata' }).allowedRuntimeClasses, ['gvisor', 'kata'])
  t.strictSame(loadConfig({ INSTANCE_RUNTIME_CLASS: 'gvisor' }).allowedRuntimeClasses, ['gvisor'])
  t.strictSame(
    loadConfig({ ALLOWED_RUNTIME_CLASSES: 'gvisor', INSTANCE_RUNTIME_CLASS: 'gvisor' }).allowedRuntimeClasses,
    ['gvisor'],
    'once',
  )
  const bad = configError(t, { ALLOWED_RUNTIME_CLASSES: 'gvisor,Kata_Containers' })
  t.equal(bad.variable, 'ALLOWED_RUNTIME_CLASSES')
  t.match(bad.message, /"Kata_Containers" is not a RuntimeClass name/)
})

t.test('outside production, short secrets and placeholders are accepted', async (t) => {
  t.equal(loadConfig({ NODE_ENV: 'development', FLAG_SECRET: 'CHANGE-ME' }).flagSecret, 'CHANGE-ME')
  t.equal(loadConfig({ HOOK_TOKEN: 'x' }).hookToken, 'x')
})

t.test('the process environment is the default source', async (t) => {
  const saved = process.env.OWNER_BUDGET
  process.env.OWNER_BUDGET = '7'
  t.teardown(() => {
    if (saved === undefined) delete process.env.OWNER_BUDGET
    else process.env.OWNER_BUDGET = saved
  })
  t.equal(loadConfig().ownerBudget, 7)
})
