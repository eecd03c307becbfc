// Real pulls from the suite's registry (test/support/node/registry.ts: on the node's loopback, named
// `registry.test`), by the kubelet and containerd: an image that is only in the registry is pulled and runs; an image
// the registry does not have leaves the instance Pending / ImagePullBackOff with the contract's message; alice's
// private image is pulled only with the pull Secret her register lists, refused without one and with a wrong
// password, and once on the node it is not run for a pod without her credentials (the kubelet asks the registry
// again: KubeletEnsureSecretPulledImages, docs/install.md).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { eventually } from '../support/eventually.js'
import { registerAuthors } from '../support/kube/install.js'
import {
  app,
  definition,
  kubeletSaid,
  running,
  startNodeSuite,
  REGISTRY_NAME,
  REGISTRY_PRIVATE,
  type Json,
  type Scenario,
} from '../support/node/harness.js'
import { imagesOnNode, pullSecret, pushImage } from '../support/node/registry.js'

const suite = await startNodeSuite(t)

/** The player's message while an image cannot be pulled (docs/api.md, Phases and reasons). */
const PULL_MESSAGE = 'The image of container app cannot be pulled yet; retrying.'

/**
 * A NodePort instance of one container of `reference` (the test image http-app, listening on 8080), whose pod names
 * these pull Secrets.
 */
function pulled(reference: string, pullSecrets: string[] = []): Json {
  const pod = app('http-app', 8080, { image: reference })
  return {
    pod: pullSecrets.length === 0 ? pod : { ...pod, imagePullSecrets: pullSecrets.map((name) => ({ name })) },
    expose: { type: 'NodePort', port: 8080 },
    network: { egress: 'None' },
  }
}

/** The instance's pod's container `app`, as the kubelet reports it. */
async function appStatus(s: Scenario, instance: string): Promise<Json | undefined> {
  const pods = (await s.list(`/api/v1/namespaces/${s.ns}/pods`)).filter(
    (pod) => pod.metadata.labels?.['challenge-hooks.dev/instance'] === instance,
  )
  return pods
    .flatMap((pod) => ((pod.status as Json | undefined)?.containerStatuses ?? []) as Json[])
    .find((status) => status.name === 'app')
}

/**
 * Waits until the instance is refused its image, runs, or fails; returns its phase, reason and message, and the
 * kubelet's first `Failed to pull image` event (what containerd said the registry answered).
 */
async function pullOutcome(s: Scenario, instance: string): Promise<{ status: Json; pullError: string }> {
  const status = await s.until(
    instance,
    (status) => status.phase === 'Running' || status.phase === 'Error' || status.reason === 'ImagePullBackOff',
    'its image pulled or refused',
    120_000,
  )
  const pullError =
    status.reason === 'ImagePullBackOff'
      ? await eventually(`the kubelet's event of ${instance}'s refused pull`, async () =>
          (await kubeletSaid(s, instance, 'Failed')).find((message) => message.startsWith('Failed to pull image')),
        )
      : ''
  return { status: { phase: status.phase, reason: status.reason, message: status.message }, pullError }
}

/** The registry's refusals so far, from its log: the credentials each refused request had (`missing`, `wrong`). */
function registryRefusals(): string[] {
  const log = readFileSync(join(process.env.NODE_RUN_DIR ?? '', 'logs', 'registry.log'), 'utf8')
  return [...log.matchAll(/ refused \(credentials (\w+)\)/g)].map((match) => match[1] as string)
}

t.test('an image only in the registry: pulled by the node, then Running', async (t) => {
  const s = await suite.scenario(t, 'pull')
  const [image] = await pushImage('http-app', ['public/http-app:only-there'], { unique: true })
  if (image === undefined) throw new Error('nothing pushed')
  t.equal((await imagesOnNode()).includes(image.reference), false, 'the image is not on the node before')
  await s.create(definition('web', pulled(image.reference)))
  await s.create(s.challenge('web', 'alice'))
  await running(s, 'web-u-alice', 120_000)
  const container = await appStatus(s, 'web-u-alice')
  const pulls = await kubeletSaid(s, 'web-u-alice', 'Pulled')
  t.comment(`the kubelet: ${pulls.join(' | ')}`)
  t.strictSame(
    {
      onNode: (await imagesOnNode()).includes(image.reference),
      imageID: container?.imageID,
      pulled: pulls.map((message) => message.startsWith(`Successfully pulled image "${image.reference}" in `)),
    },
    { onNode: true, imageID: `${REGISTRY_NAME}/public/http-app@${image.digest}`, pulled: [true] },
    'containerd pulled the pushed manifest, once, and runs it',
  )
})

t.test('an image the registry does not have: Pending / ImagePullBackOff with the contract message', async (t) => {
  const s = await suite.scenario(t, 'pull-missing')
  const reference = `${REGISTRY_NAME}/public/nowhere:1`
  await s.create(definition('web', pulled(reference)))
  await s.create(s.challenge('web', 'alice'))
  const { status, pullError } = await pullOutcome(s, 'web-u-alice')
  t.comment(`the kubelet: ${pullError}`)
  t.strictSame(status, { phase: 'Pending', reason: 'ImagePullBackOff', message: PULL_MESSAGE }, 'what the player sees')
  t.match(pullError, /: not found$/, 'the registry answered: no such image')
})

t.test("alice's private image: pulled only with the pull Secret her register lists", async (t) => {
  const s = await suite.scenario(t, 'pull-private')
  const [image] = await pushImage('http-app', [`${REGISTRY_PRIVATE.prefix}web:1`], { unique: true })
  if (image === undefined) throw new Error('nothing pushed')
  const alice = { user: 'alice@example.org', groups: ['challenge-authors'] }
  await registerAuthors(suite, s.ns, [
    {
      user: alice.user,
      imagePrefixes: [`${REGISTRY_NAME}/${REGISTRY_PRIVATE.prefix}`],
      imagePullSecrets: ['alice-pull', 'alice-pull-stale'],
      secretPrefix: 'alice-',
      definitionNames: ['alices-*'],
    },
  ])
  await suite.rest.call('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${s.ns}/rolebindings`, {
    body: {
      metadata: { name: 'authors' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'challenge-hooks-author' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'challenge-authors' }],
    },
  })
  // The operator's pull Secrets (authors cannot write them): the registry's credentials, and a stale password.
  for (const secret of [
    pullSecret('alice-pull', REGISTRY_PRIVATE.user, REGISTRY_PRIVATE.password),
    pullSecret('alice-pull-stale', REGISTRY_PRIVATE.user, 'an-old-password'),
  ])
    await suite.rest.call('POST', `/api/v1/namespaces/${s.ns}/secrets`, { body: secret })
  // alice's definitions, written by alice: the API server holds them to her register.
  const asAlice = async (name: string, pullSecrets: string[]) => {
    const body = definition(name, pulled(image.reference, pullSecrets))
    body.metadata.annotations = { 'challenge-hooks.dev/author': alice.user }
    await suite.rest.call('POST', `/apis/challenge-hooks.dev/v1alpha1/namespaces/${s.ns}/challengedefinitions`, {
      body,
      as: alice,
    })
  }
  await asAlice('alices-open', [])
  await asAlice('alices-stale', ['alice-pull-stale'])
  await asAlice('alices-web', ['alice-pull'])

  // containerd's words: the registry's Basic challenge met no credentials, or refused the ones it got.
  const noCredentials = /: authorization failed: no basic auth credentials$/
  const refusedCredentials = /: 401 Unauthorized$/
  await refused(t, s, 'alices-open', 'bob', 'without a pull Secret', ['missing'], noCredentials)
  // containerd asks without credentials first, then with the Secret's after the registry's Basic challenge.
  await refused(t, s, 'alices-stale', 'bob', 'with a wrong password', ['missing', 'wrong'], refusedCredentials)
  t.equal((await imagesOnNode()).includes(image.reference), false, 'the private image is not on the node yet')

  await s.create(s.challenge('alices-web', 'alice'))
  await running(s, 'alices-web-u-alice', 120_000)
  t.strictSame(
    {
      onNode: (await imagesOnNode()).includes(image.reference),
      imageID: (await appStatus(s, 'alices-web-u-alice'))?.imageID,
    },
    { onNode: true, imageID: `${REGISTRY_NAME}/${REGISTRY_PRIVATE.prefix}web@${image.digest}` },
    "with alice's pull Secret: pulled and Running",
  )

  // The image is on the node now: a pod without alice's credentials still does not get to run it.
  await refused(t, s, 'alices-open', 'carol', 'cached on the node, without a pull Secret', ['missing'], noCredentials)
})

/**
 * Creates an instance of `definitionName` for `owner` and asserts that the pull is refused: the player's status,
 * the kubelet's event, and what the registry saw of the requests it refused (the credentials they had).
 */
async function refused(
  t: Test,
  s: Scenario,
  definitionName: string,
  owner: string,
  how: string,
  credentials: string[],
  said: RegExp,
): Promise<void> {
  const instance = `${definitionName}-u-${owner}`
  const before = registryRefusals().length
  await s.create(s.challenge(definitionName, owner))
  const { status, pullError } = await pullOutcome(s, instance)
  t.comment(`${how}: the kubelet: ${pullError}`)
  t.strictSame(
    status,
    { phase: 'Pending', reason: 'ImagePullBackOff', message: PULL_MESSAGE },
    `${how}: what the player sees`,
  )
  t.match(pullError, said, `${how}: containerd was refused`)
  t.strictSame(
    [...new Set(registryRefusals().slice(before))].sort(),
    credentials,
    `${how}: the registry refused requests with credentials ${credentials.join(' and ')}`,
  )
  // Gone before the next step, whose refusals would otherwise mix with this pod's retries.
  await s.suite.rest.call('DELETE', `/apis/challenge-hooks.dev/v1alpha1/namespaces/${s.ns}/challenges/${instance}`)
  await eventually(
    `${instance}'s pod gone`,
    async () =>
      (await s.list(`/api/v1/namespaces/${s.ns}/pods`)).every(
        (pod) => pod.metadata.labels?.['challenge-hooks.dev/instance'] !== instance,
      ),
    () => '',
    { timeoutMs: 60_000 },
  )
}
