import t from 'tap'
import { customize, finalize, sync } from '../../src/challenge/hooks.js'
import { retain } from '../../src/challenge/children.js'
import { at, kinds, prepared, step } from '../helpers/drive.js'
import { testConfig } from '../helpers/app.js'
import { challenge, pod, readyWorld, syncRequest, webDefinition, type Json } from '../helpers/world.js'
import type { KubeObject, SyncRequest } from '../../src/protocol.js'

const NAME = 'web-login-u-alice'

function runningWorld() {
  const related = [webDefinition()]
  const first = prepared(challenge(), { related })
  const children = readyWorld(first.response.children)
  const running = step(first.parent, { related, children, now: at(10) })
  const deleting = { ...running.parent, metadata: { ...running.parent.metadata, deletionTimestamp: '2026-11-22T12:05:00Z' } }
  return { deleting, children, running }
}

t.test('finalize tears down in order: traffic path, then workload, then policies and Secret once no pod remains', async (t) => {
  const { deleting, children, running } = runningWorld()
  const livePod = pod(NAME, 0, { phase: 'Running' })
  const without = (gone: string[]) => children.filter((child) => !gone.includes(child.kind as string))

  const first = step(deleting, { children, related: [livePod], finalizing: true, now: at(300) })
  t.same(kinds(first.response), [`Deployment/${NAME}`, `NetworkPolicy/${NAME}-isolate`, `NetworkPolicy/${NAME}-expose`, `Secret/${NAME}-flag`])
  t.equal(first.response.finalized, false)
  t.equal(first.response.resyncAfterSeconds, 10)
  t.match(first.status, {
    phase: 'Terminating',
    reason: 'Deleting',
    message: 'The instance is being deleted.',
    instanceId: running.status.instanceId,
    admittedAt: running.status.admittedAt,
    startedAt: running.status.startedAt,
    finishedAt: '2026-11-22T12:05:00Z',
    run: 0,
  })
  t.match(first.status.conditions, [{ type: 'Ready', status: 'False', reason: 'Deleting', lastTransitionTime: '2026-11-22T12:05:00Z' }])

  const second = step(first.parent, { children: without(['Ingress', 'Service']), related: [livePod], finalizing: true, now: at(301) })
  t.same(kinds(second.response), [`NetworkPolicy/${NAME}-isolate`, `NetworkPolicy/${NAME}-expose`, `Secret/${NAME}-flag`], 'the Deployment goes')
  t.same(second.status, first.status, 'the status does not move while waiting')

  const third = step(second.parent, { children: without(['Ingress', 'Service', 'Deployment']), related: [livePod], finalizing: true, now: at(302) })
  t.same(kinds(third.response), kinds(second.response), 'policies and Secret stay while a pod remains')
  const terminatingPod = { ...livePod, metadata: { ...livePod.metadata, deletionTimestamp: '2026-11-22T12:05:01Z' } }
  t.equal(
    step(second.parent, { children: without(['Ingress', 'Service', 'Deployment']), related: [terminatingPod], finalizing: true }).response.children.length,
    3,
    'a terminating pod still counts',
  )

  const fourth = step(third.parent, { children: without(['Ingress', 'Service', 'Deployment']), related: [], finalizing: true, now: at(303) })
  t.same(fourth.response.children, [])
  t.equal(fourth.response.finalized, false, 'not finalized while children are still observed')

  const done = step(fourth.parent, { children: [], related: [], finalizing: true, now: at(304) })
  t.equal(done.response.finalized, true)
  t.notOk('resyncAfterSeconds' in done.response)
  t.same(Object.keys(done.response).sort(), ['children', 'finalized', 'status'])
})

t.test('children already being deleted are not returned, but still hold the finalizer', async (t) => {
  const { deleting, children } = runningWorld()
  const goingAway = children.map((child) => ({ ...child, metadata: { ...child.metadata, deletionTimestamp: '2026-11-22T12:05:00Z' } }))
  const result = step(deleting, { children: goingAway, finalizing: true })
  t.same(result.response.children, [])
  t.equal(result.response.finalized, false)
})

t.test('finalize of a Challenge that never had a status or children', async (t) => {
  const fresh = challenge({ deletionTimestamp: '2026-11-22T12:00:00Z' })
  const result = step(fresh, { finalizing: true })
  t.equal(result.response.finalized, true)
  t.match(result.status, { phase: 'Terminating', run: 0, finishedAt: '2026-11-22T12:00:00Z' })
  t.notOk('admittedAt' in result.status)
})

t.test('a finished run keeps its finish time through deletion', async (t) => {
  const { running, children } = runningWorld()
  const expired = step(running.parent, { related: [webDefinition()], children, now: at(2000) })
  const deleting = { ...expired.parent, metadata: { ...expired.parent.metadata, deletionTimestamp: '2026-11-22T13:00:00Z' } }
  const result = step({ ...deleting, status: { ...expired.status, lastRenewedAt: '2026-11-22T12:01:00Z' } }, { finalizing: true, now: at(3600) })
  t.match(result.status, { finishedAt: expired.status.finishedAt, lastRenewedAt: '2026-11-22T12:01:00Z' })
})

t.test('one URL for both hooks: a finalizing call to sync is answered exactly as finalize answers it', async (t) => {
  const { deleting, children } = runningWorld()
  const livePod = pod(NAME, 0, { phase: 'Running' })
  const config = testConfig()
  for (const [what, observed, related] of [
    ['children and a pod left', children, [livePod]],
    ['only the policies and the Secret left', children.filter((child) => child.kind !== 'Deployment'), []],
    ['nothing left', [], []],
  ] as const) {
    const request = syncRequest(deleting, { children: [...observed], related: [webDefinition(), ...related], finalizing: true })
    const answer = sync(request, config, at(300))
    t.same(answer, finalize(request, config, at(300)), what)
    t.match(answer.status, { phase: 'Terminating', reason: 'Deleting' }, what)
    t.equal(answer.finalized, observed.length === 0, `${what}: finalized only when no child is observed`)
  }
})

t.test('a sync of a parent with a deletionTimestamp tears down, never reports Running, and never sends finalized', async (t) => {
  const { deleting, children, running } = runningWorld()
  const config = testConfig()
  const livePod = pod(NAME, 0, { phase: 'Running' })
  const request = syncRequest(deleting, { children, related: [webDefinition(), livePod], finalizing: false })
  const answer = sync(request, config, at(300))
  t.same(answer, finalize(request, config, at(300)), 'the teardown of finalize')
  t.equal(running.status.phase, 'Running', 'it was Running')
  t.notOk('finalized' in answer, 'finalized only answers a finalizing call: in a sync answer it would make the finalizer flap')
  t.match(answer.status, { phase: 'Terminating', reason: 'Deleting' })
  t.same(kinds(answer), [`Deployment/${NAME}`, `NetworkPolicy/${NAME}-isolate`, `NetworkPolicy/${NAME}-expose`, `Secret/${NAME}-flag`])
  t.equal(answer.resyncAfterSeconds, 10)

  const done = sync(syncRequest(deleting, { related: [webDefinition()], finalizing: false }), config, at(301))
  t.same(Object.keys(done).sort(), ['children', 'status'], 'nothing left: still no finalized')
  t.same(done.children, [])
})

t.test('retained children carry their content but no system fields', async (t) => {
  const observed: KubeObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: 's',
      namespace: 'challenges',
      uid: 'u',
      resourceVersion: '5',
      labels: { a: 'b' },
      annotations: { 'metacontroller.k8s.io/last-applied-configuration': '{}', keep: 'me' },
      ownerReferences: [{}],
      managedFields: [{}],
    } as KubeObject['metadata'],
    data: { flag: 'eA==' },
    status: { x: 1 },
  }
  t.same(retain(observed), {
    apiVersion: 'v1',
    kind: 'Secret',
    data: { flag: 'eA==' },
    metadata: { name: 's', namespace: 'challenges', labels: { a: 'b' }, annotations: { keep: 'me' } },
  })
  const onlyLastApplied = { ...observed, metadata: { name: 's', annotations: { 'metacontroller.k8s.io/last-applied-configuration': '{}' } } }
  t.same(retain(onlyLastApplied).metadata, { name: 's' })
})

t.test('customize asks for its own definition (never the catalogue), the pods, the owner\'s Challenges and labelled static flag Secrets', async (t) => {
  const request = { controller: {}, parent: challenge() } as unknown as SyncRequest
  t.same(customize(request), {
    relatedResources: [
      { apiVersion: 'challenge-hooks.dev/v1alpha1', resource: 'challengedefinitions', namespace: 'challenges', names: ['web-login'] },
      { apiVersion: 'v1', resource: 'pods', labelSelector: { matchLabels: { 'challenge-hooks.dev/instance': NAME } } },
      { apiVersion: 'challenge-hooks.dev/v1alpha1', resource: 'challenges', labelSelector: { matchLabels: { 'challenge-hooks.dev/owner': 'alice' } } },
      {
        apiVersion: 'v1',
        resource: 'secrets',
        labelSelector: {
          matchLabels: { 'challenge-hooks.dev/definition': 'web-login' },
          matchExpressions: [{ key: 'app.kubernetes.io/managed-by', operator: 'NotIn', values: ['challenge-hooks'] }],
        },
      },
    ],
  })
  const long = challenge({ name: `${'x'.repeat(100)}.example` }) as Json
  const rules = customize({ parent: long } as never).relatedResources
  t.match(rules[1], { labelSelector: { matchLabels: { 'challenge-hooks.dev/instance': /^x+--[0-9a-f]{12}$/ } } }, 'the shortened instance label')
})
