// How sync assembles its answer (src/challenge/hooks.ts), one row per rule: the selectors while a Deployment of an
// earlier release made before the uid label is observed, the words of each condition a player or platform reads, the flag Secret's reference, and
// the resync delay.
import t from 'tap'
import { retain } from '../../src/challenge/teardown.js'
import { resyncAfter, sync } from '../../src/challenge/hooks.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { testConfig } from '../helpers/app.js'
import { at, prepared, step } from '../helpers/drive.js'
import {
  challenge,
  observedChildren,
  pod,
  readyWorld,
  syncRequest,
  UID,
  webDefinition,
  type Json,
} from '../helpers/world.js'

const NAME = 'web-login-u-alice'
const INSTANCE = 'challenge-hooks.dev/instance'
const UID_LABEL = 'challenge-hooks.dev/uid'
const T_DELETE = '2026-11-22T11:59:30Z'

type Condition = { type: string; status: string; reason: string; message: string }
const conditionsOf = (status: Json) =>
  Object.fromEntries((status.conditions as Condition[]).map((c) => [c.type, [c.status, c.reason, c.message]]))
/** A Deployment an earlier release made for the instance, its selector `matchLabels` (undefined: none). */
function legacyDeployment(matchLabels: Record<string, string> | undefined): KubeObject {
  const [deployment] = observedChildren([
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: NAME, labels: { [INSTANCE]: NAME } },
      spec: {
        replicas: 1,
        ...(matchLabels === undefined ? {} : { selector: { matchLabels } }),
        template: { metadata: { labels: { [INSTANCE]: NAME } } },
      },
    },
  ])
  return deployment as KubeObject
}

/** What selects the instance's pods in an answer: the Service's selector and the isolate policy's subject. */
function selectors(children: readonly Json[]): Json[] {
  const service = children.find((child) => child.kind === 'Service') as { spec: { selector: Json } }
  const isolate = children.find(
    (child) => child.kind === 'NetworkPolicy' && (child.metadata as Json).name === `${NAME}-isolate`,
  ) as { spec: { podSelector: { matchLabels: Json } } }
  return [service.spec.selector, isolate.spec.podSelector.matchLabels]
}

t.test(
  'pods of a Deployment made before the uid label stay selected by the instance label alone until it is gone',
  async (t) => {
    const rows: [string, Record<string, string> | undefined, Record<string, string>][] = [
      [
        'instance label only: its pods carry no uid, so the selectors must not ask for one',
        { [INSTANCE]: NAME },
        { [INSTANCE]: NAME },
      ],
      ['instance and uid labels', { [INSTANCE]: NAME, [UID_LABEL]: UID }, { [INSTANCE]: NAME, [UID_LABEL]: UID }],
      ['another instance in the selector', { [INSTANCE]: 'someone-else' }, { [INSTANCE]: NAME, [UID_LABEL]: UID }],
      ['no selector', undefined, { [INSTANCE]: NAME, [UID_LABEL]: UID }],
      ['an empty selector', {}, { [INSTANCE]: NAME, [UID_LABEL]: UID }],
    ]
    const first = prepared(challenge(), { related: [webDefinition()] })
    const created = observedChildren(first.response.children)
    for (const [what, matchLabels, expected] of rows) {
      const answer = step(first.parent, {
        related: [webDefinition()],
        children: [...created, legacyDeployment(matchLabels)],
        now: at(10),
      })
      t.strictSame(selectors(answer.response.children), [expected, expected], `${what}: the Service and the policies`)
      t.notOk(
        answer.response.children.some((child) => child.kind === 'Deployment'),
        `${what}: the Deployment is not answered: Metacontroller deletes it`,
      )
    }
    t.strictSame(
      selectors(first.response.children),
      [
        { [INSTANCE]: NAME, [UID_LABEL]: UID },
        { [INSTANCE]: NAME, [UID_LABEL]: UID },
      ],
      'a new instance: the uid in every selector',
    )
    const pod = first.response.children.find((child) => child.kind === 'Pod') as { metadata: { labels: Json } }
    t.strictSame(
      pod.metadata.labels,
      { 'app.kubernetes.io/managed-by': 'challenge-hooks', [INSTANCE]: NAME, [UID_LABEL]: UID },
      'the Pod always carries the uid',
    )
    const noSpec = { ...legacyDeployment({ [INSTANCE]: NAME }), spec: undefined } as unknown as KubeObject
    const answer = step(first.parent, { related: [webDefinition()], children: [...created, noSpec], now: at(10) })
    t.strictSame(
      selectors(answer.response.children),
      [
        { [INSTANCE]: NAME, [UID_LABEL]: UID },
        { [INSTANCE]: NAME, [UID_LABEL]: UID },
      ],
      'a Deployment without a spec',
    )
  },
)

t.test('the conditions of each situation, word for word', async (t) => {
  const first = prepared(challenge(), { related: [webDefinition()] })
  t.strictSame(
    conditionsOf(first.status),
    {
      Admitted: ['True', 'Admitted', "The instance holds a slot of its owner's budget."],
      Scheduled: ['False', 'NotScheduled', 'The pod is not placed on a node yet.'],
      ContainersStarted: ['False', 'NotStarted', 'No container of the pod runs yet.'],
      WorkloadReady: ['False', 'Starting', 'The instance is starting.'],
      EndpointReady: ['False', 'NoEndpoint', 'Traffic cannot reach the instance yet.'],
      Ready: ['False', 'Starting', 'The instance is starting.'],
      Expired: ['False', 'NotExpired', 'The instance has not reached its end.'],
    },
    'starting',
  )

  const stopped = step(challenge({ spec: { desiredState: 'Stopped' } }), { related: [webDefinition()] })
  t.strictSame(
    conditionsOf(stopped.status),
    {
      Admitted: ['False', 'Stopped', 'The instance was stopped.'],
      Scheduled: ['False', 'NoWorkload', 'The instance has no workload.'],
      ContainersStarted: ['False', 'NoWorkload', 'The instance has no workload.'],
      WorkloadReady: ['False', 'NoWorkload', 'The instance has no workload.'],
      EndpointReady: ['False', 'NoEndpoint', 'Traffic cannot reach the instance yet.'],
      Ready: ['False', 'Stopped', 'The instance was stopped.'],
      Expired: ['False', 'NotExpired', 'The instance has not reached its end.'],
    },
    'stopped: no workload, not expired',
  )

  const past = step(challenge({ spec: { deadline: '2026-11-22T11:00:00Z' } }), { related: [webDefinition()] })
  t.hasStrict(past.status, { phase: 'Deleted', reason: 'PastDeadline' })
  t.strictSame(
    conditionsOf(past.status).Expired,
    ['True', 'PastDeadline', 'The challenge is past its deadline.'],
    'past the deadline counts as expired',
  )

  const running = step(first.parent, {
    related: [webDefinition()],
    children: readyWorld(first.response.children),
    now: at(30),
  })
  const expired = step(running.parent, {
    related: [webDefinition()],
    children: readyWorld(first.response.children),
    now: at(30 + 1800),
  })
  t.strictSame(
    conditionsOf(expired.status).Expired,
    ['True', 'Expired', 'The instance reached the end of its lifetime.'],
    'the end of the lifetime',
  )
})

t.test(
  'flagSecretRef names the flag Secret only while Running (its own Secret is then observed, and in the answer)',
  async (t) => {
    const first = prepared(challenge(), { related: [webDefinition()] })
    t.notOk('flagSecretRef' in first.status, 'Pending: not yet')
    const running = step(first.parent, {
      related: [webDefinition()],
      children: readyWorld(first.response.children),
      now: at(10),
    })
    t.strictSame(running.status.flagSecretRef, { name: `${NAME}-flag` }, 'Running')
    // Stopped while its pod is still terminating: the policy stays; the Secret has already gone.
    const observed = observedChildren(first.response.children).filter((child) => child.kind === 'NetworkPolicy')
    const dying = {
      ...pod(NAME, 0, { phase: 'Running' }),
      metadata: { ...pod(NAME, 0, {}).metadata, deletionTimestamp: '2026-11-22T12:00:05Z' },
    } as KubeObject
    const stopping = step(
      { ...running.parent, spec: { ...running.parent.spec, desiredState: 'Stopped' } },
      { related: [webDefinition()], children: [...observed, dying], now: at(20) },
    )
    t.strictSame(
      stopping.response.children.map((child) => child.kind),
      ['NetworkPolicy'],
      'only the policy is kept',
    )
    t.notOk('flagSecretRef' in stopping.status, 'no reference once it is not Running')
  },
)

t.test('a finalizing call sent to /sync is a teardown, with or without a deletionTimestamp', async (t) => {
  const config = testConfig()
  t.hasStrict(
    sync(syncRequest(challenge(), { related: [webDefinition()], finalizing: true }), config, at(0)).status,
    { phase: 'Terminating' },
    'finalizing: true',
  )
  t.hasStrict(
    sync(syncRequest(challenge({ deletionTimestamp: T_DELETE }), { related: [webDefinition()] }), config, at(0)).status,
    { phase: 'Terminating' },
    'a deletionTimestamp',
  )
  t.hasStrict(
    sync(syncRequest(challenge(), { related: [webDefinition()] }), config, at(0)).status,
    { phase: 'Pending' },
    'neither',
  )
})

t.test(
  'resyncAfter: none without a deadline; otherwise rounded up to a tenth of a second, at least 0.1 s, at most the cap',
  async (t) => {
    const config = testConfig({ maxResyncSeconds: 300 })
    const now = at(0).getTime()
    t.equal(resyncAfter(undefined, now, config), undefined)
    t.equal(resyncAfter(now + 1500, now, config), 1.5, 'a fraction of a second is kept')
    t.equal(
      resyncAfter(now + 1501, now, config),
      1.6,
      'rounded up to the next tenth: the sync lands at or after the deadline',
    )
    t.equal(resyncAfter(now + 2000, now, config), 2)
    t.equal(resyncAfter(now + 1, now, config), 0.1, 'at least a tenth of a second')
    t.equal(resyncAfter(now - 5000, now, config), 0.1, 'a passed deadline: at once')
    t.equal(resyncAfter(now + 3_600_000, now, config), 300, 'capped')
  },
)

t.test('the flag Secret and the environment, as rendered', async (t) => {
  const first = prepared(challenge({ spec: { parameters: { ZED: 'z', ALPHA: 'a' } } }), {
    related: [
      webDefinition({
        pod: {
          containers: [
            {
              name: 'web',
              image: 'web:1',
              env: [
                { name: 'MODE', value: 'ctf' },
                { name: 'ZED', value: 'overridden' },
              ],
            },
          ],
        },
      }),
    ],
  })
  const secret = first.response.children.find((child) => child.kind === 'Secret') as Json
  t.equal(secret.type, 'Opaque')
  t.strictSame(Object.keys(secret.data as Json), ['flag'])
  const podChild = first.response.children.find((child) => child.kind === 'Pod') as unknown as {
    spec: { containers: { env: Json[] }[] }
  }
  const env = (podChild.spec.containers[0] as { env: Json[] }).env
  t.strictSame(
    env.map((variable) => variable.name),
    ['MODE', 'ALPHA', 'ZED', 'FLAG'],
    "the definition's own, then the parameters in name order (a parameter replaces a variable of its name), then the flag",
  )
  t.equal(env.find((variable) => variable.name === 'ZED')?.value, 'z')
})

t.test('retain: an observed child kept as it is, without system fields or the last-applied annotation', async (t) => {
  const observed = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: 'web-login-u-alice-flag',
      namespace: 'challenges',
      uid: 'u-1',
      resourceVersion: '7',
      labels: { a: 'b' },
      annotations: {
        'kubectl.kubernetes.io/last-applied-configuration': '{}',
        'example.com/last-applied-configuration-note': 'kept',
      },
    },
    data: { flag: 'eA==' },
    status: { any: 'thing' },
  } as unknown as KubeObject
  t.strictSame(retain(observed), {
    apiVersion: 'v1',
    kind: 'Secret',
    data: { flag: 'eA==' },
    metadata: {
      name: 'web-login-u-alice-flag',
      namespace: 'challenges',
      labels: { a: 'b' },
      annotations: { 'example.com/last-applied-configuration-note': 'kept' },
    },
  })
  const bare = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 's', annotations: { 'x/last-applied-configuration': '{}' } },
  } as unknown as KubeObject
  t.strictSame(retain(bare).metadata, { name: 's' }, 'no annotation left: none at all')
  const none = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' } } as unknown as KubeObject
  t.strictSame(retain(none).metadata, { name: 's' }, 'no annotations to begin with')
})
