// The CompositeController: valid for Metacontroller's own CRD (v4.17.2, vendored in
// test/data/), and wired to our CRD, Service and token.
import { join } from 'node:path'
import t from 'tap'
import {
  loadManifests,
  manifestsDir,
  METACONTROLLER_CRDS_FILE,
  metacontrollerCrdsFile,
  readEnvFile,
  readYamlDocuments,
  validateAgainstCrd,
} from '../helpers/manifests.js'
import { loadConfig } from '../../src/config/config.js'

interface Webhook {
  service: { name: string; namespace: string; port: number; protocol: string }
  path: string
  timeout: string
  etag?: { enabled: boolean }
  authorization: { type: string; secretRef: { name: string; namespace: string; key: string } }
}
interface CompositeController {
  metadata: { name: string }
  spec: {
    generateSelector: boolean
    resyncPeriodSeconds: number
    parentResource: { apiVersion: string; resource: string }
    childResources: { apiVersion: string; resource: string; updateStrategy: { method: string } }[]
    hooks: Record<'sync' | 'finalize' | 'customize', { version: string; webhook: Webhook }>
  }
}

const [controller] = readYamlDocuments(join(manifestsDir, 'compositecontroller.yaml')) as [CompositeController]
const objects = loadManifests().map((m) => m.object)
// The vendored file is part of the repository: when it is missing, reading it fails the test (no skip).
const crdsFile = metacontrollerCrdsFile() ?? METACONTROLLER_CRDS_FILE

t.test("valid against Metacontroller's CompositeController CRD", async (t) => {
  const file = crdsFile
  t.strictSame(validateAgainstCrd('CompositeController', controller, { file }), [])
  const broken = structuredClone(controller) as any
  broken.spec.hooks.sync.webhook.etag.enable = true
  broken.spec.hooks.sync.webhook.timeout = '10 seconds'
  broken.spec.childResources[0].updateStrategy.method = 'InPlaceRolling'
  t.strictSame(
    validateAgainstCrd('CompositeController', broken, { file }),
    [
      '/spec/childResources/0/updateStrategy/method must be equal to one of the allowed values (OnDelete,Recreate,InPlace,RollingRecreate,RollingInPlace)',
      '/spec/hooks/sync/webhook/etag must NOT have additional properties (enable)',
      '/spec/hooks/sync/webhook/timeout must match format "duration"',
    ],
    'the schema bites',
  )
})

t.test('parent, children and selector', async (t) => {
  t.equal(controller.metadata.name, 'challenge-hooks')
  t.strictSame(controller.spec.parentResource, { apiVersion: 'challenge-hooks.dev/v1alpha1', resource: 'challenges' })
  t.equal(controller.spec.generateSelector, true)
  // A backstop no longer than the hook's own resync cap would be a second timer syncing every parent at rest.
  t.equal(controller.spec.resyncPeriodSeconds, 1800)
  t.ok(
    controller.spec.resyncPeriodSeconds >= 6 * loadConfig({}).maxResyncSeconds,
    'the backstop is far longer than the hook resync cap',
  )
  t.strictSame(
    controller.spec.childResources.map((c) => `${c.apiVersion} ${c.resource} ${c.updateStrategy.method}`),
    [
      'v1 secrets InPlace',
      'networking.k8s.io/v1 networkpolicies InPlace',
      // A new pod for each change: a restart is a new pod, and a pod's spec cannot be changed in place.
      'v1 pods Recreate',
      // No longer a child the hook answers: listed so that Metacontroller deletes an earlier release's Deployment.
      'apps/v1 deployments InPlace',
      'v1 services InPlace',
      'networking.k8s.io/v1 ingresses InPlace',
    ],
  )
})

t.test('hooks: v1, through the Service, 10 s, bearer token; ETag on sync', async (t) => {
  const service = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'challenge-hooks') as unknown as {
    metadata: { name: string; namespace: string }
    spec: { ports: { port: number }[] }
  }
  t.strictSame(Object.keys(controller.spec.hooks).sort(), ['customize', 'finalize', 'sync'])
  for (const name of ['sync', 'finalize', 'customize'] as const) {
    const hook = controller.spec.hooks[name]
    t.equal(hook.version, 'v1', `${name} version`)
    t.strictSame(
      hook.webhook.service,
      {
        name: service.metadata.name,
        namespace: service.metadata.namespace,
        port: service.spec.ports[0]?.port,
        protocol: 'http',
      },
      `${name} goes through Service challenge-hooks`,
    )
    t.equal(hook.webhook.path, `/${name}`)
    t.equal(hook.webhook.timeout, '10s')
    t.strictSame(
      hook.webhook.authorization,
      {
        type: 'Bearer',
        secretRef: { name: 'challenge-hooks-secrets', namespace: 'challenge-hooks', key: 'HOOK_TOKEN' },
      },
      `${name} sends the token`,
    )
  }
  t.strictSame(controller.spec.hooks.sync.webhook.etag, { enabled: true })
  t.equal(controller.spec.hooks.finalize.webhook.etag, undefined)
})

t.test("the token Secret Metacontroller reads is the hook server's, with a stable name", async (t) => {
  const kustomization = readYamlDocuments(join(manifestsDir, 'secrets', 'kustomization.yaml'))[0] as {
    secretGenerator: {
      name: string
      namespace: string
      envs: string[]
      options?: { disableNameSuffixHash?: boolean }
    }[]
  }
  const { secretRef } = controller.spec.hooks.sync.webhook.authorization
  const generator = kustomization.secretGenerator.find((g) => g.name === secretRef.name)
  t.match(generator, { namespace: secretRef.namespace, options: { disableNameSuffixHash: true } })
  t.strictSame(generator?.envs, ['secrets.env'])
  const env = readEnvFile(join(manifestsDir, 'secrets', 'secrets.env.example'))
  t.match(env.get(secretRef.key), /CHANGE-ME/, 'the committed example token is a placeholder the server refuses')
  t.match(env.get('FLAG_SECRET'), /CHANGE-ME/, 'so is the flag secret')
})

t.test(
  "the warm pools' controller: definitions as parents, InPlace children, the pool hooks with the same token",
  async (t) => {
    const [pools] = readYamlDocuments(join(manifestsDir, 'pool-controller.yaml')) as [CompositeController]
    t.strictSame(validateAgainstCrd('CompositeController', pools, { file: crdsFile }), [])
    t.equal(pools.metadata.name, 'challenge-hooks-pools')
    t.strictSame(pools.spec.parentResource, {
      apiVersion: 'challenge-hooks.dev/v1alpha1',
      resource: 'challengedefinitions',
    })
    t.equal(pools.spec.generateSelector, true)
    t.equal(pools.spec.resyncPeriodSeconds, 1800)
    t.strictSame(
      pools.spec.childResources.map((c) => `${c.apiVersion} ${c.resource} ${c.updateStrategy.method}`),
      [
        // A claim is a label on the pod: Recreate would delete the pod for it. InPlace is a compare-and-swap.
        'v1 pods InPlace',
        'v1 secrets InPlace',
        'networking.k8s.io/v1 networkpolicies InPlace',
        // The pre-pull: a changed image is a changed template, which the DaemonSet rolls.
        'apps/v1 daemonsets InPlace',
      ],
    )
    t.strictSame(
      Object.keys(pools.spec.hooks).sort(),
      ['customize', 'sync'],
      'no finalize: no finalizer on a definition',
    )
    for (const name of ['sync', 'customize'] as const) {
      t.strictSame(
        pools.spec.hooks[name],
        {
          ...controller.spec.hooks[name],
          webhook: { ...controller.spec.hooks[name].webhook, path: `/pools/${name}` },
        },
        `${name}: as the Challenges' controller's, at /pools/${name}`,
      )
    }
    t.ok(
      objects.some((o) => o.kind === 'CompositeController' && o.metadata.name === 'challenge-hooks-pools'),
      'installed by the kustomization',
    )
  },
)
