// Pre-pulled images on the real node (docs/api.md, "Pre-pulled images"): a definition's DaemonSet `<d>.images` pulls
// its images onto the node through image volumes before anyone starts an instance, by the kubelet and containerd from
// the suite's registry (test/support/node/registry.ts). With `prepull: Hold` a Challenge waits, not admitted, until
// the definition's status.images is Ready, then starts on the image already on the node; an image the registry does
// not have makes the definition Failed, naming the node and why; a changed image rolls the DaemonSet and is pulled in
// its turn; a private image is pre-pulled with the definition's pull Secrets. Prints definition create → images Ready,
// and Challenge create → Running after the pre-pull beside a cold pull of a copy of the same image.
import t from 'tap'
import type { Test } from 'tap'
import { eventually } from '../support/eventually.js'
import { AUTHOR } from '../support/kube/names.js'
import {
  app,
  definition,
  kubeletSaid,
  running,
  startNodeSuite,
  NODE_NAME,
  REGISTRY_NAME,
  REGISTRY_PRIVATE,
  type Json,
  type Scenario,
} from '../support/node/harness.js'
import { HOOK_IMAGE } from '../support/node/hook-image.js'
import { imagesOnNode, pullSecret, pushImage } from '../support/node/registry.js'

const suite = await startNodeSuite(t)

/** What a held Challenge says (docs/api.md, Phases and reasons: "the message says on how many they are"). */
const BEFORE_ANY_COUNT =
  "The challenge's images are being pulled onto the nodes; the instance starts once they are there."
const NONE_OF_ONE = "The challenge's images are on 0 of 1 nodes; the instance starts once they are on every one."

/** A NodePort instance of one container of `reference` (the test image http-app, listening on 8080). */
function pulled(reference: string, extra: Json = {}, pullSecrets: string[] = []): Json {
  const pod = app('http-app', 8080, { image: reference })
  return {
    pod: pullSecrets.length === 0 ? pod : { ...pod, imagePullSecrets: pullSecrets.map((name) => ({ name })) },
    expose: { type: 'NodePort', port: 8080 },
    network: { egress: 'None' },
    ...extra,
  }
}

/** One image of status.images, as the contract says it when every node holds it. */
function onEveryNode(image: string, nodes = 1): Json {
  return { image, desired: nodes, ready: nodes, failed: 0, failures: [] }
}

function definitionPath(s: Scenario, name: string): string {
  return `/apis/challenge-hooks.dev/v1alpha1/namespaces/${s.ns}/challengedefinitions/${name}`
}

/** The definition's status.images, when it has one. */
async function imagesStatus(s: Scenario, name: string): Promise<Json | undefined> {
  const found = await s.suite.rest.find<{ status?: { images?: Json } }>(definitionPath(s, name))
  return found?.status?.images
}

/** Waits until the definition's status.images satisfies `ready`; returns it and ms from `since`. */
async function imagesUntil(
  s: Scenario,
  name: string,
  ready: (images: Json) => boolean,
  what: string,
  since: number,
  timeoutMs = 120_000,
): Promise<{ images: Json; after: number }> {
  let last: Json | undefined
  const images = await eventually(
    `${s.ns}/${name}: status.images ${what}`,
    async () => {
      last = await imagesStatus(s, name)
      return last !== undefined && ready(last) ? last : undefined
    },
    async () => `${JSON.stringify(last)}; ${await prepullPods(s, name)}`,
    { timeoutMs, intervalMs: 50 },
  )
  return { images, after: Date.now() - since }
}

/** status.images without its time: what a strictSame compares (`since` is checked to be a time apart). */
function withoutSince(images: Json): Json {
  const { since, ...rest } = images
  if (typeof since !== 'string' || Number.isNaN(Date.parse(since))) throw new Error(`status.images.since: ${since}`)
  return rest
}

/** The pre-pull DaemonSet's pods of the definition, with their node and containers' states (for a failure's text). */
async function prepullPods(s: Scenario, name: string): Promise<string> {
  const pods = (await s.list(`/api/v1/namespaces/${s.ns}/pods`)).filter(
    (pod) => pod.metadata.labels?.['challenge-hooks.dev/prepull'] === name,
  )
  return JSON.stringify(
    pods.map((pod) => ({
      name: pod.metadata.name,
      node: (pod.spec as Json | undefined)?.nodeName,
      containers: ((pod.status as Json | undefined)?.containerStatuses as Json[] | undefined)?.map((c) => ({
        name: c.name,
        state: c.state,
      })),
    })),
  )
}

/** What the kubelet said of the pre-pull pods of the definition (reason: message), oldest first. */
async function prepullEvents(s: Scenario, name: string): Promise<string[]> {
  const { items } = await s.suite.rest.get<{
    items: { involvedObject: { name: string; fieldPath?: string }; reason: string; message: string }[]
  }>(`/api/v1/namespaces/${s.ns}/events`)
  return items
    .filter((event) => event.involvedObject.name.startsWith(`${name}.images-`))
    .map(
      (event) =>
        `${event.reason}${event.involvedObject.fieldPath ? ` ${event.involvedObject.fieldPath}` : ''}: ${event.message}`,
    )
}

/** The kubelet's pull time of `reference` for an instance's container app, from its `Successfully pulled` event. */
async function pullTime(s: Scenario, instance: string, reference: string): Promise<string> {
  const said = (await kubeletSaid(s, instance, 'Pulled')).find((message) =>
    message.startsWith(`Successfully pulled image "${reference}" in `),
  )
  return said?.replace(/^Successfully pulled image "[^"]+" in /, '').replace(/\. Image size.*$/, '') ?? '(no pull)'
}

/** Pushes a copy of http-app with a layer of its own (nothing of it is on the node); its reference. */
async function pushed(t: Test, target: string): Promise<string> {
  const [image] = await pushImage('http-app', [target], { unique: true })
  if (image === undefined) throw new Error(`nothing pushed as ${target}`)
  t.equal((await imagesOnNode()).includes(image.reference), false, `${image.reference} is not on the node before`)
  return image.reference
}

/** Creates a Challenge and waits until it is Running; ms from create. */
async function startTimed(s: Scenario, definitionName: string, owner: string): Promise<number> {
  const since = Date.now()
  await s.create(s.challenge(definitionName, owner))
  await running(s, `${definitionName}-u-${owner}`, 120_000)
  return Date.now() - since
}

t.test('Hold: the images are on the node before the first instance is admitted, which pulls nothing', async (t) => {
  const s = await suite.scenario(t, 'prepull-hold')
  const reference = await pushed(t, 'public/prepull-web:1')
  const since = Date.now()
  await s.create(definition('web', pulled(reference, { prepull: 'Hold' })))
  const readyWait = imagesUntil(s, 'web', (images) => images.state === 'Ready', 'Ready', since)
  await s.create(s.challenge('web', 'alice'))

  // Held meanwhile: every status read while it waits says ImagesPulling, with the count where there is one.
  const heldMessages = new Set<string>()
  const admitted = await s.until(
    'web-u-alice',
    (status) => {
      if (status.reason === 'ImagesPulling') heldMessages.add(`${status.phase}/${String(status.message)}`)
      return status.admittedAt !== undefined
    },
    'admitted',
    120_000,
  )
  const ready = await readyWait
  t.strictSame(
    withoutSince(ready.images),
    { state: 'Ready', nodes: 1, images: [onEveryNode(HOOK_IMAGE), onEveryNode(reference)] },
    "the definition's status.images: the isolation gate's image and the app's, each on the one node",
  )
  t.comment(`the pre-pull pod: ${(await prepullEvents(s, 'web')).join(' | ')}`)
  t.strictSame(
    [...heldMessages].filter((said) => said !== `Pending/${BEFORE_ANY_COUNT}` && said !== `Pending/${NONE_OF_ONE}`),
    [],
    `held as Pending / ImagesPulling with the contract's message (seen: ${[...heldMessages].join(' | ')})`,
  )
  t.ok(heldMessages.size > 0, 'the Challenge was seen held before its admission')
  t.ok(
    Date.parse(String(admitted.admittedAt)) >= Date.parse(String(ready.images.since)),
    `admitted (${String(admitted.admittedAt)}) no earlier than the images were Ready (${String(ready.images.since)})`,
  )
  t.equal((await imagesOnNode()).includes(reference), true, 'the node holds the image')

  await running(s, 'web-u-alice', 120_000)
  const heldRunning = Date.now() - since
  const transitions = await s.suite.recorder.transitionsThrough(s.ns, 'web-u-alice', 'Running/Ready')
  t.equal(transitions[0], 'Pending/ImagesPulling', `held first, then admitted (${transitions.join(' → ')})`)
  t.strictSame(
    {
      pulling: await kubeletSaid(s, 'web-u-alice', 'Pulling'),
      pulled: (await kubeletSaid(s, 'web-u-alice', 'Pulled')).map((message) =>
        message.startsWith(`Container image "${reference}" already present on machine`),
      ),
    },
    { pulling: [], pulled: [true] },
    "the instance's container app found its image on the node: no pull",
  )

  // A second player's start, on the pre-pulled image, beside a cold start of a copy of the same size.
  const warm = await startTimed(s, 'web', 'bob')
  const coldReference = await pushed(t, 'public/prepull-cold:1')
  await s.create(definition('cold', pulled(coldReference)))
  const cold = await startTimed(s, 'cold', 'bob')
  t.comment(
    [
      'pre-pull on the real node (ms):',
      `  definition create → status.images Ready          ${String(ready.after).padStart(6)}`,
      `  held Challenge (created with it) → Running        ${String(heldRunning).padStart(6)}`,
      `  Challenge created after Ready → Running           ${String(warm).padStart(6)}`,
      `  cold Challenge, same image size, no pre-pull      ${String(cold).padStart(6)}   (the kubelet's pull: ${await pullTime(s, 'cold-u-bob', coldReference)})`,
    ].join('\n'),
  )
})

t.test("an image the registry does not have: Failed, naming the node and the kubelet's reason", async (t) => {
  const s = await suite.scenario(t, 'prepull-missing')
  const reference = `${REGISTRY_NAME}/public/prepull-nowhere:1`
  const since = Date.now()
  await s.create(definition('web', pulled(reference, { prepull: 'Hold' })))
  await s.create(s.challenge('web', 'alice'))
  const { images, after } = await imagesUntil(s, 'web', (images) => images.state === 'Failed', 'Failed', since)
  const missing = ((images.images ?? []) as Json[]).find((image) => image.image === reference)
  const failure = ((missing?.failures ?? []) as Json[])[0]
  t.comment(`Failed after ${after} ms; the failure: ${JSON.stringify(failure)}`)
  t.comment(`the pre-pull pod: ${(await prepullEvents(s, 'web')).join(' | ')}`)
  t.strictSame(
    withoutSince({
      ...images,
      images: ((images.images ?? []) as Json[]).map((image) => ({
        ...image,
        failures: ((image.failures ?? []) as Json[]).map((each) => ({ node: each.node, reason: each.reason })),
      })),
    }),
    {
      state: 'Failed',
      nodes: 1,
      images: [
        onEveryNode(HOOK_IMAGE),
        {
          image: reference,
          desired: 1,
          ready: 0,
          failed: 1,
          failures: [{ node: NODE_NAME, reason: 'ImagePullBackOff' }],
        },
      ],
    },
    'the node and the reason of the failing image; the gate image is on the node',
  )
  t.match(String(failure?.message), reference, "the failure's message names the image")
  const held = await s.status('web-u-alice')
  t.strictSame(
    { phase: held.phase, reason: held.reason, message: held.message, admitted: held.admittedAt !== undefined },
    { phase: 'Pending', reason: 'ImagesPulling', message: NONE_OF_ONE, admitted: false },
    'the Hold Challenge stays held, not admitted',
  )
})

t.test('a changed image rolls the DaemonSet, and the new image is pulled', async (t) => {
  const s = await suite.scenario(t, 'prepull-roll')
  const first = await pushed(t, 'public/prepull-roll:a')
  const second = await pushed(t, 'public/prepull-roll:b')
  const since = Date.now()
  await s.create(definition('web', pulled(first, { prepull: 'Pull' })))
  const before = await imagesUntil(s, 'web', (images) => images.state === 'Ready', 'Ready', since)
  t.strictSame(
    withoutSince(before.images),
    { state: 'Ready', nodes: 1, images: [onEveryNode(HOOK_IMAGE), onEveryNode(first)] },
    'Ready with the first image',
  )
  const changed = Date.now()
  await s.suite.rest.call('PATCH', definitionPath(s, 'web'), {
    body: [{ op: 'replace', path: '/spec/pod/containers/0/image', value: second }],
    contentType: 'application/json-patch+json',
    query: { fieldManager: AUTHOR },
  })
  const after = await imagesUntil(
    s,
    'web',
    (images) => images.state === 'Ready' && ((images.images ?? []) as Json[]).some((image) => image.image === second),
    'Ready with the new image',
    changed,
  )
  t.strictSame(
    withoutSince(after.images),
    { state: 'Ready', nodes: 1, images: [onEveryNode(HOOK_IMAGE), onEveryNode(second)] },
    'Ready again, the new image listed in place of the old',
  )
  t.equal((await imagesOnNode()).includes(second), true, 'the node holds the new image')
  // The old pod goes (its rolling update replaced it): one pod left, mounting the gate's image and the new one.
  const left = await eventually(
    'the old pre-pull pod gone',
    async () => {
      const pods = (await s.list(`/api/v1/namespaces/${s.ns}/pods`)).filter(
        (pod) => pod.metadata.labels?.['challenge-hooks.dev/prepull'] === 'web',
      )
      return pods.length === 1 ? pods : undefined
    },
    () => prepullPods(s, 'web'),
    { timeoutMs: 60_000 },
  )
  t.strictSame(
    left.map((pod) =>
      (((pod.spec as Json).volumes ?? []) as Json[]).map((volume) => (volume.image as Json | undefined)?.reference),
    ),
    [[HOOK_IMAGE, second]],
    'the DaemonSet rolled its one pod to the new template',
  )
  t.comment(`pre-pull of the first image ${before.after} ms; image changed → Ready with the new one ${after.after} ms`)
})

t.test("a private image is pre-pulled with the definition's pull Secret", async (t) => {
  const s = await suite.scenario(t, 'prepull-private')
  const reference = await pushed(t, `${REGISTRY_PRIVATE.prefix}prepull:1`)
  await s.suite.rest.call('POST', `/api/v1/namespaces/${s.ns}/secrets`, {
    body: pullSecret('alice-pull', REGISTRY_PRIVATE.user, REGISTRY_PRIVATE.password),
  })
  const since = Date.now()
  await s.create(definition('web', pulled(reference, { prepull: 'Hold' }, ['alice-pull'])))
  const ready = await imagesUntil(s, 'web', (images) => images.state === 'Ready', 'Ready', since)
  t.strictSame(
    withoutSince(ready.images),
    { state: 'Ready', nodes: 1, images: [onEveryNode(HOOK_IMAGE), onEveryNode(reference)] },
    'Ready: pulled with the Secret',
  )
  t.equal((await imagesOnNode()).includes(reference), true, 'the node holds the private image')
  const started = await startTimed(s, 'web', 'alice')
  // With pull Secrets every start asks the registry (imagePullPolicy Always): one manifest request, the layers cached.
  t.comment(
    `private image: definition create → Ready ${ready.after} ms; Challenge create → Running ${started} ms (the kubelet's pull at start: ${await pullTime(s, 'web-u-alice', reference)})`,
  )
})
