// The gateway component (manifests/components/gateway): its rights (Challenges and definitions, nothing on Secrets),
// a pod hardened as the hook server's, a configuration the gateway starts with, and what it changes of the hook
// server. On the real API server: test/cluster/gateway.test.ts (its ServiceAccount may not read Secrets).
import { join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { loadGatewayConfig } from '../../src/config/config-gateway.js'
import { componentsDir, loadManifests, readEnvFile, readYamlDocuments, withComponents } from '../helpers/manifests.js'

type Json = Record<string, any>
const dir = join(componentsDir, 'gateway')
const objects = readYamlDocuments(join(dir, 'gateway.yaml')) as Json[]
const find = (kind: string, from: Json[] = objects) => from.find((o) => o.kind === kind) as Json

t.test('the rights: Challenges and ChallengeDefinitions in the challenges namespace, nothing else', async (t) => {
  t.strictSame(find('ClusterRole').rules, [
    {
      apiGroups: ['challenge-hooks.dev'],
      resources: ['challenges'],
      verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    },
    { apiGroups: ['challenge-hooks.dev'], resources: ['challengedefinitions'], verbs: ['get', 'list', 'watch'] },
  ])
  t.strictSame(
    [find('RoleBinding').metadata.namespace, find('RoleBinding').roleRef.name, find('RoleBinding').subjects],
    [
      'challenges',
      'challenge-gateway',
      [{ kind: 'ServiceAccount', name: 'challenge-gateway', namespace: 'challenge-hooks' }],
    ],
  )
  t.equal(objects.filter((o) => o.kind === 'ClusterRoleBinding').length, 0, 'no cluster-wide binding')
})

t.test(
  "the pod: the same image, the gateway bundle, hardened as the hook server, off the players' nodes",
  async (t) => {
    const pod = find('Deployment').spec.template.spec
    const hookPod = (loadManifests().find((m) => m.object.kind === 'Deployment')?.object as Json).spec.template.spec
    const container = pod.containers[0]
    t.equal(container.image, hookPod.containers[0].image)
    t.strictSame(container.args, ['dist/gateway-server.js'])
    t.strictSame(container.securityContext, hookPod.containers[0].securityContext)
    t.strictSame(pod.securityContext, hookPod.securityContext)
    t.strictSame(pod.affinity, hookPod.affinity)
    t.equal(pod.serviceAccountName, 'challenge-gateway')
    t.equal(pod.automountServiceAccountToken, undefined, 'the token is mounted: the gateway calls the API server')
    t.strictSame(
      pod.volumes.find((v: Json) => v.name === 'platforms').secret.items,
      [{ key: 'platforms.yaml', path: 'platforms.yaml' }],
      'only the platforms file of its Secret is mounted',
    )
    t.strictSame(find('Service').spec.ports, [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }])
  },
)

t.test('the gateway starts with what the component gives it', async (t) => {
  const container = find('Deployment').spec.template.spec.containers[0]
  const env = Object.fromEntries(
    (container.env as Json[]).map((e) => [
      e.name,
      e.value ?? `a value from the Secret, ${e.valueFrom.secretKeyRef.key}, 0123456789abcdef`,
    ]),
  )
  const config = loadGatewayConfig({ ...env, ...Object.fromEntries(readEnvFile(join(dir, 'gateway.env'))) })
  t.strictSame(
    [config.port, config.platformsFile, config.flagVerify?.url, config.audience, config.ownerBudget],
    [
      8090,
      '/etc/challenge-gateway/platforms.yaml',
      'http://challenge-hooks.challenge-hooks.svc:8080/flags/verify',
      'https://gateway.ctf.example.org',
      3,
    ],
  )
  t.equal(container.ports[0].containerPort, config.port)
})

t.test(
  "the hook server: FLAG_VERIFY_TOKEN from the gateway's Secret, its port open to the gateway's pods",
  async (t) => {
    const base = loadManifests().map((m) => m.object) as Json[]
    const patched = withComponents(base as never[], ['gateway']) as Json[]
    const env = find('Deployment', patched).spec.template.spec.containers[0].env as Json[]
    t.strictSame(env.at(-1), {
      name: 'FLAG_VERIFY_TOKEN',
      valueFrom: { secretKeyRef: { name: 'challenge-gateway-secrets', key: 'FLAG_VERIFY_TOKEN' } },
    })
    t.equal(loadConfig({ FLAG_VERIFY_TOKEN: 'x' }).flagVerifyToken, 'x')
    const policy = patched.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'challenge-hooks') as Json
    t.strictSame(policy.spec.ingress.at(-1), {
      from: [
        {
          podSelector: {
            matchLabels: { 'app.kubernetes.io/name': 'challenge-hooks', 'app.kubernetes.io/component': 'gateway' },
          },
        },
      ],
      ports: [{ protocol: 'TCP', port: 8080 }],
    })
  },
)
