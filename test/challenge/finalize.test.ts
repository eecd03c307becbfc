import t from 'tap'
import { customize, finalize, sync } from '../../src/challenge/hooks.js'
import { retain } from '../../src/challenge/teardown.js'
import { at, kinds, prepared, step } from '../helpers/drive.js'
import { testConfig } from '../helpers/app.js'
import { challenge, pod, readyWorld, syncRequest, webDefinition } from '../helpers/world.js'
import type { KubeObject, SyncRequest } from '../../src/contract/protocol.js'
import { ALICE, expectedInstanceId } from '../helpers/contract.js'

const NAME = 'web-login-u-alice'

function runningWorld() {
  const related = [webDefinition()]
  const first = prepared(challenge(), { related })
  const children = readyWorld(first.response.children)
  const running = step(first.parent, { related, children, now: at(10) })
  const deleting = {
    ...running.parent,
    metadata: { ...running.parent.metadata, deletionTimestamp: '2026-11-22T12:05:00Z' },
  }
  return { deleting, children, running }
}

t.test(
  'finalize tears down in order: traffic path, then workload, then policies and Secret once no pod remains',
  async (t) => {
    const { deleting, children, running } = runningWorld()
    const without = (gone: string[]) => children.filter((child) => !gone.includes(child.kind as string))
    const terminating = (object: KubeObject) =>
      ({ ...object, metadata: { ...object.metadata, deletionTimestamp: '2026-11-22T12:05:01Z' } }) as KubeObject

    const first = step(deleting, { children, finalizing: true, now: at(300) })
    t.strictSame(kinds(first.response), [`Pod/${NAME}`, `NetworkPolicy/${NAME}-isolate`, `Secret/${NAME}-flag`])
    t.equal(first.response.finalized, false)
    t.equal(first.response.resyncAfterSeconds, 10)
    t.hasStrict(first.status, {
      phase: 'Terminating',
      reason: 'Deleting',
      message: 'The instance is being deleted.',
      instanceId: expectedInstanceId(testConfig().flagSecret, ALICE),
      admittedAt: running.status.admittedAt,
      startedAt: running.status.startedAt,
      finishedAt: '2026-11-22T12:05:00Z',
      run: 0,
    })
    t.hasStrict(first.status.conditions, [
      { type: 'Ready', status: 'False', reason: 'Deleting', lastTransitionTime: '2026-11-22T12:05:00Z' },
    ])

    const second = step(first.parent, { children: without(['Ingress', 'Service']), finalizing: true, now: at(301) })
    t.strictSame(kinds(second.response), [`NetworkPolicy/${NAME}-isolate`, `Secret/${NAME}-flag`], 'the Pod goes')
    t.strictSame(second.status, first.status, 'the status does not move while waiting')

    const podLeaving = [
      ...without(['Ingress', 'Service', 'Pod']),
      terminating(children.find((child) => child.kind === 'Pod') as KubeObject),
    ]
    const third = step(second.parent, { children: podLeaving, finalizing: true, now: at(302) })
    t.strictSame(kinds(third.response), kinds(second.response), 'policies and Secret stay while the pod terminates')

    const fourth = step(third.parent, {
      children: without(['Ingress', 'Service', 'Pod']),
      finalizing: true,
      now: at(303),
    })
    t.strictSame(fourth.response.children, [])
    t.equal(fourth.response.finalized, false, 'not finalized while children are still observed')

    const done = step(fourth.parent, { children: [], related: [], finalizing: true, now: at(304) })
    t.equal(done.response.finalized, true)
    t.notOk('resyncAfterSeconds' in done.response)
    t.strictSame(Object.keys(done.response).sort(), ['children', 'finalized', 'status'])
  },
)

t.test('children already being deleted are not returned, but still hold the finalizer', async (t) => {
  const { deleting, children } = runningWorld()
  const goingAway = children.map((child) => ({
    ...child,
    metadata: { ...child.metadata, deletionTimestamp: '2026-11-22T12:05:00Z' },
  }))
  const result = step(deleting, { children: goingAway, finalizing: true })
  t.strictSame(result.response.children, [])
  t.equal(result.response.finalized, false)
})

t.test('finalize of a Challenge that never had a status or children', async (t) => {
  const fresh = challenge({ deletionTimestamp: '2026-11-22T12:00:00Z' })
  const result = step(fresh, { finalizing: true })
  t.equal(result.response.finalized, true)
  t.hasStrict(result.status, { phase: 'Terminating', run: 0, finishedAt: '2026-11-22T12:00:00Z' })
  t.notOk('admittedAt' in result.status)
})

t.test('a finished run keeps its finish time through deletion', async (t) => {
  const { running, children } = runningWorld()
  const expired = step(running.parent, { related: [webDefinition()], children, now: at(2000) })
  const deleting = {
    ...expired.parent,
    metadata: { ...expired.parent.metadata, deletionTimestamp: '2026-11-22T13:00:00Z' },
  }
  const result = step(
    { ...deleting, status: { ...expired.status, lastRenewedAt: '2026-11-22T12:01:00Z' } },
    { finalizing: true, now: at(3600) },
  )
  t.hasStrict(result.status, { finishedAt: expired.status.finishedAt, lastRenewedAt: '2026-11-22T12:01:00Z' })
})

t.test('one URL for both hooks: a finalizing call to sync is answered exactly as finalize answers it', async (t) => {
  const { deleting, children } = runningWorld()
  const config = testConfig()
  for (const [what, observed] of [
    ['children and a pod left', children],
    ['only the policies and the Secret left', children.filter((child) => child.kind !== 'Pod')],
    ['nothing left', []],
  ] as const) {
    const request = syncRequest(deleting, { children: [...observed], related: [webDefinition()], finalizing: true })
    const answer = sync(request, config, at(300))
    t.strictSame(answer, finalize(request, config, at(300)), what)
    t.hasStrict(answer.status, { phase: 'Terminating', reason: 'Deleting' }, what)
    t.equal(answer.finalized, observed.length === 0, `${what}: finalized only when no child is observed`)
  }
})

t.test(
  'a sync of a parent with a deletionTimestamp tears down, never reports Running, and never sends finalized',
  async (t) => {
    const { deleting, children, running } = runningWorld()
    const config = testConfig()
    const livePod = pod(NAME, 0, { phase: 'Running' })
    const request = syncRequest(deleting, { children, related: [webDefinition(), livePod], finalizing: false })
    const answer = sync(request, config, at(300))
    t.strictSame(answer, finalize(request, config, at(300)), 'the teardown of finalize')
    t.equal(running.status.phase, 'Running', 'it was Running')
    t.notOk(
      'finalized' in answer,
      'finalized only answers a finalizing call: in a sync answer it would make the finalizer flap',
    )
    t.hasStrict(answer.status, { phase: 'Terminating', reason: 'Deleting' })
    t.strictSame(kinds(answer), [`Pod/${NAME}`, `NetworkPolicy/${NAME}-isolate`, `Secret/${NAME}-flag`])
    t.equal(answer.resyncAfterSeconds, 10)

    const done = sync(syncRequest(deleting, { related: [webDefinition()], finalizing: false }), config, at(301))
    t.strictSame(Object.keys(done).sort(), ['children', 'status'], 'nothing left: still no finalized')
    t.strictSame(done.children, [])
  },
)

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
  t.strictSame(retain(observed), {
    apiVersion: 'v1',
    kind: 'Secret',
    data: { flag: 'eA==' },
    metadata: { name: 's', namespace: 'challenges', labels: { a: 'b' }, annotations: { keep: 'me' } },
  })
  const onlyLastApplied = {
    ...observed,
    metadata: { name: 's', annotations: { 'metacontroller.k8s.io/last-applied-configuration': '{}' } },
  }
  t.strictSame(retain(onlyLastApplied).metadata, { name: 's' })
})

t.test(
  'retained children are what Metacontroller last applied, when its annotation names the same object',
  async (t) => {
    const applied = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', labels: { a: 'b' } },
      spec: { containers: [{ name: 'web', image: 'x' }] },
    }
    const observed = (annotation: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'p',
        namespace: 'challenges',
        uid: 'u',
        annotations: { 'metacontroller.k8s.io/last-applied-configuration': annotation },
      },
      // What the API server defaulted: not in the last answer, so not kept (Recreate would see a change).
      spec: { containers: [{ name: 'web', image: 'x', imagePullPolicy: 'IfNotPresent' }], restartPolicy: 'Always' },
      status: { phase: 'Running' },
    })
    t.strictSame(retain(observed(JSON.stringify(applied))), applied)
    const asObserved = {
      apiVersion: 'v1',
      kind: 'Pod',
      spec: { containers: [{ name: 'web', image: 'x', imagePullPolicy: 'IfNotPresent' }], restartPolicy: 'Always' },
      metadata: { name: 'p', namespace: 'challenges' },
    }
    t.strictSame(retain(observed('{"kind": "Pod"')), asObserved, 'an annotation that is not JSON: kept as observed')
    t.strictSame(
      retain(observed(JSON.stringify({ ...applied, metadata: { name: 'other' } }))),
      asObserved,
      "another object's: kept as observed",
    )
    t.strictSame(
      retain(observed(JSON.stringify({ ...applied, apiVersion: 'v2' }))),
      asObserved,
      "another version's: kept as observed",
    )
    t.strictSame(
      retain(observed(JSON.stringify({ ...applied, kind: 'Service' }))),
      asObserved,
      "another kind's: kept as observed",
    )
    t.strictSame(
      retain(observed(JSON.stringify({ apiVersion: 'v1', kind: 'Pod' }))),
      asObserved,
      'one without metadata: kept as observed',
    )
  },
)

t.test(
  "customize asks for its own definition (never the catalogue), the owner's Challenges, labelled static flag Secrets, its Namespace and LimitRanges, the flag Secrets of pool pods claimed for it, each in its namespace; never pods",
  async (t) => {
    const request = { controller: {}, parent: challenge() } as unknown as SyncRequest
    const rules = (scope: 'Namespace' | 'Cluster' | 'None') =>
      customize(request, testConfig({ ownerBudgetScope: scope })).relatedResources
    const owner = { matchLabels: { 'challenge-hooks.dev/owner': 'alice' } }
    t.strictSame(rules('Namespace'), [
      {
        apiVersion: 'challenge-hooks.dev/v1alpha1',
        resource: 'challengedefinitions',
        namespace: 'challenges',
        names: ['web-login'],
      },
      {
        apiVersion: 'challenge-hooks.dev/v1alpha1',
        resource: 'challenges',
        namespace: 'challenges',
        labelSelector: owner,
      },
      {
        apiVersion: 'v1',
        resource: 'secrets',
        namespace: 'challenges',
        labelSelector: {
          matchLabels: { 'challenge-hooks.dev/definition': 'web-login' },
          matchExpressions: [{ key: 'app.kubernetes.io/managed-by', operator: 'NotIn', values: ['challenge-hooks'] }],
        },
      },
      { apiVersion: 'v1', resource: 'namespaces', names: ['challenges'] },
      { apiVersion: 'v1', resource: 'limitranges', namespace: 'challenges', labelSelector: {} },
      {
        apiVersion: 'v1',
        resource: 'secrets',
        namespace: 'challenges',
        labelSelector: { matchLabels: { 'challenge-hooks.dev/claimed-by': '5b1f0c2e-8f7d-4c53-9a59-0d7b3a1e2f10' } },
      },
    ])
    // Across namespaces: only the owner's Challenges lose their namespace (hook version v2 then selects everywhere).
    const cluster = rules('Cluster')
    t.strictSame(cluster[1], {
      apiVersion: 'challenge-hooks.dev/v1alpha1',
      resource: 'challenges',
      labelSelector: owner,
    })
    t.strictSame(
      [cluster[0], ...cluster.slice(2)],
      [rules('Namespace')[0], ...rules('Namespace').slice(2)],
      'the other rules are the same',
    )
    // No budget: no owner's Challenge is related at all, the other rules the same.
    t.strictSame(rules('None'), [rules('Namespace')[0], ...rules('Namespace').slice(2)])
  },
)
