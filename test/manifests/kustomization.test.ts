// The kustomizations: every file they name exists, every manifest file is named by
// one (nothing orphaned), the generators match the server's configuration, and,
// where kubectl is installed, `kubectl kustomize` builds them with the references
// resolved: the base, and the base with every combination of routing components,
// which must give what the in-repo component patching (helpers.ts) gives.
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { controlPlaneBinaries } from '../support/kube/controlplane.js'
import { shippedMetacontrollerArgs } from '../support/kube/controllers.js'
import { toolMissing } from '../support/tools.js'
import {
  componentsDir,
  componentSettings,
  listYamlFiles,
  loadManifests,
  manifestsDir,
  parseYamlDocuments,
  readEnvFile,
  readYamlDocuments,
  withComponents,
  type ManifestObject,
} from '../helpers/manifests.js'

interface Generator {
  name: string
  namespace?: string
  envs?: string[]
  options?: { disableNameSuffixHash?: boolean }
}
interface Kustomization {
  kind: string
  namespace?: string
  resources?: string[]
  components?: string[]
  images?: { name: string; newTag?: string; digest?: string }[]
  configMapGenerator?: Generator[]
  secretGenerator?: Generator[]
}

const kustomizationFiles = listYamlFiles(manifestsDir).filter((file) => file.endsWith('/kustomization.yaml'))
const kustomizations = new Map(
  kustomizationFiles.map((file) => [
    relative(manifestsDir, dirname(file)) || '.',
    readYamlDocuments(file)[0] as Kustomization,
  ]),
)
const main = kustomizations.get('.') as Kustomization
const examples = kustomizations.get('examples') as Kustomization
const secretsKustomization = kustomizations.get('secrets') as Kustomization
const generators = [
  ...(main.configMapGenerator ?? []),
  ...(main.secretGenerator ?? []),
  ...(secretsKustomization.secretGenerator ?? []),
]

// The hook server's configuration variables (docs/api.md and src/config/config.ts) and where
// each comes from.
const fromConfigMap = [
  'BASE_DOMAIN',
  'INGRESS_CLASS_NAME',
  'INGRESS_TLS_SECRET',
  'INGRESS_NAMESPACE',
  'INGRESS_POD_SELECTOR',
  'PUBLIC_HOST',
  'OWNER_BUDGET',
  'CLUSTER_CIDRS',
  'GATEWAY',
  'TLS_BASE_DOMAIN',
  'TLS_PORT',
]
const fromSecret = ['FLAG_SECRET', 'HOOK_TOKEN']
/** The routing components and what each adds: a child rule, Metacontroller's rights on it, the hook's settings. */
const COMPONENTS: Record<string, { apiVersion: string; resource: string; settings: Record<string, string> }> = {
  'gateway-api-http': {
    apiVersion: 'gateway.networking.k8s.io/v1',
    resource: 'httproutes',
    settings: { HTTP_ROUTING: 'GatewayAPI', GATEWAY_HTTP_LISTENER: 'https' },
  },
  'gateway-api-tls': {
    apiVersion: 'gateway.networking.k8s.io/v1',
    resource: 'tlsroutes',
    settings: { TLS_ROUTING: 'GatewayAPI', GATEWAY_TLS_LISTENER: 'tls' },
  },
  'traefik-http': {
    apiVersion: 'traefik.io/v1alpha1',
    resource: 'ingressroutes',
    settings: { HTTP_ROUTING: 'Traefik', TRAEFIK_HTTP_ENTRYPOINT: 'websecure' },
  },
  'traefik-tls': {
    apiVersion: 'traefik.io/v1alpha1',
    resource: 'ingressroutetcps',
    settings: { TLS_ROUTING: 'Traefik', TRAEFIK_TLS_ENTRYPOINT: 'tcpsecure' },
  },
}
const componentNames = Object.keys(COMPONENTS)
/** The components an operator may add beside routing: TLS to the hooks, the hook server's NetworkPolicy openings, the author annotation. */
const OTHER_COMPONENTS = [
  'budget-across-namespaces',
  'definition-author',
  'gateway',
  'hook-tls',
  'metacontroller-helm',
  'metacontroller-host-network',
  'monitoring',
  'prometheus-scrape',
]

t.test('the kustomizations: the install, the examples, and one component per routing choice', async (t) => {
  t.strictSame([...kustomizations.keys()].sort(), [
    '.',
    ...[...componentNames, ...OTHER_COMPONENTS].sort().map((name) => `components/${name}`),
    'examples',
    'examples/tls',
    'metacontroller',
    'secrets',
  ])
  t.notOk(
    main.resources?.some((r) => r.startsWith('examples')),
    'the install does not include the examples',
  )
  t.equal(main.components, undefined, 'the base enables no component (Ingress routing, no route CRD needed)')
  t.equal(examples.namespace, 'challenges')
  t.equal(kustomizations.get('examples/tls')?.namespace, 'challenges')
  for (const name of [...componentNames, ...OTHER_COMPONENTS])
    t.equal(kustomizations.get(`components/${name}`)?.kind, 'Component', name)
})

t.test(
  "each component: one child rule, the rights Metacontroller needs on it, the hook server's routing settings",
  async (t) => {
    const base = loadManifests().map((m) => m.object)
    const controllerOf = (objects: ManifestObject[]) =>
      objects.find((o) => o.kind === 'CompositeController') as ManifestObject & {
        spec: { childResources: { apiVersion: string; resource: string; updateStrategy: { method: string } }[] }
      }
    const roleOf = (objects: ManifestObject[], name: string) =>
      objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name === name) as ManifestObject & {
        rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[]
      }
    for (const [name, expected] of Object.entries(COMPONENTS)) {
      const patched = withComponents(base, [name])
      t.strictSame(
        controllerOf(patched).spec.childResources,
        [
          ...controllerOf(base).spec.childResources,
          { apiVersion: expected.apiVersion, resource: expected.resource, updateStrategy: { method: 'InPlace' } },
        ],
        `${name}: the child rule, InPlace like the others`,
      )
      const group = [expected.apiVersion.split('/')[0]]
      t.strictSame(
        roleOf(patched, 'challenge-hooks-metacontroller').rules,
        [
          ...roleOf(base, 'challenge-hooks-metacontroller').rules,
          { apiGroups: group, resources: [expected.resource], verbs: ['get', 'list', 'watch'] },
        ],
        `${name}: read everywhere, on that resource only`,
      )
      t.strictSame(
        roleOf(patched, 'challenge-hooks-metacontroller-write').rules,
        [
          ...roleOf(base, 'challenge-hooks-metacontroller-write').rules,
          { apiGroups: group, resources: [expected.resource], verbs: ['create', 'update', 'patch', 'delete'] },
        ],
        `${name}: written where the write role is bound, on that resource only`,
      )
      for (const other of ['challenge-hooks-platform', 'challenge-hooks-author'])
        t.strictSame(roleOf(patched, other), roleOf(base, other), `${name}: ${other} unchanged`)
      t.strictSame(componentSettings([name]), expected.settings, `${name}: settings`)
      t.strictSame(
        patched.filter((o) => !['CompositeController', 'ClusterRole'].includes(o.kind)),
        base.filter((o) => !['CompositeController', 'ClusterRole'].includes(o.kind)),
        `${name}: nothing else changes`,
      )
    }
  },
)

t.test('every file a kustomization names exists; every manifest file is named (nothing orphaned)', async (t) => {
  const named = new Set<string>()
  for (const [dir, kustomization] of kustomizations) {
    const ownGenerators = [...(kustomization.configMapGenerator ?? []), ...(kustomization.secretGenerator ?? [])]
    const files = [...(kustomization.resources ?? []), ...ownGenerators.flatMap((g) => g.envs ?? [])]
    for (const file of files) {
      // Upstream's release, by URL: the Metacontroller overlay's base (checked below with a stand-in).
      if (file.startsWith('https://')) continue
      const path = join(manifestsDir, dir, file)
      // The real secrets file is the operator's, never in git: its example must be there instead.
      const shipped = dir === 'secrets' && file === 'secrets.env' ? `${path}.example` : path
      t.ok(existsSync(shipped), `${dir}/kustomization.yaml names ${file}`)
      t.notOk(named.has(path), `${file} is named once`)
      named.add(path)
    }
  }
  const onDisk = readdirSync(manifestsDir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(ya?ml|env)$/.test(f) && !f.endsWith('kustomization.yaml'))
    .map((f) => join(manifestsDir, f))
  t.strictSame(
    onDisk.filter((f) => !named.has(f)),
    [],
    'no orphaned manifest',
  )
})

t.test(
  'generators: the ConfigMap and Secret the Deployment reads; the Secret apart from the install, its file out of git',
  async (t) => {
    t.equal(
      main.secretGenerator,
      undefined,
      'kubectl apply -k manifests/ never writes the Secret (no placeholder can overwrite it)',
    )
    t.strictSame(secretsKustomization.resources, undefined, 'manifests/secrets/ makes the Secret and nothing else')
    const ignored = spawnSync('git', ['check-ignore', '-q', 'manifests/secrets/secrets.env'], {
      cwd: join(manifestsDir, '..'),
    })
    t.equal(ignored.status, 0, 'manifests/secrets/secrets.env is git-ignored')
    t.strictSame(
      generators.map((g) => [g.name, g.namespace, g.envs, g.options?.disableNameSuffixHash ?? false]),
      [
        ['challenge-hooks-config', 'challenge-hooks', ['config.env'], false],
        ['challenge-hooks-secrets', 'challenge-hooks', ['secrets.env'], true],
      ],
    )
    const config = readEnvFile(join(manifestsDir, 'config.env'))
    t.strictSame(
      [...config.keys()].filter((k) => !fromConfigMap.includes(k)),
      [],
      'config.env sets only configuration variables',
    )
    t.strictSame(
      fromConfigMap.filter((k) => !config.has(k)),
      [
        'INGRESS_CLASS_NAME',
        'INGRESS_TLS_SECRET',
        'INGRESS_POD_SELECTOR',
        'CLUSTER_CIDRS',
        'GATEWAY',
        'TLS_BASE_DOMAIN',
        'TLS_PORT',
      ],
      'optional ones stay unset',
    )
    t.ok(
      [...config.values()].every((v) => v !== ''),
      'no empty value (empty is not unset)',
    )
    const secrets = readEnvFile(join(manifestsDir, 'secrets', 'secrets.env.example'))
    t.strictSame([...secrets.keys()], fromSecret)
    for (const [key, value] of secrets) t.match(value, /^CHANGE-ME-/, `${key} is an obvious placeholder`)
  },
)

t.test('images: the hook server image can be overridden', async (t) => {
  t.strictSame(main.images, [{ name: 'ghcr.io/challenge-hooks/challenge-hooks', newTag: '0.1.0' }])
})

/** The kubectl the cluster suite builds (controlplane/build.sh), else the one on PATH. */
function kubectlBinary(): string {
  try {
    const built = join(controlPlaneBinaries({ build: false }), 'kubectl')
    if (existsSync(built)) return built
  } catch {
    // Not built on this machine: PATH's, if any.
  }
  return 'kubectl'
}
const KUBECTL = kubectlBinary()

function kustomize(dir: string): { objects?: ManifestObject[]; skip?: string } {
  const result = spawnSync(KUBECTL, ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 })
  if (result.error !== undefined)
    return { skip: toolMissing(`kubectl is not available (${result.error.message}); run npm run build:cluster`) }
  if (result.status !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${result.stderr}`)
  return { objects: parseYamlDocuments(result.stdout, `kubectl kustomize ${dir}`) as ManifestObject[] }
}

const built = kustomize(manifestsDir)
t.test('kubectl kustomize manifests/ resolves every reference', { skip: built.skip ?? false }, async (t) => {
  const objects = built.objects as ManifestObject[]
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind)
  const configMap = byKind('ConfigMap')[0] as ManifestObject & { data: Record<string, string> }
  t.match(configMap.metadata.name, /^challenge-hooks-config-[a-z0-9]{10}$/, 'the ConfigMap name carries a content hash')
  t.strictSame(Object.keys(configMap.data).sort(), ['BASE_DOMAIN', 'INGRESS_NAMESPACE', 'OWNER_BUDGET', 'PUBLIC_HOST'])
  t.strictSame(byKind('Secret'), [], 'no Secret in the install')
  const deployment = byKind('Deployment')[0] as ManifestObject & {
    spec: { template: { spec: { containers: { image: string; envFrom: { configMapRef: { name: string } }[] }[] } } }
  }
  const [container] = deployment.spec.template.spec.containers
  t.equal(
    container?.envFrom[0]?.configMapRef.name,
    configMap.metadata.name,
    'the Deployment reads the generated ConfigMap',
  )
  t.equal(container?.image, 'ghcr.io/challenge-hooks/challenge-hooks:0.1.0')
  t.equal(
    loadConfig({}).isolationGate.image,
    container?.image,
    "the isolation gate's image is by default the hook server's (its dist/isolation-gate.js)",
  )
  const namespaces = new Set(objects.map((o) => o.metadata.namespace))
  t.strictSame([...namespaces].sort(), ['challenge-hooks', 'challenges', 'metacontroller', undefined])
  t.ok(
    objects.every((o) => o.metadata.labels?.['app.kubernetes.io/part-of'] === 'challenge-hooks'),
    'every object is labelled',
  )
  t.strictSame(
    byKind('Namespace').map((o) => o.metadata.name),
    ['challenge-hooks', 'challenges'],
  )
})

/** kubectl kustomize manifests/secrets/ as an operator runs it: with a secrets.env written beside it. */
function kustomizeSecrets(): { objects?: ManifestObject[]; skip?: string } {
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-secrets-'))
  try {
    cpSync(join(manifestsDir, 'secrets'), dir, { recursive: true })
    writeFileSync(
      join(dir, 'secrets.env'),
      'FLAG_SECRET=0123456789abcdef0123456789abcdef\nHOOK_TOKEN=fedcba9876543210fedcba9876543210\n',
    )
    return kustomize(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const builtSecrets = kustomizeSecrets()
t.test(
  'kubectl kustomize manifests/secrets/ makes the Secret the Deployment and Metacontroller read',
  { skip: builtSecrets.skip ?? false },
  async (t) => {
    const [secret, ...rest] = builtSecrets.objects as (ManifestObject & { data: Record<string, string> })[]
    t.strictSame(rest, [])
    t.strictSame(
      [secret?.kind, secret?.metadata.name, secret?.metadata.namespace],
      ['Secret', 'challenge-hooks-secrets', 'challenge-hooks'],
    )
    t.strictSame(Object.keys(secret?.data ?? {}).sort(), fromSecret)
    t.equal(Buffer.from(secret?.data.HOOK_TOKEN ?? '', 'base64').toString(), 'fedcba9876543210fedcba9876543210')
  },
)

const builtExamples = kustomize(join(manifestsDir, 'examples'))
t.test(
  'kubectl kustomize manifests/examples/ puts everything in namespace challenges',
  { skip: builtExamples.skip ?? false },
  async (t) => {
    const objects = builtExamples.objects as ManifestObject[]
    t.equal(objects.length, 4)
    t.ok(objects.every((o) => o.metadata.namespace === 'challenges'))
  },
)

/** kubectl kustomize of an overlay: the install (manifests/) with these components. */
function kustomizeWith(components: string[]): { objects?: ManifestObject[]; skip?: string } {
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-overlay-'))
  try {
    // kustomize takes only relative paths for other kustomizations.
    const overlay = {
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: [relative(dir, manifestsDir)],
      components: components.map((name) => relative(dir, join(componentsDir, name))),
    }
    writeFileSync(join(dir, 'kustomization.yaml'), JSON.stringify(overlay))
    return kustomize(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Every meaningful combination: HTTP by Ingress, Gateway API or Traefik, times TLS by nothing, Gateway API or Traefik. */
const COMBINATIONS: string[][] = []
for (const http of [[], ['gateway-api-http'], ['traefik-http']]) {
  for (const tls of [[], ['gateway-api-tls'], ['traefik-tls']])
    if (http.length + tls.length > 0) COMBINATIONS.push([...http, ...tls])
}

const probe = kustomizeWith([])
t.test(
  'kubectl kustomize builds the install with every combination of routing components',
  { skip: probe.skip ?? false },
  async (t) => {
    const base = built.objects ?? []
    const pick = (objects: ManifestObject[], kind: string) =>
      objects.find((o) => o.kind === kind) as ManifestObject & Record<string, unknown>
    for (const components of COMBINATIONS) {
      const label = components.join(' + ')
      const objects = kustomizeWith(components).objects as ManifestObject[]
      const expected = withComponents(base, components)
      t.strictSame(
        pick(objects, 'CompositeController'),
        pick(expected, 'CompositeController'),
        `${label}: CompositeController as the in-repo patching gives it`,
      )
      const roles = (from: ManifestObject[]) => from.filter((o) => o.kind === 'ClusterRole')
      t.strictSame(roles(objects), roles(expected), `${label}: the ClusterRoles as the in-repo patching gives them`)
      const configMap = pick(objects, 'ConfigMap') as ManifestObject & { data: Record<string, string> }
      t.strictSame(
        configMap.data,
        {
          ...(pick(base, 'ConfigMap') as unknown as { data: Record<string, string> }).data,
          ...componentSettings(components),
        },
        `${label}: settings merged`,
      )
      const deployment = pick(objects, 'Deployment') as unknown as {
        spec: { template: { spec: { containers: { envFrom: { configMapRef: { name: string } }[] }[] } } }
      }
      t.equal(
        deployment.spec.template.spec.containers[0]?.envFrom[0]?.configMapRef.name,
        configMap.metadata.name,
        `${label}: the Deployment reads the merged ConfigMap`,
      )
      t.equal(objects.length, base.length, `${label}: no object added or lost`)
      // The settings start the server, given the Gateway docs/routing.md tells the operator to name in config.env.
      const gatewayApi = components.some((name) => name.startsWith('gateway-api'))
      const env = { ...configMap.data, ...(gatewayApi ? { GATEWAY: 'gateway-system/challenges' } : {}) }
      const config = loadConfig(env)
      t.match(
        config,
        {
          httpRouting: components.includes('gateway-api-http')
            ? 'GatewayAPI'
            : components.includes('traefik-http')
              ? 'Traefik'
              : 'Ingress',
        },
        `${label}: HTTP routing`,
      )
      if (gatewayApi)
        t.throws(
          () => loadConfig(configMap.data),
          { name: 'ConfigError', message: /^GATEWAY: is required/ },
          `${label}: without GATEWAY the server refuses to start`,
        )
    }
  },
)

// Kustomize output, read field by field.
type Json = Record<string, any>

t.test(
  "the other components: TLS to the hooks, and the hook server's NetworkPolicy for Prometheus or a hostNetwork Metacontroller",
  { skip: probe.skip ?? false },
  async (t) => {
    const base = built.objects ?? []
    const find = (objects: ManifestObject[], kind: string, name = 'challenge-hooks') =>
      objects.find((o) => o.kind === kind && o.metadata.name === name) as unknown as Json
    const unchanged = (objects: ManifestObject[], changed: string[], label: string) => {
      const rest = (from: ManifestObject[]) => from.filter((o) => !changed.includes(o.kind))
      t.strictSame(rest(objects), rest(base), `${label}: nothing else changes`)
    }

    const tls = kustomizeWith(['hook-tls']).objects as ManifestObject[]
    const hooks = find(tls, 'CompositeController').spec.hooks as Json
    for (const hook of ['customize', 'sync', 'finalize']) {
      t.match(
        hooks[hook].webhook,
        {
          service: { name: 'challenge-hooks', namespace: 'challenge-hooks', port: 443, protocol: 'https' },
          caBundle: { secretRef: { name: 'challenge-hooks-tls', namespace: 'challenge-hooks', key: 'ca.crt' } },
          authorization: { type: 'Bearer' },
        },
        `hook-tls: ${hook} over https, verified with the CA of challenge-hooks-tls`,
      )
    }
    const poolHooks = find(tls, 'CompositeController', 'challenge-hooks-pools').spec.hooks as Json
    for (const hook of ['customize', 'sync']) {
      t.strictSame(
        poolHooks[hook].webhook,
        { ...hooks[hook].webhook, path: `/pools/${hook}` },
        `hook-tls: the pools' ${hook} as the Challenges' ${hook}`,
      )
    }
    t.strictSame(
      find(tls, 'Service').spec.ports[0],
      { name: 'https', port: 443, targetPort: 'http', protocol: 'TCP' },
      'hook-tls: the Service port',
    )
    const pod = find(tls, 'Deployment').spec.template.spec
    const container = pod.containers[0]
    const env = Object.fromEntries((container.env as { name: string; value?: string }[]).map((e) => [e.name, e.value]))
    const mount = (container.volumeMounts as Json[]).find((m) => m.name === 'tls')
    t.strictSame(mount, { name: 'tls', mountPath: '/etc/challenge-hooks/tls', readOnly: true })
    t.equal(env.TLS_CERT_FILE, `${mount?.mountPath}/tls.crt`, 'hook-tls: the server reads the mounted certificate')
    t.equal(env.TLS_KEY_FILE, `${mount?.mountPath}/tls.key`)
    t.match(
      (pod.volumes as Json[]).find((v) => v.name === 'tls'),
      { secret: { secretName: 'challenge-hooks-tls' } },
    )
    // The server starts with the settings the component gives it (the files themselves are checked by test/http/tls.test.ts).
    t.match(loadConfig({ TLS_CERT_FILE: env.TLS_CERT_FILE, TLS_KEY_FILE: env.TLS_KEY_FILE }).hookTls, {
      certFile: '/etc/challenge-hooks/tls/tls.crt',
    })
    unchanged(tls, ['CompositeController', 'Service', 'Deployment'], 'hook-tls')

    const baseIngress = find(base, 'NetworkPolicy').spec.ingress as Json[]
    const scrape = kustomizeWith(['prometheus-scrape']).objects as ManifestObject[]
    t.strictSame(
      find(scrape, 'NetworkPolicy').spec.ingress,
      [
        ...baseIngress,
        {
          from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
          ports: [{ protocol: 'TCP', port: 8081 }],
        },
      ],
      "prometheus-scrape: the ops port, from Prometheus' namespace",
    )
    unchanged(scrape, ['NetworkPolicy'], 'prometheus-scrape')
    const hostNetwork = kustomizeWith(['metacontroller-host-network']).objects as ManifestObject[]
    t.strictSame(
      find(hostNetwork, 'NetworkPolicy').spec.ingress,
      [...baseIngress, { from: [{ ipBlock: { cidr: '10.0.0.0/16' } }], ports: [{ protocol: 'TCP', port: 8080 }] }],
      "metacontroller-host-network: the hook port, from the nodes' addresses",
    )
    unchanged(hostNetwork, ['NetworkPolicy'], 'metacontroller-host-network')

    const helm = kustomizeWith(['metacontroller-helm']).objects as ManifestObject[]
    const bound = (from: ManifestObject[]) =>
      from
        .filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding')
        .map((o) => [o.metadata.name, (o as unknown as Json).subjects])
    const helmAccount = [
      { kind: 'ServiceAccount', name: 'metacontroller-metacontroller-helm', namespace: 'metacontroller' },
    ]
    const upstreamAccount = [{ kind: 'ServiceAccount', name: 'metacontroller', namespace: 'metacontroller' }]
    const rebound = [
      'challenge-hooks-metacontroller',
      'challenge-hooks-metacontroller-write',
      'challenge-hooks-metacontroller-leader-election',
    ]
    t.strictSame(
      bound(helm).filter(([name]) => rebound.includes(name)),
      bound(base)
        .filter(([name]) => rebound.includes(name))
        .map(([name, subjects]) => {
          t.strictSame(subjects, upstreamAccount, `${name}: the upstream account in the base`)
          return [name, helmAccount]
        }),
      "metacontroller-helm: Metacontroller's three bindings name the chart's account",
    )
    t.strictSame(
      bound(helm).filter(([name]) => !rebound.includes(name)),
      bound(base).filter(([name]) => !rebound.includes(name)),
      "the other actors' bindings unchanged",
    )
    unchanged(helm, ['ClusterRoleBinding', 'RoleBinding'], 'metacontroller-helm')

    const budget = kustomizeWith(['budget-across-namespaces']).objects as ManifestObject[]
    const hooksOf = (objects: ManifestObject[]) =>
      find(objects, 'CompositeController').spec.hooks as Record<string, Json>
    for (const hook of ['customize', 'sync', 'finalize']) {
      t.strictSame(
        hooksOf(budget)[hook],
        { ...hooksOf(base)[hook], version: 'v2' },
        `budget-across-namespaces: ${hook} at hook version v2`,
      )
    }
    const budgetSettings = find(
      budget,
      'ConfigMap',
      find(budget, 'Deployment').spec.template.spec.containers[0].envFrom[0].configMapRef.name,
    ).data
    t.strictSame(
      loadConfig(budgetSettings).ownerBudgetScope,
      'Cluster',
      'budget-across-namespaces: the server counts across namespaces',
    )
    unchanged(budget, ['CompositeController', 'ConfigMap', 'Deployment'], 'budget-across-namespaces')

    const monitoring = kustomizeWith(['monitoring', 'prometheus-scrape']).objects as ManifestObject[]
    const added = monitoring.filter((o) => !base.some((b) => b.kind === o.kind && b.metadata.name === o.metadata.name))
    t.strictSame(
      added.map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`).sort(),
      [
        'ConfigMap challenge-hooks/challenge-hooks-dashboard',
        'PodMonitor metacontroller/metacontroller',
        'PrometheusRule challenge-hooks/challenge-hooks',
        'ServiceMonitor challenge-hooks/challenge-hooks',
      ],
      'monitoring: the monitors, the rules and the dashboard',
    )
    const dashboard = find(monitoring, 'ConfigMap', 'challenge-hooks-dashboard')
    t.strictSame(
      dashboard.metadata.labels,
      { grafana_dashboard: '1' },
      "monitoring: the label Grafana's dashboard sidecar loads",
    )
    t.strictSame(
      JSON.parse(dashboard.data['challenge-hooks.json']).uid,
      'challenge-hooks',
      'monitoring: the dashboard, unchanged',
    )
    const service = find(base, 'Service')
    const monitor = find(monitoring, 'ServiceMonitor')
    const selected = Object.entries(monitor.spec.selector.matchLabels as Record<string, string>)
    t.ok(
      selected.length > 0 && selected.every(([key, value]) => service.metadata.labels[key] === value),
      "monitoring: the ServiceMonitor selects the hook server's Service",
    )
    t.notOk(
      base.some(
        (o) =>
          o.kind === 'Service' &&
          o.metadata.name !== 'challenge-hooks' &&
          selected.every(([key, value]) => o.metadata.labels?.[key] === value),
      ),
      'and no other Service',
    )
    t.ok(
      (service.spec.ports as Json[]).some((port) => port.name === monitor.spec.endpoints[0].port),
      'monitoring: on its ops port',
    )
  },
)

/** Upstream's manifests/production as of v4.17 (its RBAC file and StatefulSet, reduced to what the overlay touches). */
const UPSTREAM_STANDIN = `apiVersion: v1
kind: ServiceAccount
metadata: {name: metacontroller, namespace: metacontroller}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: metacontroller}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: metacontroller}
subjects: [{kind: ServiceAccount, name: metacontroller, namespace: metacontroller}]
roleRef: {kind: ClusterRole, name: metacontroller, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: aggregate-metacontroller-view}
rules: [{apiGroups: [metacontroller.k8s.io], resources: [compositecontrollers], verbs: [get]}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: metacontroller, namespace: metacontroller}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: metacontroller}}
  template:
    metadata: {labels: {app.kubernetes.io/name: metacontroller}}
    spec:
      serviceAccountName: metacontroller
      containers:
        - name: metacontroller
          image: ghcr.io/metacontroller/metacontroller:v4.17.2
          args: [--zap-log-level=4, --discovery-interval=20s]
`

t.test(
  "manifests/metacontroller/: upstream's release without its wildcard RBAC, with the event's rate and workers",
  { skip: probe.skip ?? false },
  async (t) => {
    const overlay = kustomizations.get('metacontroller') as Kustomization
    t.strictSame(
      overlay.resources,
      ['https://github.com/metacontroller/metacontroller/manifests/production?ref=v4.17.2'],
      'upstream, pinned to a release',
    )
    const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-metacontroller-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    // The same patches over a local stand-in of upstream's objects (the test runs offline).
    const source = readFileSync(join(manifestsDir, 'metacontroller', 'kustomization.yaml'), 'utf8')
    writeFileSync(
      join(dir, 'kustomization.yaml'),
      source.replace(/^ {2}- https:\/\/github\.com\/.*$/m, '  - upstream.yaml'),
    )
    writeFileSync(join(dir, 'upstream.yaml'), UPSTREAM_STANDIN)
    const objects = kustomize(dir).objects as (ManifestObject & Json)[]
    t.strictSame(
      objects.map((o) => `${o.kind}/${o.metadata.name}`).sort(),
      ['ClusterRole/aggregate-metacontroller-view', 'ServiceAccount/metacontroller', 'StatefulSet/metacontroller'],
      'the wildcard ClusterRole and its binding are gone',
    )
    const statefulSet = objects.find((o) => o.kind === 'StatefulSet') as Json
    const pod = statefulSet.spec.template.spec
    t.strictSame(pod.containers[0].args, [
      '--zap-log-level=4',
      '--discovery-interval=20s',
      '--workers=30',
      '--client-go-qps=300',
      '--client-go-burst=600',
    ])
    t.strictSame(
      shippedMetacontrollerArgs(),
      ['--workers=30', '--client-go-qps=300', '--client-go-burst=600'],
      'the suites run METACONTROLLER_BIN with the flags this overlay adds',
    )
    t.strictSame(pod.containers[0].resources, { requests: { cpu: '1', memory: '512Mi' }, limits: { memory: '1Gi' } })
    t.strictSame(
      pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms,
      [{ matchExpressions: [{ key: 'challenge-hooks.dev/pool', operator: 'NotIn', values: ['challenges'] }] }],
      'never on the player pool',
    )
  },
)
