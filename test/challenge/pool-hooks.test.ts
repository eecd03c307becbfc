/**
 * The warm pool's hooks, step by step as Metacontroller would drive them: each answer applied as Metacontroller
 * applies it (the children made the definition's own, with a uid), and the next sync shown that world. What a step
 * must answer is written out here from the contract (docs/api.md, "Warm pools"), never read from the code.
 */
import t from 'tap'
import { podSpec } from '../../src/challenge/children.js'
import { resolveDefinition } from '../../src/challenge/definition.js'
import { poolAnswer, poolCustomize, poolSync } from '../../src/challenge/pool-hooks.js'
import type { KubeObject, SyncResponse } from '../../src/contract/protocol.js'
import { testConfig } from '../helpers/app.js'
import { TEST_INSTANT } from '../helpers/instant.js'
import {
  apply,
  challenge,
  config,
  definition,
  flagOf,
  names,
  NOW,
  NS,
  OWNED,
  podOf,
  readyPods,
  request,
  ticket,
  warmPool,
  type Json,
} from '../helpers/pool-world.js'

const ISOLATE = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: {
    name: 'web.pool-isolate',
    labels: { 'app.kubernetes.io/managed-by': 'challenge-hooks', 'challenge-hooks.dev/definition': 'web' },
  },
  spec: {
    podSelector: {
      matchLabels: { 'app.kubernetes.io/managed-by': 'challenge-hooks', 'challenge-hooks.dev/definition': 'web' },
      matchExpressions: [{ key: 'challenge-hooks.dev/pool-slot', operator: 'Exists' }],
    },
    policyTypes: ['Ingress', 'Egress'],
    egress: [
      {
        to: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
            podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
          },
        ],
        ports: [
          { protocol: 'UDP', port: 53 },
          { protocol: 'TCP', port: 53 },
        ],
      },
    ],
  },
}

const secret = (name: string, data?: string) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: {
    name,
    labels: {
      'app.kubernetes.io/managed-by': 'challenge-hooks',
      'challenge-hooks.dev/definition': 'web',
      // The slot of `web.pool-<slot>-flag`.
      'challenge-hooks.dev/pool-slot': name.slice('web.pool-'.length, -'-flag'.length),
    },
  },
  type: 'Opaque',
  ...(data === undefined ? {} : { data: { flag: data } }),
})

/** The world with the object `name` claimed for the Challenge uid-a, as the claim label lands on it. */
function claimedIn(objects: KubeObject[], name: string): KubeObject[] {
  return objects.map((object) =>
    object.metadata.name === name
      ? {
          ...object,
          metadata: {
            ...object.metadata,
            labels: { ...object.metadata.labels, 'challenge-hooks.dev/claimed-by': 'uid-a' },
          },
        }
      : object,
  )
}

t.test('a new pool: the policy and empty Secrets, then their flags, then the pods', async (t) => {
  const first = poolSync(request(definition(), []), config, NOW)
  t.strictSame(first, {
    status: {
      pool: { state: 'Ready', size: 2, free: 0, claimed: 0, starting: 2, since: TEST_INSTANT },
    },
    children: [ISOLATE, secret('web.pool-0-flag'), secret('web.pool-1-flag')],
  })

  const second = poolSync(request(definition(), apply(first)), config, NOW)
  t.strictSame(
    second.children,
    [
      ISOLATE,
      secret('web.pool-0-flag', flagOf('uid-web.pool-0-flag')),
      secret('web.pool-1-flag', flagOf('uid-web.pool-1-flag')),
    ],
    'each Secret filled with the PerInstance flag of its own uid; no pod before the Secret holds it',
  )

  const third = poolSync(request(definition(), apply(second)), config, NOW)
  t.strictSame(names(third), [
    'NetworkPolicy web.pool-isolate',
    'Secret web.pool-0-flag',
    'Pod web.pool-0',
    'Secret web.pool-1-flag',
    'Pod web.pool-1',
  ])
  const pod = podOf(third, 'web.pool-1')
  t.strictSame(pod.metadata, {
    name: 'web.pool-1',
    labels: {
      'app.kubernetes.io/managed-by': 'challenge-hooks',
      'challenge-hooks.dev/definition': 'web',
      'challenge-hooks.dev/pool-slot': '1',
      'challenge-hooks.dev/pool-rendering': podOf(third, 'web.pool-0').metadata.labels[
        'challenge-hooks.dev/pool-rendering'
      ],
    },
    annotations: { 'challenge-hooks.dev/flag-uid': 'uid-web.pool-1-flag' },
  })
  t.match(pod.metadata.labels['challenge-hooks.dev/pool-rendering'], /^[0-9a-f]{10}$/)
  const { hostname, ...rest } = pod.spec
  t.equal(hostname, 'pool-1')
  const resolved = resolveDefinition('web', definition().spec)
  if (!resolved.found) throw new Error('the test definition is valid')
  t.strictSame(
    rest,
    podSpec({ definition: resolved.definition, config, parameters: {}, flagSecretName: 'web.pool-1-flag' }),
    'the pod a cold instance of the definition runs, without parameters',
  )
  t.strictSame(
    rest.containers[0].env,
    [{ name: 'FLAG', valueFrom: { secretKeyRef: { name: 'web.pool-1-flag', key: 'flag' } } }],
    'its flag from its own Secret',
  )
  t.equal(rest.initContainers[0].name, 'isolation-gate')
  t.strictSame(rest.volumes[1], { name: 'flag', secret: { secretName: 'web.pool-1-flag', defaultMode: 0o444 } })
  t.strictSame(
    third.status,
    first.status,
    'the state did not change: the status is the one the parent holds, counts and time included',
  )
})

t.test('the pod waits for its own policies and its own Secret holding its flag', async (t) => {
  const { world } = warmPool()
  const without = (kind: string, name: string) =>
    world.filter((object) => !(object.kind === kind && object.metadata.name === name))
  const pods = (objects: KubeObject[]) =>
    names(poolSync(request(definition(), objects), config, NOW)).filter((name) => name.startsWith('Pod'))
  t.strictSame(pods(world), ['Pod web.pool-0', 'Pod web.pool-1'])
  t.strictSame(pods(without('NetworkPolicy', 'web.pool-isolate')), [], 'no pod without the policy')
  const foreign = world.map((object) =>
    object.kind === 'Secret' && object.metadata.name === 'web.pool-0-flag'
      ? { ...object, metadata: { ...object.metadata, ownerReferences: [{ ...OWNED[0], uid: 'another' }] } }
      : object,
  )
  t.strictSame(pods(foreign), ['Pod web.pool-1'], "a Secret that is not the definition's own is none")
  const emptied = world.map((object) =>
    object.kind === 'Secret' && object.metadata.name === 'web.pool-1-flag' ? { ...object, data: {} } : object,
  )
  t.strictSame(pods(emptied), ['Pod web.pool-0'], 'a Secret without the flag')
  const remade = world.map((object) =>
    object.kind === 'Secret' && object.metadata.name === 'web.pool-1-flag'
      ? { ...object, metadata: { ...object.metadata, uid: 'made-again' }, data: { flag: flagOf('made-again') } }
      : object,
  )
  const answer = poolSync(request(definition(), remade), config, NOW)
  t.strictSame(
    names(answer),
    [
      'NetworkPolicy web.pool-isolate',
      'Secret web.pool-0-flag',
      'Pod web.pool-0',
      'Secret web.pool-2-flag',
      'Secret web.pool-1-flag',
    ],
    'a pod whose Secret is not the one its flag was made from is replaced; the Secret stays while the pod is observed',
  )
})

t.test('egress Internet adds the internet policy, which the pods wait for; egress None allows no DNS', async (t) => {
  const internet = poolSync(request(definition({ network: { egress: 'Internet' } }), []), config, NOW)
  t.strictSame(names(internet).slice(0, 2), ['NetworkPolicy web.pool-isolate', 'NetworkPolicy web.pool-internet'])
  const policy = internet.children[1] as Json
  t.strictSame(policy.spec.podSelector, ISOLATE.spec.podSelector)
  t.strictSame(policy.spec.policyTypes, ['Egress'])
  t.equal(policy.spec.egress[0].to[0].ipBlock.cidr, '0.0.0.0/0')
  t.ok(policy.spec.egress[0].to[0].ipBlock.except.includes('169.254.0.0/16'), 'never cloud metadata')
  const { world } = warmPool({ network: { egress: 'Internet' } })
  const withoutInternet = world.filter((object) => object.metadata.name !== 'web.pool-internet')
  t.strictSame(
    names(poolSync(request(definition({ network: { egress: 'Internet' } }), withoutInternet), config, NOW)).filter(
      (name) => name.startsWith('Pod'),
    ),
    [],
  )
  const none = poolSync(request(definition({ network: { egress: 'None' } }), []), config, NOW)
  t.strictSame(none.children[0], {
    ...ISOLATE,
    spec: { podSelector: ISOLATE.spec.podSelector, policyTypes: ['Ingress', 'Egress'] },
  })
})

t.test('egress Internet: once both policies are observed as its own, the pool answers its pods', async (t) => {
  const { last } = warmPool({ network: { egress: 'Internet' } })
  t.strictSame(names(last), [
    'NetworkPolicy web.pool-isolate',
    'NetworkPolicy web.pool-internet',
    'Secret web.pool-0-flag',
    'Pod web.pool-0',
    'Secret web.pool-1-flag',
    'Pod web.pool-1',
  ])
})

t.test('pods that lost their policy are neither answered nor claimed: new ones replace them', async (t) => {
  const { world, parent } = warmPool()
  const unguarded = world.filter((object) => object.metadata.name !== 'web.pool-isolate')
  const answer = poolAnswer(request(parent, unguarded, [ticket('a', 'uid-a', { state: 'Waiting' })]), config, NOW)
  t.strictSame(names(answer.response), [
    'NetworkPolicy web.pool-isolate',
    'Secret web.pool-2-flag',
    'Secret web.pool-3-flag',
    'Secret web.pool-0-flag',
    'Secret web.pool-1-flag',
  ])
  t.strictSame([answer.claims, answer.counts], [0, { free: 0, claimed: 0, starting: 2 }])
})

t.test('a pod that lost both its Secret and its flag-uid annotation is replaced', async (t) => {
  const { world, parent } = warmPool()
  const bare = world
    .filter((object) => object.metadata.name !== 'web.pool-1-flag')
    .map((object) =>
      object.metadata.name === 'web.pool-1' ? { ...object, metadata: { ...object.metadata, annotations: {} } } : object,
    )
  t.strictSame(names(poolSync(request(parent, bare), config, NOW)), [
    'NetworkPolicy web.pool-isolate',
    'Secret web.pool-0-flag',
    'Pod web.pool-0',
    'Secret web.pool-2-flag',
  ])
})

t.test('a pod whose Secret no longer holds its flag is never claimed: the waiter gets the next pod', async (t) => {
  const { world, parent } = warmPool()
  const emptied = world.map((object) =>
    object.kind === 'Secret' && object.metadata.name === 'web.pool-0-flag' ? { ...object, data: {} } : object,
  )
  const answer = poolAnswer(request(parent, emptied, [ticket('a', 'uid-a', { state: 'Waiting' })]), config, NOW)
  t.strictSame(names(answer.response), [
    'NetworkPolicy web.pool-isolate',
    'Secret web.pool-1-flag',
    'Pod web.pool-1',
    'Secret web.pool-2-flag',
    'Secret web.pool-3-flag',
    'Secret web.pool-0-flag',
  ])
  t.equal(podOf(answer.response, 'web.pool-1').metadata.labels['challenge-hooks.dev/claimed-by'], 'uid-a')
  t.strictSame(answer.counts, { free: 0, claimed: 1, starting: 2 })
})

t.test('Exhausted waits for the latest claim to reach its Secret, though an earlier claim already has', async (t) => {
  const spec = { pool: { size: 2, maxPods: 2 } }
  const previous = {
    pool: { state: 'Ready', size: 2, free: 2, claimed: 0, starting: 0, since: '2026-11-22T11:00:00Z' },
  }
  const parent = definition(spec, {}, previous)
  const { world } = warmPool(spec)
  const first = [ticket('a', 'uid-a', { state: 'Waiting' })]
  const claimingA = poolSync(request(parent, world, first), config, NOW)
  const secretA = poolSync(request(parent, apply(claimingA, readyPods), first), config, NOW)
  const aHolds = apply(secretA, readyPods)
  const both = [
    ticket('a', 'uid-a', { state: 'Claimed', pod: 'web.pool-0' }),
    ticket('b', 'uid-b', { state: 'Waiting' }),
  ]
  const claimingB = poolSync(request(parent, aHolds, both), config, NOW)
  t.equal(podOf(claimingB, 'web.pool-1').metadata.labels['challenge-hooks.dev/claimed-by'], 'uid-b')
  t.strictSame(claimingB.status, previous, "b's claim answered, a's on its Secret: still Ready")
  const podB = poolSync(request(parent, apply(claimingB, readyPods), both), config, NOW)
  t.strictSame(podB.status, previous, "b's claim observed on its pod, not yet on its Secret: still Ready")
  t.strictSame(poolSync(request(parent, apply(podB, readyPods), both), config, NOW).status, {
    pool: { state: 'Exhausted', size: 2, free: 0, claimed: 2, starting: 0, since: TEST_INSTANT },
  })
})

t.test('claims: the earliest waiter gets the lowest ready free pod, and the pool refills', async (t) => {
  const { world, parent } = warmPool()
  const waiters = [
    ticket('late', 'uid-late', { state: 'Waiting' }, { admittedAt: '2026-11-22T11:59:30Z' }),
    ticket('early', 'uid-early', { state: 'Waiting' }),
    ticket('cold', 'uid-cold', { state: 'Cold' }),
    ticket(
      'other',
      'uid-other',
      { state: 'Waiting' },
      { metadata: { labels: { 'challenge-hooks.dev/pool-ticket': 'api' } } },
    ),
    ticket('odd', 'not a label value', { state: 'Waiting' }),
    ticket('no-owner', 'uid-no-owner', { state: 'Waiting' }, { metadata: { ownerReferences: [] } }),
  ]
  const answer = poolAnswer(request(parent, world, waiters), config, NOW)
  t.strictSame(answer.claims, 2)
  t.strictSame(answer.counts, { free: 0, claimed: 2, starting: 2 })
  t.equal(podOf(answer.response, 'web.pool-0').metadata.labels['challenge-hooks.dev/claimed-by'], 'uid-early')
  t.equal(podOf(answer.response, 'web.pool-1').metadata.labels['challenge-hooks.dev/claimed-by'], 'uid-late')
  t.strictSame(
    names(answer.response).slice(5),
    ['Secret web.pool-2-flag', 'Secret web.pool-3-flag'],
    'two new pods begin with their Secrets',
  )
  t.strictSame(answer.response.status, { pool: (parent.status as Json).pool }, 'still Ready: the status is not written')

  // A claimed pod keeps its claim while its Challenge waits or records it, whoever else waits.
  const claimed = apply(answer.response, readyPods)
  const later = [
    ticket('early', 'uid-early', { state: 'Claimed', pod: 'web.pool-0' }),
    ticket('late', 'uid-late', { state: 'Waiting' }),
    ticket('new', 'uid-new', { state: 'Waiting' }, { admittedAt: '2026-11-22T11:00:00Z' }),
  ]
  const next = poolAnswer(request(parent, claimed, later), config, NOW)
  t.equal(podOf(next.response, 'web.pool-0').metadata.labels['challenge-hooks.dev/claimed-by'], 'uid-early')
  t.equal(podOf(next.response, 'web.pool-1').metadata.labels['challenge-hooks.dev/claimed-by'], 'uid-late')
  t.equal(next.claims, 0, 'the new waiter has no ready free pod yet')

  // The Secret tells a Challenge its claim: only once the pod's own claim is observed, never with the claim answered.
  const secretClaim = (response: SyncResponse, name: string) =>
    response.children.find((child) => child.metadata.name === name)?.metadata.labels?.['challenge-hooks.dev/claimed-by']
  t.strictSame(
    [secretClaim(answer.response, 'web.pool-0-flag'), secretClaim(answer.response, 'web.pool-1-flag')],
    [undefined, undefined],
    'not with the claim answered: the API server may refuse that write',
  )
  t.strictSame(
    [secretClaim(next.response, 'web.pool-0-flag'), secretClaim(next.response, 'web.pool-1-flag')],
    ['uid-early', 'uid-late'],
    'once the claims are observed on the pods',
  )

  // A Challenge that records another pod gives its claim up: the pod is deleted, its Secret kept while it is observed.
  const gaveUp = poolAnswer(
    request(parent, claimed, [ticket('early', 'uid-early', { state: 'Cold' }), later[1] as KubeObject]),
    config,
    NOW,
  )
  t.notOk(podOf(gaveUp.response, 'web.pool-0'), 'the pod of a Challenge gone cold is given up')
  t.ok(names(gaveUp.response).includes('Secret web.pool-0-flag'), 'its Secret stays while the pod is observed')
})

t.test(
  'a view made from an earlier release’s customize answer holds Challenges: they are read as before',
  async (t) => {
    // Metacontroller keeps a customize answer up to 20 minutes: after an upgrade, a pool's view may still hold its
    // definition's Challenges and no ticket. Read as nothing, they would give up every claimed pod.
    const { world, parent } = warmPool()
    const claimed = claimedIn(world, 'web.pool-0')
    const related = [
      challenge('holder', 'uid-a', { state: 'Claimed', pod: 'web.pool-0' }),
      challenge(
        'late',
        'uid-late',
        { state: 'Waiting' },
        { status: { admittedAt: '2026-11-22T11:59:30Z', pool: { state: 'Waiting' } } },
      ),
      challenge('early', 'uid-early', { state: 'Waiting' }),
      // Another definition's Challenge, or one whose uid no label may hold, is served by none of this pool's pods,
      // however early it waits.
      challenge(
        'other',
        'uid-other',
        { state: 'Waiting' },
        {
          spec: { definitionRef: { name: 'elsewhere' } },
          status: { admittedAt: '2026-11-22T10:00:00Z', pool: { state: 'Waiting' } },
        },
      ),
      challenge(
        'odd',
        'not a label value',
        { state: 'Waiting' },
        { status: { admittedAt: '2026-11-22T10:00:00Z', pool: { state: 'Waiting' } } },
      ),
      // A ticket in the same view is not read: the view is the earlier release's.
      ticket('ticket', 'uid-ticket', { state: 'Waiting' }, { admittedAt: '2026-11-22T10:00:00Z' }),
    ]
    const answer = poolAnswer(request(parent, claimed, related), config, NOW)
    t.equal(podOf(answer.response, 'web.pool-0').metadata.labels['challenge-hooks.dev/claimed-by'], 'uid-a')
    t.equal(podOf(answer.response, 'web.pool-1').metadata.labels['challenge-hooks.dev/claimed-by'], 'uid-early')
    t.strictSame(answer.claims, 1, 'one ready free pod: the earliest of the Challenges of this definition takes it')
  },
)

t.test('a pod that ended is replaced, claimed or not; a claimed one that keeps crashing is given up', async (t) => {
  const { world, parent } = warmPool()
  const ended = world.map((object) => (object.kind === 'Pod' ? { ...object, status: { phase: 'Failed' } } : object))
  const holder = [ticket('a', 'uid-a', { state: 'Claimed', pod: 'web.pool-1' })]
  const answer = poolSync(request(parent, claimedIn(ended, 'web.pool-1'), holder), config, NOW)
  // No pod of the ended ones is answered; their Secrets stay while they are observed, the claimed one's with its
  // claim (its player's run goes on cold once it is gone), and two new pods' Secrets refill the pool.
  t.strictSame(names(answer), [
    'NetworkPolicy web.pool-isolate',
    'Secret web.pool-2-flag',
    'Secret web.pool-3-flag',
    'Secret web.pool-0-flag',
    'Secret web.pool-1-flag',
  ])
  const kept = answer.children.find((child) => child.metadata.name === 'web.pool-1-flag') as KubeObject
  t.equal(kept.metadata.labels?.['challenge-hooks.dev/claimed-by'], 'uid-a')

  const crashing = (objects: KubeObject[]) =>
    objects.map((object) =>
      object.kind === 'Pod'
        ? {
            ...object,
            status: {
              phase: 'Running',
              containerStatuses: [{ name: 'web', restartCount: 5, state: { waiting: { reason: 'CrashLoopBackOff' } } }],
            },
          }
        : object,
    )
  const crashed = poolSync(request(parent, claimedIn(crashing(world), 'web.pool-1'), holder), config, NOW)
  t.strictSame(
    names(crashed).filter((name) => name.startsWith('Pod')),
    ['Pod web.pool-0'],
    'the free crashing pod stays (never ready, never claimed), the claimed one is given up',
  )
})

t.test(
  "a new pod never takes the name of a claimed pod's Secret still observed: its player saw that flag",
  async (t) => {
    const { world, parent } = warmPool()
    const podGone = world.filter((object) => object.metadata.name !== 'web.pool-0')
    const claimedSecret = claimedIn(podGone, 'web.pool-0-flag')
    t.strictSame(names(poolSync(request(parent, claimedSecret), config, NOW)), [
      'NetworkPolicy web.pool-isolate',
      'Secret web.pool-1-flag',
      'Pod web.pool-1',
      'Secret web.pool-2-flag',
    ])
    t.strictSame(
      names(poolSync(request(parent, podGone), config, NOW)),
      [
        'NetworkPolicy web.pool-isolate',
        'Secret web.pool-1-flag',
        'Pod web.pool-1',
        'Secret web.pool-0-flag',
        'Pod web.pool-0',
      ],
      'the Secret of a pod never claimed holds a flag nobody reached: a pod of that name is made on it',
    )
  },
)

t.test('a changed definition drains its free pods and makes new ones; a claimed pod stays as it was', async (t) => {
  const { world, parent } = warmPool()
  const claimed = claimedIn(world, 'web.pool-1')
  // Metacontroller's record of the claimed pod as last applied (without the claim, which it then wrote).
  const lastApplied = { ...podOf(poolSync(request(parent, world), config, NOW), 'web.pool-1') }
  const observed = claimed.map((object) =>
    object.metadata.name === 'web.pool-1'
      ? {
          ...object,
          metadata: {
            ...object.metadata,
            annotations: {
              ...object.metadata.annotations,
              'metacontroller.k8s.io/last-applied-configuration': JSON.stringify(lastApplied),
            },
          },
        }
      : object,
  )
  const changed = definition(
    { pod: { containers: [{ name: 'app', image: 'registry.example.org/web:2' }] } },
    {},
    parent.status,
  )
  const answer = poolSync(
    request(changed, observed, [ticket('a', 'uid-a', { state: 'Claimed', pod: 'web.pool-1' })]),
    config,
    NOW,
  )
  t.strictSame(names(answer), [
    'NetworkPolicy web.pool-isolate',
    'Secret web.pool-1-flag',
    'Pod web.pool-1',
    'Secret web.pool-2-flag',
    'Secret web.pool-3-flag',
    'Secret web.pool-0-flag',
  ])
  const kept = podOf(answer, 'web.pool-1')
  t.strictSame(
    kept,
    {
      ...lastApplied,
      metadata: {
        ...lastApplied.metadata,
        labels: { ...lastApplied.metadata.labels, 'challenge-hooks.dev/claimed-by': 'uid-a' },
      },
    },
    'the claimed pod as last applied, with its claim',
  )
  t.equal(kept.spec.containers[0].image, 'registry.example.org/web:1', 'its spec unchanged')

  const secondStep = poolSync(request(changed, apply(answer)), config, NOW)
  const renderingOf = (response: SyncResponse) =>
    response.children.find((child) => child.kind === 'Pod' && child.metadata.name !== 'web.pool-1') as Json | undefined
  const thirdStep = poolSync(request(changed, apply(secondStep)), config, NOW)
  const fresh = renderingOf(thirdStep) as Json
  t.not(
    fresh.metadata.labels['challenge-hooks.dev/pool-rendering'],
    kept.metadata.labels['challenge-hooks.dev/pool-rendering'],
    'a new rendering',
  )
  t.equal(fresh.spec.containers[0].image, 'registry.example.org/web:2')
})

t.test('a changed flag prefix keeps a claimed pod with the flag it started with', async (t) => {
  const { world, parent } = warmPool()
  const claimed = claimedIn(world, 'web.pool-1')
  const answer = poolSync(
    request(definition({ flag: { mode: 'PerInstance', prefix: 'ctf{' } }, {}, parent.status), claimed, [
      ticket('a', 'uid-a', { state: 'Claimed', pod: 'web.pool-1' }),
    ]),
    config,
    NOW,
  )
  t.strictSame(names(answer), [
    'NetworkPolicy web.pool-isolate',
    'Secret web.pool-1-flag',
    'Pod web.pool-1',
    'Secret web.pool-2-flag',
    'Secret web.pool-3-flag',
    'Secret web.pool-0-flag',
  ])
  const kept = answer.children.find((child) => child.metadata.name === 'web.pool-1-flag') as KubeObject
  t.strictSame(kept.data, { flag: flagOf('uid-web.pool-1-flag') }, 'its Secret holds the flag of the old prefix')
  t.equal(podOf(answer, 'web.pool-1').metadata.labels['challenge-hooks.dev/claimed-by'], 'uid-a')
})

t.test('the flag is part of the rendering: a changed prefix drains the free pods', async (t) => {
  const { world, parent } = warmPool()
  const answer = poolSync(
    request(definition({ flag: { mode: 'PerInstance', prefix: 'ctf{' } }, {}, parent.status), world),
    config,
    NOW,
  )
  t.strictSame(names(answer), [
    'NetworkPolicy web.pool-isolate',
    'Secret web.pool-2-flag',
    'Secret web.pool-3-flag',
    'Secret web.pool-0-flag',
    'Secret web.pool-1-flag',
  ])
})

t.test('closing: from availableUntil no free pod; before it, a sync at availableUntil', async (t) => {
  const until = '2026-11-22T12:10:00Z'
  const { world, parent } = warmPool({ availableUntil: until })
  t.strictSame(poolSync(request(parent, world), config, NOW).resyncAfterSeconds, 300, 'capped at MAX_RESYNC_SECONDS')
  t.strictSame(poolSync(request(parent, world), config, new Date(Date.parse(until) - 12_000)).resyncAfterSeconds, 12)
  const claimed = claimedIn(world, 'web.pool-0')
  const closed = poolSync(
    request(parent, claimed, [ticket('a', 'uid-a', { state: 'Claimed', pod: 'web.pool-0' })]),
    config,
    new Date(Date.parse(until)),
  )
  t.strictSame(names(closed), [
    'NetworkPolicy web.pool-isolate',
    'Secret web.pool-0-flag',
    'Pod web.pool-0',
    'Secret web.pool-1-flag',
  ])
  t.strictSame(closed.status, {
    pool: { state: 'Closed', size: 2, free: 0, claimed: 1, starting: 0, since: until },
  })
  t.equal(closed.resyncAfterSeconds, undefined)
  const deleted = poolSync(
    request(definition({}, { deletionTimestamp: TEST_INSTANT }, parent.status), world),
    config,
    NOW,
  )
  t.equal((deleted.status.pool as Json).state, 'Closed', 'a definition being deleted keeps no free pod')
  t.strictSame(
    names(deleted).filter((name) => name.startsWith('Pod')),
    [],
  )
})

t.test('the status is written only when the state changes, with the counts of that moment', async (t) => {
  const previous = {
    pool: { state: 'Ready', size: 2, free: 2, claimed: 0, starting: 0, since: '2026-11-22T11:00:00Z' },
  }
  const { world } = warmPool({ pool: { size: 2, maxPods: 2 } })
  const parent = definition({ pool: { size: 2, maxPods: 2 } }, {}, previous)
  t.strictSame(poolSync(request(parent, world), config, NOW).status, previous)
  const claimAll = [ticket('a', 'uid-a', { state: 'Waiting' }), ticket('b', 'uid-b', { state: 'Waiting' })]
  // Exhausted sends the waiting Challenges cold: only once both claims are on their pods' Secrets, which is how the
  // two claimants learn theirs (first the pods' claims are answered, then observed and put on the Secrets).
  const claiming = poolSync(request(parent, world, claimAll), config, NOW)
  t.strictSame(claiming.status, previous, 'claims answered: still Ready')
  const podsClaimed = poolSync(request(parent, apply(claiming, readyPods), claimAll), config, NOW)
  t.strictSame(podsClaimed.status, previous, 'the claims observed on the pods, not yet on the Secrets: still Ready')
  const exhausted = poolSync(request(parent, apply(podsClaimed, readyPods), claimAll), config, NOW)
  t.strictSame(exhausted.status, {
    pool: { state: 'Exhausted', size: 2, free: 0, claimed: 2, starting: 0, since: TEST_INSTANT },
  })
  t.strictSame(
    poolSync(request(definition({ pool: { size: 2, maxPods: 2 } }, {}, { pool: 'broken' }), world), config, NOW).status,
    { pool: { state: 'Ready', size: 2, free: 2, claimed: 0, starting: 0, since: TEST_INSTANT } },
    'an unreadable status is written anew',
  )
})

t.test('Off: no pool, an invalid definition or a missing Static flag; pods drained, their guards kept', async (t) => {
  const { world, parent } = warmPool()
  const noPool = poolAnswer(request(definition({ pool: { size: 0 } }, {}, parent.status), []), config, NOW)
  t.strictSame(noPool.response, {
    status: { pool: { state: 'Off', size: 0, free: 0, claimed: 0, starting: 0, since: TEST_INSTANT } },
    children: [],
  })
  t.strictSame([noPool.state, noPool.counts, noPool.claims], ['Off', { free: 0, claimed: 0, starting: 0 }, 0])

  const invalid = definition({ flag: { mode: 'PerOwner' } }, {}, parent.status)
  const answer = poolSync(request(invalid, world), config, NOW)
  t.strictSame(answer.status, {
    pool: {
      state: 'Off',
      message:
        'ChallengeDefinition "web" is invalid: spec.pool: a pool needs flag.mode PerInstance or Static (a PerOwner flag is made from the player, whom a pooled pod does not know when it starts).',
      size: 0,
      free: 0,
      claimed: 0,
      starting: 0,
      since: TEST_INSTANT,
    },
  })
  t.strictSame(
    names(answer),
    ['NetworkPolicy web.pool-isolate', 'Secret web.pool-0-flag', 'Secret web.pool-1-flag'],
    'no pod; the policy and the Secrets kept while the pods are observed',
  )
  t.strictSame(
    answer.children[1],
    {
      ...secret('web.pool-0-flag', flagOf('uid-web.pool-0-flag')),
      metadata: { ...secret('web.pool-0-flag').metadata, namespace: NS },
    },
    'kept as observed',
  )
  const podsGone = world.filter((object) => object.kind !== 'Pod')
  t.strictSame(poolSync(request(invalid, podsGone), config, NOW).children, [], 'all gone once the pods are')
  t.strictSame(
    poolSync(request(definition({ pool: { size: 0 } }, {}, answer.status), world), config, NOW).status,
    { pool: { state: 'Off', size: 0, free: 0, claimed: 0, starting: 0, since: TEST_INSTANT } },
    'another message is another status',
  )
})

t.test('Off: a pod that is not the definition’s own keeps none of its guards', async (t) => {
  const { world, parent } = warmPool()
  const foreignOnly = world
    .filter((object) => object.kind !== 'Pod' || object.metadata.name === 'web.pool-0')
    .map((object) =>
      object.kind === 'Pod' ? { ...object, metadata: { ...object.metadata, ownerReferences: [] } } : object,
    )
  t.strictSame(
    poolSync(request(definition({ pool: { size: 0 } }, {}, parent.status), foreignOnly), config, NOW).children,
    [],
  )
})

t.test('a message longer than the CRD holds is cut to its 1024 characters', async (t) => {
  const classes = Array.from({ length: 40 }, (_, index) => `sandbox-runtime-class-${index}`)
  const long = testConfig({ allowedRuntimeClasses: classes })
  const parent = definition({ security: { runtimeClassName: 'kata' } })
  const pool = (status: unknown) =>
    poolSync(request(definition({ security: { runtimeClassName: 'kata' } }, {}, status), []), long, NOW).status
      .pool as Json
  const first = pool(parent.status)
  t.equal(first.message.length, 1024)
  t.match(
    first.message,
    /^ChallengeDefinition "web" is invalid: spec\.security\.runtimeClassName: the RuntimeClass kata is not one the operator allows \(allowed: sandbox-runtime-class-0, /,
  )
  t.match(first.message, /…$/)
  t.equal(pool({ pool: first }), first, 'the same cut message: the status is not written again')
})

t.test('Static: the flag copied from the definition’s Secret; missing, the pool is Off', async (t) => {
  const spec = { flag: { mode: 'Static', staticSecretRef: { name: 'web-static', key: 'value' } } }
  const staticSecret: KubeObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'web-static', namespace: NS, labels: { 'challenge-hooks.dev/definition': 'web' } },
    data: { value: Buffer.from('flag{same-for-all}').toString('base64') },
  }
  const first = poolSync(request(definition(spec), [], [staticSecret]), config, NOW)
  const data = Buffer.from('flag{same-for-all}').toString('base64')
  t.strictSame(first.children.slice(1), [secret('web.pool-0-flag', data), secret('web.pool-1-flag', data)])
  const second = poolSync(request(definition(spec), apply(first), [staticSecret]), config, NOW)
  t.strictSame(
    names(second).filter((name) => name.startsWith('Pod')),
    ['Pod web.pool-0', 'Pod web.pool-1'],
  )
  t.equal(podOf(second, 'web.pool-0').metadata.annotations['challenge-hooks.dev/flag-uid'], 'uid-web.pool-0-flag')

  const changed = { ...staticSecret, data: { value: Buffer.from('flag{another}').toString('base64') } }
  const third = poolSync(request(definition(spec), apply(second), [changed]), config, NOW)
  t.strictSame(
    names(third),
    [
      'NetworkPolicy web.pool-isolate',
      'Secret web.pool-2-flag',
      'Secret web.pool-3-flag',
      'Secret web.pool-0-flag',
      'Secret web.pool-1-flag',
    ],
    'another Static flag is another rendering: the free pods are drained',
  )

  const missing = poolSync(request(definition(spec), []), config, NOW)
  t.strictSame(missing, {
    status: {
      pool: {
        state: 'Off',
        message:
          'The flag Secret "web-static" (key "value") was not found; it must carry the label challenge-hooks.dev/definition=web.',
        size: 2,
        free: 0,
        claimed: 0,
        starting: 0,
        since: TEST_INSTANT,
      },
    },
    children: [],
  })
})

t.test('customize: nothing without a pool; the Challenges of the definition; a Static flag’s Secrets', async (t) => {
  const customize = (spec: Json) => poolCustomize({ parent: definition({ prepull: 'Off', ...spec }) })
  t.strictSame(customize({ pool: { size: 0 } }), { relatedResources: [] })
  t.strictSame(customize({ pool: undefined }), { relatedResources: [] })
  t.strictSame(customize({ pool: { size: '2' } }), { relatedResources: [] }, 'a size that is not a number is no pool')
  // The tickets on the Services of the runs the pool serves, not the definition's Challenges.
  const tickets = {
    apiVersion: 'v1',
    resource: 'services',
    namespace: NS,
    labelSelector: { matchLabels: { 'challenge-hooks.dev/pool-ticket': 'web' } },
  }
  t.strictSame(customize({}), { relatedResources: [tickets] })
  t.strictSame(customize({ flag: { mode: 'Static', staticSecretRef: { name: 's', key: 'k' } } }), {
    relatedResources: [
      tickets,
      {
        apiVersion: 'v1',
        resource: 'secrets',
        namespace: NS,
        labelSelector: {
          matchLabels: { 'challenge-hooks.dev/definition': 'web' },
          matchExpressions: [{ key: 'app.kubernetes.io/managed-by', operator: 'NotIn', values: ['challenge-hooks'] }],
        },
      },
    ],
  })
})

t.test('a claimed pod sent under its group with another kind: no new pod takes its name and its claim', async (t) => {
  // Metacontroller applies an answered child to the observed one of its group and name, whatever kind that says.
  const { world, parent } = warmPool()
  const claimed = claimedIn(world, 'web.pool-1')
  const body = request(
    parent,
    claimed.filter((object) => !(object.kind === 'Pod' && object.metadata.name === 'web.pool-1')),
    [ticket('a', 'uid-a', { state: 'Claimed', pod: 'web.pool-1' })],
  )
  const pod = claimed.find((object) => object.kind === 'Pod' && object.metadata.name === 'web.pool-1') as KubeObject
  ;(body.children as Json)['Pod.v1']['web.pool-1'] = { ...pod, kind: 'Bogus' }
  ;(body.children as Json)['.v1'] = { 'web.pool-2': { metadata: { name: 'web.pool-2', namespace: NS } } }
  const answer = poolSync(body, config, NOW)
  // web.pool-1 is answered neither free nor anew; the pool counts one free pod and refills under a new name, not
  // web.pool-2 either: a child sent without any kind holds that name, and it is no pod of the pool's.
  t.strictSame(names(answer), [
    'NetworkPolicy web.pool-isolate',
    'Secret web.pool-0-flag',
    'Pod web.pool-0',
    'Secret web.pool-3-flag',
  ])
})

t.test(
  'a pod that is not the definition’s own: its name stays taken, and its labels tell no Secret a claim',
  async (t) => {
    const { world, parent } = warmPool()
    const foreign = world.map((object) =>
      object.kind === 'Pod' && object.metadata.name === 'web.pool-1'
        ? {
            ...object,
            metadata: {
              ...object.metadata,
              ownerReferences: [],
              labels: { ...object.metadata.labels, 'challenge-hooks.dev/claimed-by': 'uid-a' },
            },
          }
        : object,
    )
    const answer = poolSync(request(parent, foreign, [ticket('a', 'uid-a', { state: 'Waiting' })]), config, NOW)
    // web.pool-0 is claimed for the waiter; web.pool-1's name stays with the foreign pod, its Secret goes (no pod
    // of the pool mounts it), and the pool refills under new names.
    t.strictSame(names(answer), [
      'NetworkPolicy web.pool-isolate',
      'Secret web.pool-0-flag',
      'Pod web.pool-0',
      'Secret web.pool-2-flag',
      'Secret web.pool-3-flag',
    ])
    const secret = answer.children.find((child) => child.metadata.name === 'web.pool-0-flag')
    t.equal(secret?.metadata.labels?.['challenge-hooks.dev/pool-slot'], '0')
    t.equal(
      secret?.metadata.labels?.['challenge-hooks.dev/claimed-by'],
      undefined,
      'a claim answered now is on no Secret yet',
    )
  },
)
