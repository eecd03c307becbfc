// What the controller sends the hooks on a real cluster, as the hook server receives it: the same assertions hold
// for the stand-in and for Metacontroller itself (METACONTROLLER_BIN), which is how the stand-in is kept honest.
// With CAPTURE_DIR set, the requests are written there (<controller>-<hook>-<n>.json) to diff the two by hand.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startSuite, type HookRequest, type Json } from '../support/kube/harness.js'

const suite = await startSuite(t)
const NAME = 'web-login-u-alice'
const FINALIZER = 'metacontroller.io/compositecontroller-challenge-hooks'
const CHILD_GROUPS = [
  'Deployment.apps/v1',
  'Ingress.networking.k8s.io/v1',
  'NetworkPolicy.networking.k8s.io/v1',
  'Pod.v1',
  'Secret.v1',
  'Service.v1',
]
const RELATED_GROUPS = [
  'Challenge.challenge-hooks.dev/v1alpha1',
  'ChallengeDefinition.challenge-hooks.dev/v1alpha1',
  'LimitRange.v1',
  'Namespace.v1',
  'Secret.v1',
]

const parentOf = (request: HookRequest) => (request.body.parent ?? {}) as { metadata?: Json; status?: Json }

t.test(`what ${suite.controller} sends to the hooks`, async (t) => {
  const s = await suite.scenario(t, 'protocol')
  const from = suite.requests.length
  await s.create(s.definition('web-login'))
  await s.create(s.challenge('web-login', 'alice'))
  await s.until(NAME, (st) => st.phase === 'Running', 'Running')
  await suite.kubectl(['delete', 'chal', NAME, '-n', s.ns, '--wait=true', '--timeout=60s'])
  const requests = suite.requests
    .slice(from)
    .filter((request) => (parentOf(request).metadata?.namespace ?? '') === s.ns)
  const of = (hook: string) => requests.filter((request) => request.hook === hook)

  t.ok(
    requests.length > 0 && requests.every((request) => request.statusCode === 200 || request.statusCode === 304),
    `every hook call answered 200 (or 304): ${requests.length} calls`,
  )
  for (const request of requests) {
    t.equal(request.headers.authorization, `Bearer ${suite.token}`, `${request.hook}: the bearer token from the Secret`)
    t.match(request.headers['content-type'], /^application\/json/, `${request.hook}: JSON`)
  }

  const [customize] = of('customize')
  t.ok(customize, 'the customize hook is called')
  t.strictSame(
    Object.keys(customize?.body ?? {}).sort(),
    ['controller', 'parent'],
    'customize: controller and parent only',
  )

  const syncs = of('sync')
  t.ok(syncs.length >= 2, `several syncs (${syncs.length})`)
  const first = syncs[0] as HookRequest
  t.strictSame(
    Object.keys(first.body).sort(),
    ['children', 'controller', 'finalizing', 'parent', 'related'],
    'sync: the five top-level fields',
  )
  t.equal(first.body.finalizing, false)
  t.strictSame(
    Object.keys(first.body.children as Json).sort(),
    CHILD_GROUPS,
    'one children group per child rule, even when empty',
  )
  t.strictSame(Object.keys(first.body.related as Json).sort(), RELATED_GROUPS, 'one related group per customize rule')
  const controller = first.body.controller as { metadata: Json; spec: { hooks: Record<string, { webhook: Json }> } }
  t.match(
    controller.metadata,
    { name: 'challenge-hooks', uid: String, resourceVersion: String, generation: Number },
    'the CompositeController as stored',
  )
  t.equal(controller.spec.hooks.sync?.webhook.url, `${suite.hookUrl}/sync`, 'with the hooks it is configured with')
  t.ok(
    ((parentOf(first).metadata?.finalizers ?? []) as string[]).includes(FINALIZER),
    "the parent already carries Metacontroller's finalizer",
  )
  t.ok(Array.isArray(parentOf(first).metadata?.managedFields), 'the parent comes whole, managedFields included')
  const running = syncs.findLast(
    (request) => Object.keys((request.body.children as Record<string, Json>)['Pod.v1'] ?? {}).length > 0,
  ) as HookRequest
  const children = running.body.children as Record<string, Record<string, Json>>
  t.strictSame(Object.keys(children['Pod.v1'] ?? {}), [NAME], 'v1 hooks: children keyed by name')
  const pod = (children['Pod.v1'] ?? {})[NAME] as {
    metadata: { ownerReferences: Json[]; labels: Json; annotations: Json }
    status: Json
  }
  t.hasStrict(
    pod.metadata.ownerReferences,
    [{ kind: 'Challenge', name: NAME, controller: true, blockOwnerDeletion: true }],
    'a controller reference with blockOwnerDeletion',
  )
  t.ok('controller-uid' in pod.metadata.labels, 'generateSelector: the controller-uid label')
  t.ok(
    'metacontroller.k8s.io/last-applied-configuration' in pod.metadata.annotations,
    'the last-applied annotation Metacontroller merges with (Recreate too)',
  )
  t.match(
    pod.status,
    { phase: 'Running', conditions: [{ type: String, status: String }] },
    "the pod's status, as the kubelet wrote it",
  )
  const related = running.body.related as Record<string, Record<string, Json>>
  t.strictSame(
    Object.keys(related['ChallengeDefinition.challenge-hooks.dev/v1alpha1'] ?? {}),
    ['web-login'],
    'the definition, by name',
  )
  t.ok(
    syncs.slice(1).some((request) => typeof request.headers['if-none-match'] === 'string'),
    'ETag: later syncs send If-None-Match',
  )

  const finalizes = of('finalize')
  t.ok(finalizes.length >= 2, `finalize is called until the teardown ends (${finalizes.length})`)
  t.ok(
    finalizes.every(
      (request) =>
        request.body.finalizing === true && typeof parentOf(request).metadata?.deletionTimestamp === 'string',
    ),
    'finalizing: true, the parent has a deletionTimestamp',
  )

  const dir = process.env.CAPTURE_DIR
  if (dir !== undefined && dir !== '') {
    mkdirSync(dir, { recursive: true })
    requests.forEach((request, i) =>
      writeFileSync(
        join(dir, `${suite.controller}-${String(i).padStart(2, '0')}-${request.hook}.json`),
        JSON.stringify(request, null, 2),
      ),
    )
  }
})
