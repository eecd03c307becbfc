// The warm pools' controller end to end: the hook server behind the simulator (a Metacontroller stand-in: generated
// selector, InPlace updates, related objects, the definition's status subresource), the CompositeController exactly as
// manifests/pool-controller.yaml declares it, and the ChallengeDefinition CRD. What each step must leave in the
// cluster is written out from docs/api.md ("Warm pools").
import { createHmac } from 'node:crypto'
import t, { type Test } from 'tap'
import { loadConfig } from '../../src/config/config.js'
import { buildApp } from '../../src/http/app.js'
import { TEST_ENV } from '../helpers/app.js'
import { controllerRef } from '../helpers/world.js'
import {
  Cluster,
  injectTransport,
  Simulator,
  type CompositeController,
  type KubeObject,
} from '../support/simulator/index.js'
import { API, challenge, challengeCrd, definitionCrd, example, NS, repoRoot, type Json } from './harness.js'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'

/** The cluster's objects, read as the test walks them. */
type Any = Record<string, any>

const TOKEN = 'pools-e2e-token'
const FLAG_SECRET = 'pools-e2e-flag-secret'
const poolController = parse(
  readFileSync(join(repoRoot, 'manifests/pool-controller.yaml'), 'utf8'),
) as CompositeController

async function poolWorld(t: Test) {
  const cluster = new Cluster()
  cluster.registerCRD(challengeCrd)
  cluster.registerCRD(definitionCrd)
  const controller = cluster.create(
    poolController as unknown as KubeObject,
    'kubectl',
  ) as unknown as CompositeController
  const config = loadConfig({ ...TEST_ENV, HOOK_TOKEN: TOKEN, FLAG_SECRET })
  const app = await buildApp(config, { logger: false, now: () => cluster.now() })
  const hooks = poolController.spec.hooks as Record<'sync' | 'customize', { webhook: { path: string } }>
  const transport = injectTransport(app, {
    token: TOKEN,
    paths: { sync: hooks.sync.webhook.path, customize: hooks.customize.webhook.path },
  })
  const sim = new Simulator(controller, cluster, transport)
  t.teardown(async () => {
    sim.close()
    await app.close()
  })
  const list = (kind: string) =>
    cluster
      .list('v1', kind, NS)
      .filter((object) => !object.metadata.deletionTimestamp)
      .map((object) => object.metadata.name)
      .sort()
  const definitionStatus = () =>
    (cluster.get({ apiVersion: API, kind: 'ChallengeDefinition', namespace: NS, name: 'web-login' })?.status ??
      {}) as Json
  // The Challenge's part, which this world does not run: the ticket its hook writes on its Service (docs/api.md,
  // "What the pool sees of its claimants"), created by Metacontroller as the Challenge's child; none once it ends.
  const setTicket = (name: string, ticket: { state: string; pod?: string } | undefined) => {
    const ref = { apiVersion: 'v1', kind: 'Service', namespace: NS, name }
    const current = cluster.get(ref)
    if (ticket === undefined) {
      if (current !== undefined) cluster.delete(ref)
      return
    }
    const owner = cluster.get({ apiVersion: API, kind: 'Challenge', namespace: NS, name }) as KubeObject
    const service = {
      ...(current ?? {}),
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        ...(current?.metadata ?? {}),
        name,
        namespace: NS,
        labels: { 'challenge-hooks.dev/pool-ticket': 'web-login' },
        annotations: {
          'challenge-hooks.dev/pool-state': ticket.state,
          ...(ticket.pod === undefined ? {} : { 'challenge-hooks.dev/pool-pod': ticket.pod }),
          'challenge-hooks.dev/admitted-at': cluster.timestamp(),
        },
        ownerReferences: [controllerRef(owner.metadata.uid as string, name)],
      },
      spec: { ports: [{ name: 'challenge', protocol: 'TCP', port: 8080, targetPort: 8080 }] },
    } as unknown as KubeObject
    if (current === undefined) cluster.create(service, 'metacontroller')
    else cluster.update(service, 'metacontroller')
  }
  return { cluster, sim, list, definitionStatus, setTicket }
}

const flagOf = (uid: string) =>
  Buffer.from(`flag{${createHmac('sha256', FLAG_SECRET).update(uid).digest('hex').slice(0, 32)}}`).toString('base64')

t.test('a pool fills, serves a waiting Challenge, refills, and gives the pod up when the run ends', async (t) => {
  const { cluster, sim, list, definitionStatus, setTicket } = await poolWorld(t)
  cluster.create(example('web-login', { flag: { mode: 'PerInstance' }, pool: { size: 2 } }), 'kubectl')
  await sim.runUntilQuiet()
  cluster.settle()
  await sim.runUntilQuiet()

  t.strictSame(list('Pod'), ['web-login.pool-0', 'web-login.pool-1'])
  t.strictSame(list('Secret'), ['web-login.pool-0-flag', 'web-login.pool-1-flag'])
  for (const name of list('Pod')) {
    const pod = cluster.get({ apiVersion: 'v1', kind: 'Pod', namespace: NS, name }) as KubeObject
    const secret = cluster.get({ apiVersion: 'v1', kind: 'Secret', namespace: NS, name: `${name}-flag` }) as KubeObject
    const uid = secret.metadata.uid as string
    t.equal(pod.metadata.annotations?.['challenge-hooks.dev/flag-uid'], uid, `${name}: its flag is its Secret's uid's`)
    t.strictSame(secret.data, { flag: flagOf(uid) }, `${name}: the PerInstance flag of that uid`)
    const definitionUid = cluster.get({
      apiVersion: API,
      kind: 'ChallengeDefinition',
      namespace: NS,
      name: 'web-login',
    })?.metadata.uid
    t.ok(
      (pod.metadata.ownerReferences ?? []).some((ref) => ref.controller === true && ref.uid === definitionUid),
      `${name}: the definition's child`,
    )
  }
  t.strictSame(
    (cluster.list('networking.k8s.io/v1', 'NetworkPolicy', NS) ?? []).map((policy) => policy.metadata.name),
    ['web-login.pool-isolate'],
  )
  t.match(definitionStatus(), { pool: { state: 'Ready', size: 2 } })
  const since = (definitionStatus().pool as Json).since

  cluster.create(challenge('web-login', 'alice'), 'ctf-platform')
  setTicket('web-login-u-alice', { state: 'Waiting' })
  await sim.runUntilQuiet()
  const alice = cluster.get({ apiVersion: API, kind: 'Challenge', namespace: NS, name: 'web-login-u-alice' })
  const claimed = cluster.get({ apiVersion: 'v1', kind: 'Pod', namespace: NS, name: 'web-login.pool-0' })
  t.equal(claimed?.metadata.labels?.['challenge-hooks.dev/claimed-by'], alice?.metadata.uid, 'the lowest pod claimed')
  t.strictSame(list('Pod'), ['web-login.pool-0', 'web-login.pool-1', 'web-login.pool-2'], 'and a pod made to refill')
  t.match(definitionStatus(), { pool: { state: 'Ready', since } }, 'still Ready: the status was not written again')

  setTicket('web-login-u-alice', { state: 'Claimed', pod: 'web-login.pool-0' })
  await sim.runUntilQuiet()
  t.equal(
    cluster.get({ apiVersion: 'v1', kind: 'Pod', namespace: NS, name: 'web-login.pool-0' })?.metadata.labels?.[
      'challenge-hooks.dev/claimed-by'
    ],
    alice?.metadata.uid,
    'the claim stays while the Challenge records the pod',
  )

  // The run ends: its Service goes, and with it the ticket.
  setTicket('web-login-u-alice', undefined)
  await sim.runUntilQuiet()
  cluster.settle()
  await sim.runUntilQuiet()
  t.notOk(list('Pod').includes('web-login.pool-0'), 'the released pod is deleted')
  t.notOk(list('Secret').includes('web-login.pool-0-flag'), 'and its flag Secret once the pod is gone')
  t.strictSame(list('Pod'), ['web-login.pool-1', 'web-login.pool-2'], 'two free pods stay')
})

t.test('a definition that pre-pulls: its DaemonSet, its pods related, its status.images from them', async (t) => {
  const { cluster, sim, definitionStatus } = await poolWorld(t)
  cluster.create(example('web-login', { prepull: 'Pull' }), 'kubectl')
  await sim.runUntilQuiet()
  const daemonSet = cluster.get({ apiVersion: 'apps/v1', kind: 'DaemonSet', namespace: NS, name: 'web-login.images' })
  const definitionUid = cluster.get({ apiVersion: API, kind: 'ChallengeDefinition', namespace: NS, name: 'web-login' })
    ?.metadata.uid
  t.ok(
    (daemonSet?.metadata.ownerReferences ?? []).some((ref) => ref.controller === true && ref.uid === definitionUid),
    "the definition's child",
  )
  const images = ((daemonSet?.spec as Any).template.spec.volumes as Any[]).map((volume) => volume.image.reference)
  const web = (example('web-login').spec as Any).pod.containers[0].image as string
  t.strictSame(images, [loadConfig(TEST_ENV).isolationGate.image, web])
  t.match(definitionStatus(), { images: { state: 'Pulling', nodes: 0 } })

  // The DaemonSet controller's part, which the simulator does not play: its status and its pod on one node.
  cluster.updateStatus(
    { ...(daemonSet as KubeObject), status: { observedGeneration: 1, desiredNumberScheduled: 1 } },
    'kube-controller-manager',
  )
  const template = (daemonSet?.spec as Any).template
  const pod = cluster.create(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'web-login.images-x1',
        namespace: NS,
        labels: template.metadata.labels,
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'DaemonSet',
            name: 'web-login.images',
            uid: daemonSet?.metadata.uid,
            controller: true,
          },
        ],
      },
      spec: { ...template.spec, nodeName: 'node-1' },
    } as unknown as KubeObject,
    'kube-controller-manager',
  )
  // As the kubelet writes it: through the status subresource (a create drops the status).
  cluster.updateStatus(
    {
      ...pod,
      status: {
        containerStatuses: [
          { name: 'image-0', state: { running: { startedAt: cluster.timestamp() } } },
          { name: 'image-1', state: { running: { startedAt: cluster.timestamp() } } },
        ],
      },
    },
    'kubelet',
  )
  await sim.runUntilQuiet()
  t.match(definitionStatus(), {
    images: {
      state: 'Ready',
      nodes: 1,
      images: [
        { desired: 1, ready: 1, failed: 0 },
        { image: web, desired: 1, ready: 1, failed: 0 },
      ],
    },
  })
})
