// The kustomizations: every file they name exists, every manifest file is named by
// one (nothing orphaned), the generators match the server's configuration, and,
// where kubectl is installed, `kubectl kustomize` builds them with the references
// resolved.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import t from 'tap'
import { listYamlFiles, manifestsDir, parseYamlDocuments, readEnvFile, readYamlDocuments, type ManifestObject } from './helpers.js'

interface Generator {
  name: string
  namespace?: string
  envs?: string[]
  options?: { disableNameSuffixHash?: boolean }
}
interface Kustomization {
  namespace?: string
  resources: string[]
  images?: { name: string; newTag?: string; digest?: string }[]
  configMapGenerator?: Generator[]
  secretGenerator?: Generator[]
}

const kustomizationFiles = listYamlFiles(manifestsDir).filter((file) => file.endsWith('/kustomization.yaml'))
const kustomizations = new Map(
  kustomizationFiles.map((file) => [relative(manifestsDir, dirname(file)) || '.', readYamlDocuments(file)[0] as Kustomization]),
)
const main = kustomizations.get('.') as Kustomization
const examples = kustomizations.get('examples') as Kustomization
const generators = [...(main.configMapGenerator ?? []), ...(main.secretGenerator ?? [])]

// The hook server's configuration variables (challenge-api.md, and CLUSTER_CIDRS from src/config.ts) and where
// each comes from.
const fromConfigMap = ['BASE_DOMAIN', 'INGRESS_CLASS_NAME', 'INGRESS_TLS_SECRET', 'INGRESS_NAMESPACE', 'PUBLIC_HOST', 'OWNER_BUDGET', 'CLUSTER_CIDRS']
const fromSecret = ['FLAG_SECRET', 'HOOK_TOKEN']

t.test('there are exactly two kustomizations: the install and the examples', async (t) => {
  t.same([...kustomizations.keys()].sort(), ['.', 'examples'])
  t.notOk(main.resources.some((r) => r.startsWith('examples')), 'the install does not include the examples')
  t.equal(examples.namespace, 'challenges')
})

t.test('every file a kustomization names exists; every manifest file is named (nothing orphaned)', async (t) => {
  const named = new Set<string>()
  for (const [dir, kustomization] of kustomizations) {
    const ownGenerators = [...(kustomization.configMapGenerator ?? []), ...(kustomization.secretGenerator ?? [])]
    const files = [...kustomization.resources, ...ownGenerators.flatMap((g) => g.envs ?? [])]
    for (const file of files) {
      const path = join(manifestsDir, dir, file)
      t.ok(existsSync(path), `${dir}/kustomization.yaml names ${file}`)
      t.notOk(named.has(path), `${file} is named once`)
      named.add(path)
    }
  }
  const onDisk = readdirSync(manifestsDir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(ya?ml|env)$/.test(f) && !f.endsWith('kustomization.yaml'))
    .map((f) => join(manifestsDir, f))
  t.same(onDisk.filter((f) => !named.has(f)), [], 'no orphaned manifest')
})

t.test('generators: the ConfigMap and Secret the Deployment reads', async (t) => {
  t.same(
    generators.map((g) => [g.name, g.namespace, g.envs, g.options?.disableNameSuffixHash ?? false]),
    [
      ['challenge-hooks-config', 'challenge-hooks', ['config.env'], false],
      ['challenge-hooks-secrets', 'challenge-hooks', ['secrets.env'], true],
    ],
  )
  const config = readEnvFile(join(manifestsDir, 'config.env'))
  t.same([...config.keys()].filter((k) => !fromConfigMap.includes(k)), [], 'config.env sets only configuration variables')
  t.same(fromConfigMap.filter((k) => !config.has(k)), ['INGRESS_CLASS_NAME', 'INGRESS_TLS_SECRET', 'CLUSTER_CIDRS'], 'optional ones stay unset')
  t.ok([...config.values()].every((v) => v !== ''), 'no empty value (empty is not unset)')
  const secrets = readEnvFile(join(manifestsDir, 'secrets.env'))
  t.same([...secrets.keys()], fromSecret)
  for (const [key, value] of secrets) t.match(value, /^CHANGE-ME-/, `${key} is an obvious placeholder`)
})

t.test('images: the hook server image can be overridden', async (t) => {
  t.same(main.images, [{ name: 'ghcr.io/challenge-hooks/challenge-hooks', newTag: '0.1.0' }])
})

function kustomize(dir: string): { objects?: ManifestObject[]; skip?: string } {
  const result = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 })
  if (result.error !== undefined) return { skip: `kubectl is not available (${result.error.message})` }
  if (result.status !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${result.stderr}`)
  return { objects: parseYamlDocuments(result.stdout, `kubectl kustomize ${dir}`) as ManifestObject[] }
}

const built = kustomize(manifestsDir)
t.test('kubectl kustomize manifests/ resolves every reference', { skip: built.skip ?? false }, async (t) => {
  const objects = built.objects as ManifestObject[]
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind)
  const configMap = byKind('ConfigMap')[0] as ManifestObject & { data: Record<string, string> }
  const secret = byKind('Secret')[0] as ManifestObject & { data: Record<string, string> }
  t.match(configMap.metadata.name, /^challenge-hooks-config-[a-z0-9]{10}$/, 'the ConfigMap name carries a content hash')
  t.same(Object.keys(configMap.data).sort(), ['BASE_DOMAIN', 'INGRESS_NAMESPACE', 'OWNER_BUDGET', 'PUBLIC_HOST'])
  t.same([secret.metadata.name, secret.metadata.namespace], ['challenge-hooks-secrets', 'challenge-hooks'])
  t.same(Object.keys(secret.data).sort(), fromSecret)
  const deployment = byKind('Deployment')[0] as ManifestObject & {
    spec: { template: { spec: { containers: { image: string; envFrom: { configMapRef: { name: string } }[] }[] } } }
  }
  const [container] = deployment.spec.template.spec.containers
  t.equal(container?.envFrom[0]?.configMapRef.name, configMap.metadata.name, 'the Deployment reads the generated ConfigMap')
  t.equal(container?.image, 'ghcr.io/challenge-hooks/challenge-hooks:0.1.0')
  const namespaces = new Set(objects.map((o) => o.metadata.namespace))
  t.same([...namespaces].sort(), ['challenge-hooks', 'challenges', 'metacontroller', undefined])
  t.ok(objects.every((o) => o.metadata.labels?.['app.kubernetes.io/part-of'] === 'challenge-hooks'), 'every object is labelled')
  t.same(byKind('Namespace').map((o) => o.metadata.name), ['challenge-hooks', 'challenges'])
})

const builtExamples = kustomize(join(manifestsDir, 'examples'))
t.test('kubectl kustomize manifests/examples/ puts everything in namespace challenges', { skip: builtExamples.skip ?? false }, async (t) => {
  const objects = builtExamples.objects as ManifestObject[]
  t.equal(objects.length, 4)
  t.ok(objects.every((o) => o.metadata.namespace === 'challenges'))
})
