// Children that are not the instance's own. Metacontroller ignores "already exists" when it creates a child and
// claims only objects that carry its controller reference, so an object someone else made under a child's name is
// never created for the instance and, if a request carries it anyway, must not count: the pod must never mount a
// foreign flag Secret or run without its NetworkPolicies, and no foreign Service or route is the instance's address.
import t from 'tap'
import { isOwnedBy, indexObjects, ownChild } from '../../src/challenge/observed.js'
import { guardChildren, missingGuards } from '../../src/challenge/workload.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { at, kinds, prepared, step } from '../helpers/drive.js'
import {
  challenge,
  conditionOf,
  controllerRef,
  observedChildren,
  readyWorld,
  UID,
  webDefinition,
  type Json,
} from '../helpers/world.js'
import { child, NAMESPACE, names, object } from './objects.js'

const NAME = 'web-login-u-alice'
const related = [webDefinition()]

/** The same object, but made by someone else: no controller reference to this Challenge. */
function foreign(object: KubeObject, ownerReferences: Json[] = []): KubeObject {
  return { ...object, metadata: { ...object.metadata, ownerReferences } as KubeObject['metadata'] }
}

t.test('isOwnedBy and ownChild: only a controller reference to this uid makes a child its own', async (t) => {
  const rows: [string, unknown, boolean][] = [
    ['a controller reference to this uid', [controllerRef(UID)], true],
    ['none', undefined, false],
    ['an empty list', [], false],
    ['a reference to this uid that is not the controller', [{ ...controllerRef(UID), controller: false }], false],
    ['a controller reference to another uid', [controllerRef('someone-else')], false],
    ['a controller "true" as text', [{ ...controllerRef(UID), controller: 'true' }], false],
    ['references that are not a list', { uid: UID, controller: true }, false],
    ['among others', [{ uid: 'x' }, 'junk', null, controllerRef(UID)], true],
  ]
  for (const [what, ownerReferences, own] of rows) {
    const secret = object('Secret', names.flagSecret, {
      metadata: { name: names.flagSecret, namespace: NAMESPACE, ownerReferences },
    })
    t.equal(isOwnedBy(secret, UID), own, what)
    const index = indexObjects({ 'Secret.v1': { [names.flagSecret]: secret } }, NAMESPACE)
    t.equal(ownChild(index, 'Secret', names.flagSecret, UID) === secret, own, `ownChild: ${what}`)
  }
  const leaving = child('Secret', names.flagSecret)
  leaving.metadata.deletionTimestamp = '2026-11-22T12:00:00Z'
  t.equal(
    ownChild(indexObjects({ 'Secret.v1': { x: leaving } }, NAMESPACE), 'Secret', names.flagSecret, UID),
    undefined,
    'one being deleted is going away',
  )
})

t.test('guardChildren: the flag Secret and every NetworkPolicy the egress needs', async (t) => {
  const base = [
    ['Secret', `${NAME}-flag`],
    ['NetworkPolicy', `${NAME}-isolate`],
  ]
  t.strictSame(guardChildren(names, 'None'), base)
  t.strictSame(guardChildren(names, 'DNS'), base)
  t.strictSame(guardChildren(names, 'Internet'), [...base, ['NetworkPolicy', `${NAME}-internet`]])
  const index = indexObjects(
    {
      'Secret.v1': { a: child('Secret', `${NAME}-flag`) },
      // A pooled run's policy (docs/api.md, Warm pools) isolates nothing: it guards no cold pod.
      'NetworkPolicy.networking.k8s.io/v1': { b: child('NetworkPolicy', `${NAME}-expose`) },
    },
    NAMESPACE,
  )
  t.strictSame(missingGuards(index, names, 'Internet'), [
    `NetworkPolicy ${NAME}-isolate`,
    `NetworkPolicy ${NAME}-internet`,
  ])
})

t.test("a foreign Secret under the flag Secret's name: no pod ever mounts it, the instance never runs", async (t) => {
  const first = step(challenge(), { related })
  // Metacontroller created everything but the Secret, whose name was taken: what it observes is someone else's.
  const observed = observedChildren(first.response.children).map((each) =>
    each.kind === 'Secret' ? foreign(each) : each,
  )
  const second = step(first.parent, { related, children: observed, now: at(5) })
  t.notOk(kinds(second.response).includes(`Pod/${NAME}`), 'no Pod: it would mount the foreign Secret')
  t.hasStrict(second.status, { phase: 'Pending', reason: 'Starting', message: 'The instance is starting.' })
  t.notOk('flagSecretRef' in second.status, 'the foreign Secret is not named as the flag Secret')
  // Even with a ready workload and an address in the world, the instance is never Running on a foreign flag.
  const complete = prepared(challenge(), { related })
  const ready = readyWorld(complete.response.children).map((each) =>
    each.kind === 'Secret' ? foreign(each, [controllerRef('another-uid')]) : each,
  )
  const notRunning = step(complete.parent, { related, children: ready, now: at(10) })
  t.hasStrict(notRunning.status, { phase: 'Pending', reason: 'Starting' })
  t.notOk('endpoint' in notRunning.status)
  t.hasStrict(conditionOf(notRunning.status, 'WorkloadReady'), { status: 'False' })
  t.notOk(kinds(notRunning.response).includes(`Pod/${NAME}`), 'the Pod is withdrawn')
  const timedOut = step(notRunning.parent, { related, children: ready, now: at(300) })
  t.hasStrict(timedOut.status, {
    phase: 'Error',
    reason: 'StartupTimeout',
    message: `The instance did not become ready within 300 seconds. Its Secret ${NAME}-flag never appeared as its own: the API server refused it, or an object of that name that this Challenge does not own is in the way.`,
  })
})

t.test('a NetworkPolicy the API server refused (never observed): no pod, never Running', async (t) => {
  const complete = prepared(challenge(), { related })
  const withoutIsolation = readyWorld(complete.response.children).filter(
    (each) => each.metadata.name !== `${NAME}-isolate`,
  )
  const answer = step(complete.parent, { related, children: withoutIsolation, now: at(10) })
  t.hasStrict(
    answer.status,
    { phase: 'Pending', reason: 'Starting' },
    'ready pod, Service and Ingress, but not isolated: not Running',
  )
  t.notOk('endpoint' in answer.status)
  t.notOk(kinds(answer.response).includes(`Pod/${NAME}`), 'the pod is not kept running unisolated')
  t.ok(kinds(answer.response).includes(`NetworkPolicy/${NAME}-isolate`), 'the policy is still asked for')
  const timedOut = step(answer.parent, { related, children: withoutIsolation, now: at(300) })
  t.match(timedOut.status, {
    phase: 'Error',
    reason: 'StartupTimeout',
    message: new RegExp(`Its NetworkPolicy ${NAME}-isolate never appeared as its own`),
  })
})

t.test("a foreign Service or route under the instance's name is no endpoint", async (t) => {
  const complete = prepared(challenge(), { related })
  const ready = readyWorld(complete.response.children)
  t.hasStrict(
    step(complete.parent, { related, children: ready, now: at(10) }).status,
    { phase: 'Running' },
    'all its own: Running',
  )
  for (const kind of ['Service', 'Ingress']) {
    const world = ready.map((each) => (each.kind === kind ? foreign(each) : each))
    const answer = step(complete.parent, { related, children: world, now: at(10) })
    t.hasStrict(answer.status, { phase: 'Pending', reason: 'WaitingForEndpoint' }, `a foreign ${kind}`)
    t.notOk('endpoint' in answer.status, `a foreign ${kind}: no endpoint`)
  }
})

t.test('two guard children the API server refused: the StartupTimeout names both, in the plural', async (t) => {
  const complete = prepared(challenge(), { related })
  const withoutGuards = readyWorld(complete.response.children).filter(
    (each) => each.kind !== 'NetworkPolicy' && each.kind !== 'Secret',
  )
  const timedOut = step(complete.parent, { related, children: withoutGuards, now: at(300) })
  t.hasStrict(timedOut.status, {
    phase: 'Error',
    reason: 'StartupTimeout',
    message: `The instance did not become ready within 300 seconds. Its Secret ${NAME}-flag, NetworkPolicy ${NAME}-isolate never appeared as its own: the API server refused them, or objects of those names that this Challenge does not own are in the way.`,
  })
})
